/*
 * The zoo's builder and layer vocabulary: each call appends one
 * memplan-net/1 layer to the net being generated, with its shape, its
 * parameters and its times, and returns its output for the next call.
 *
 * Times are estimates, never measurements: a roofline per layer for the
 * chosen device, max(FLOPs / peak of the dtype, bytes moved / memory
 * bandwidth), backward twice the forward FLOPs and bytes, the optimizer
 * update memory-bound on parameters and state.  Conv layers get algorithm
 * alternatives estimated the same way: implicit_gemm (no workspace),
 * winograd (3x3 stride 1, nonfused: transformed tiles in workspace, 2.25x
 * fewer FLOPs) and fft (stride 1, complex float32 transforms in workspace).
 * O(1) per layer, O(inputs) for a join.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "build.h"

/* A parameter shape. */
struct pshape {
	unsigned nd;
	uint64_t d[4];
};

void zb_fail(struct zb *b, const char *fmt, ...)
{
	va_list ap;

	if (b->failed)
		return;
	b->failed = true;
	va_start(ap, fmt);
	vsnprintf(b->err->msg, sizeof(b->err->msg), fmt, ap);
	va_end(ap);
}


/* Append ".part" (just "part" at the top) to the name prefix; returns the
 * length to give zb_pop. */
size_t zb_push(struct zb *b, const char *fmt, ...)
{
	size_t old = b->prefix_len, room = sizeof(b->prefix) - old;
	va_list ap;
	int n = 0;

	if (old) {
		if (room < 2) {
			zb_fail(b, "layer name prefix '%s' is too long", b->prefix);
			return old;
		}
		b->prefix[old] = '.';
		room--;
	}
	va_start(ap, fmt);
	n = vsnprintf(b->prefix + old + (old ? 1 : 0), room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= room) {
		b->prefix[old] = 0;
		zb_fail(b, "layer name prefix '%s' is too long", b->prefix);
		return old;
	}
	b->prefix_len = old + (old ? 1 : 0) + (size_t)n;
	return old;
}

void zb_pop(struct zb *b, size_t len)
{
	b->prefix_len = len;
	b->prefix[len] = 0;
}

void zt_dims(struct zt *t, unsigned nd, uint64_t a, uint64_t c, uint64_t d, uint64_t e)
{
	memset(t, 0, sizeof(*t));
	t->nd = nd;
	t->d[0] = a;
	t->d[1] = c;
	t->d[2] = d;
	t->d[3] = e;
}

/* Elements of t, or UINT64_MAX on overflow. */
uint64_t zt_elems(const struct zt *t)
{
	uint64_t n = 1;

	for (unsigned i = 0; i < t->nd; i++)
		if (mp_mul_u64(n, t->d[i], &n) < 0)
			return UINT64_MAX;
	return n;
}

double zt_bytes(const struct zt *t)
{
	return (double)zt_elems(t) * t->esz;
}

json_t *dims_json(unsigned nd, const uint64_t *d)
{
	json_t *a = json_array();

	for (unsigned i = 0; i < nd; i++)
		json_array_append_new(a, json_integer((json_int_t)d[i]));
	return a;
}

/*
 * Start a layer named prefix.suffix writing out (whose shape the caller set)
 * from inputs in[n_in]; it is appended to the layer list and returned
 * (borrowed) for the caller to add keys.
 */
json_t *emit(struct zb *b, struct zt *out, const char *suffix, const char *type,
		    unsigned n_in, const struct zt *const *in)
{
	json_t *l = json_object();
	uint64_t elems;
	int n;

	if (!out->esz)
		out->esz = b->esz;
	n = b->prefix_len ? snprintf(out->name, sizeof(out->name), "%s.%s", b->prefix, suffix)
			  : snprintf(out->name, sizeof(out->name), "%s", suffix);
	if (n < 0 || (size_t)n >= sizeof(out->name))
		zb_fail(b, "layer name '%s.%s' is too long", b->prefix, suffix);
	for (unsigned i = 0; i < out->nd; i++)
		if (out->d[i] == 0)
			zb_fail(b, "layer '%s' would have an empty output (dimension %u is 0): the input is too small for this model", out->name, i);
	elems = zt_elems(out);
	if (elems == UINT64_MAX || elems > MP_MAX_BYTES / out->esz)
		zb_fail(b, "layer '%s' would be larger than the 1 PiB memplan accepts", out->name);
	json_object_set_new(l, "name", json_string(out->name));
	json_object_set_new(l, "type", json_string(type));
	b->io_bytes = zt_bytes(out);
	b->param_bytes = 0;
	if (n_in) {
		json_t *a = json_array();

		for (unsigned i = 0; i < n_in; i++) {
			json_array_append_new(a, json_string(in[i]->name));
			b->io_bytes += zt_bytes(in[i]);
		}
		json_object_set_new(l, "inputs", a);
	}
	json_object_set_new(l, "shape", dims_json(out->nd, out->d));
	json_array_append_new(b->layers, l);
	return l;
}

static void add_param(struct zb *b, json_t *l, const struct pshape *p)
{
	json_t *ps = json_object_get(l, "params");
	uint64_t elems = 1;

	if (!ps) {
		ps = json_array();
		json_object_set_new(l, "params", ps);
	}
	json_array_append_new(ps, dims_json(p->nd, p->d));
	for (unsigned i = 0; i < p->nd; i++)
		elems *= p->d[i]; /* options are bounded: no overflow */
	b->param_bytes += elems * b->esz;
	b->io_bytes += (double)elems * b->esz;
}

void add_param4(struct zb *b, json_t *l, unsigned nd, uint64_t a, uint64_t c,
		       uint64_t d, uint64_t e)
{
	struct pshape p = { nd, { a, c, d, e } };

	add_param(b, l, &p);
}

/* Roofline milliseconds: the larger of compute and memory time. */
static double roof_ms(const struct zb *b, double flops, double bytes, double tflops)
{
	double c = flops / (tflops * 1e9), m = bytes / (b->mem_gbps * 1e6);

	return c > m ? c : m;
}

/* Set the layer's forward, backward (2x) and update times; returns them. */
void finish(struct zb *b, json_t *l, double flops, double *fwd, double *bwd)
{
	json_t *t = json_object();
	double f = roof_ms(b, flops, b->io_bytes, b->tflops);
	double g = roof_ms(b, 2 * flops, 2 * b->io_bytes, b->tflops);

	json_object_set_new(t, "fwd", json_real(f));
	json_object_set_new(t, "bwd", json_real(g));
	if (b->param_bytes && b->upd_passes) {
		double pb = (double)b->param_bytes * b->upd_passes;

		json_object_set_new(t, "update", json_real(roof_ms(b, pb / b->esz, pb, b->tflops)));
	}
	json_object_set_new(l, "time", t);
	if (fwd)
		*fwd = f;
	if (bwd)
		*bwd = g;
}

/* ---- layers ----------------------------------------------------------- */

struct zt data(struct zb *b, const char *suffix, unsigned nd, uint64_t d0, uint64_t d1,
		      uint64_t d2, uint64_t d3, enum mp_dtype dt)
{
	struct zt o;
	json_t *l;

	zt_dims(&o, nd, d0, d1, d2, d3);
	o.esz = mp_dtype_bytes(dt);
	l = emit(b, &o, suffix, "data", 0, NULL);
	if (dt != b->dt)
		json_object_set_new(l, "dtype", json_string(mp_dtype_name(dt)));
	return o;
}

static uint64_t out_dim(struct zb *b, uint64_t in, unsigned k, unsigned s, unsigned p)
{
	if (in + 2 * (uint64_t)p < k) {
		zb_fail(b, "the image is too small for this model (a %u-wide window meets a %llu-wide input)", k, (unsigned long long)in);
		return 1;
	}
	return (in + 2 * (uint64_t)p - k) / s + 1;
}

static json_t *algo_json(const char *name, uint64_t ws, double fwd, double bwd)
{
	json_t *a = json_object(), *t = json_object();

	json_object_set_new(a, "name", json_string(name));
	json_object_set_new(a, "workspace", json_integer((json_int_t)ws));
	json_object_set_new(t, "fwd", json_real(fwd));
	json_object_set_new(t, "bwd", json_real(bwd));
	json_object_set_new(a, "time", t);
	return a;
}

static uint64_t pow2_at_least(uint64_t x)
{
	uint64_t p = 1;

	while (p < x)
		p <<= 1;
	return p;
}

/* A geometry key of memplan-net(5): one integer when h == w, else [h, w]. */
static void geo_key(json_t *l, const char *key, uint64_t h, uint64_t w)
{
	if (h == w) {
		json_object_set_new(l, key, json_integer((json_int_t)h));
	} else {
		json_t *a = json_array();

		json_array_append_new(a, json_integer((json_int_t)h));
		json_array_append_new(a, json_integer((json_int_t)w));
		json_object_set_new(l, key, a);
	}
}

/* kernel, stride and pad of a conv or pool layer: the geometry the builder
 * used, so that memplan verify runs the real kernel instead of one the
 * shapes only allow (memplan-net(5) "Geometry"). */
static void geo_keys(json_t *l, unsigned kh, unsigned kw, unsigned sh, unsigned sw,
		     unsigned ph, unsigned pw)
{
	geo_key(l, "kernel", kh, kw);
	geo_key(l, "stride", sh, sw);
	geo_key(l, "pad", ph, pw);
}

/* 2-D convolution over x = [N, C, H, W], with algorithm alternatives. */
struct zt conv(struct zb *b, const struct zt *x, const struct convp *p, const char *suffix)
{
	unsigned g = p->groups ? p->groups : 1;
	uint64_t n = x->d[0], cin = x->d[1], h = x->d[2], w = x->d[3];
	uint64_t ho = out_dim(b, h, p->kh, p->sh, p->ph), wo = out_dim(b, w, p->kw, p->sw, p->pw);
	const struct zt *in[1] = { x };
	double flops, io, fwd, bwd;
	struct zt o;
	json_t *l, *algos;

	zt_dims(&o, 4, n, p->cout, ho, wo);
	l = emit(b, &o, suffix, "conv", 1, in);
	geo_keys(l, p->kh, p->kw, p->sh, p->sw, p->ph, p->pw);
	if (g > 1)
		json_object_set_new(l, "groups", json_integer(g));
	add_param4(b, l, 4, p->cout, cin / g, p->kh, p->kw);
	if (p->bias)
		add_param4(b, l, 1, p->cout, 0, 0, 0);
	flops = 2.0 * (double)n * (double)p->cout * (double)ho * (double)wo *
		(double)(cin / g) * p->kh * p->kw;
	io = b->io_bytes;
	finish(b, l, flops, &fwd, &bwd);
	algos = json_array();
	json_array_append_new(algos, algo_json("implicit_gemm", 0, fwd, bwd));
	if (g == 1 && p->kh == 3 && p->kw == 3 && p->sh == 1 && p->sw == 1) {
		/* nonfused Winograd F(4x4, 3x3): 6x6 tiles of input and output
		 * and the transformed filter in workspace, written and read once */
		double tiles = (double)n * (double)((ho + 3) / 4) * (double)((wo + 3) / 4);
		double ws = (tiles * (double)(cin + p->cout) * 36 + (double)(p->cout * cin) * 36) * b->esz;
		double f = roof_ms(b, flops / 2.25, io + 2 * ws, b->tflops);
		double bk = roof_ms(b, 2 * flops / 2.25, 2 * io + 4 * ws, b->tflops);

		if (f < fwd && ws <= (double)MP_MAX_BYTES)
			json_array_append_new(algos, algo_json("winograd", (uint64_t)ws, f, bk));
	}
	if (g == 1 && p->sh == 1 && p->sw == 1 && (p->kh > 1 || p->kw > 1)) {
		/* FFT: input, filter and output planes padded to powers of two,
		 * complex float32 (8 bytes) half spectra in workspace */
		uint64_t fh = pow2_at_least(h + 2 * (uint64_t)p->ph), fw = pow2_at_least(w + 2 * (uint64_t)p->pw);
		double spec = (double)fh * (double)(fw / 2 + 1);
		double planes = (double)(n * cin + p->cout * cin + n * p->cout);
		double ws = planes * spec * 8;
		double ff = planes * 2.5 * (double)fh * (double)fw * log2((double)(fh * fw)) +
			    8.0 * (double)n * (double)p->cout * (double)cin * spec;
		double f = roof_ms(b, ff, io + 2 * ws, b->tflops_f32);
		double bk = roof_ms(b, 2 * ff, 2 * io + 4 * ws, b->tflops_f32);

		if (f < fwd && ws <= (double)MP_MAX_BYTES)
			json_array_append_new(algos, algo_json("fft", (uint64_t)ws, f, bk));
	}
	json_object_set_new(l, "algos", algos);
	return o;
}

struct zt conv2d(struct zb *b, const struct zt *x, unsigned cout, unsigned k,
			unsigned s, unsigned p, bool bias, const char *suffix)
{
	struct convp c = { cout, k, k, s, s, p, p, 1, bias };

	return conv(b, x, &c, suffix);
}

/* Transposed 2x2 stride-2 convolution ("up-convolution", U-Net). */
struct zt upconv(struct zb *b, const struct zt *x, unsigned cout, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o;
	json_t *l;

	zt_dims(&o, 4, x->d[0], cout, 2 * x->d[2], 2 * x->d[3]);
	l = emit(b, &o, suffix, "conv", 1, in);
	json_object_set_new(l, "comment", json_string("transposed convolution 2x2, stride 2"));
	add_param4(b, l, 4, x->d[1], cout, 2, 2);
	add_param4(b, l, 1, cout, 0, 0, 0);
	finish(b, l, 2.0 * (double)zt_elems(x) * cout * 4, NULL, NULL);
	return o;
}

/* Batch norm over channel dim 1: gamma and beta are the parameters (the
 * running statistics are buffers, not trained, and not counted). */
struct zt bn(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "bn", 1, in);

	add_param4(b, l, 1, x->d[1], 0, 0, 0);
	add_param4(b, l, 1, x->d[1], 0, 0, 0);
	finish(b, l, 8.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* Elementwise activation (relu, tanh, gelu, ...), in place if asked. */
struct zt act(struct zb *b, const struct zt *x, const char *type, bool inplace,
		     const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, type, 1, in);

	if (inplace)
		json_object_set_new(l, "inplace", json_true());
	finish(b, l, (strcmp(type, "relu") && strcmp(type, "relu6") ? 8.0 : 1.0) * (double)zt_elems(x), NULL, NULL);
	return o;
}

struct zt relu(struct zb *b, const struct zt *x, const char *suffix)
{
	return act(b, x, "relu", true, suffix);
}

/* Pooling window k, stride s, padding p (floor mode). */
struct zt pool(struct zb *b, const struct zt *x, bool max, unsigned k, unsigned s,
		      unsigned p, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o;
	json_t *l;

	zt_dims(&o, 4, x->d[0], x->d[1], out_dim(b, x->d[2], k, s, p), out_dim(b, x->d[3], k, s, p));
	l = emit(b, &o, suffix, "pool", 1, in);
	json_object_set_new(l, "mode", json_string(max ? "max" : "avg"));
	geo_keys(l, k, k, s, s, p, p);
	finish(b, l, (double)zt_elems(&o) * k * k, NULL, NULL);
	return o;
}

/* Adaptive average pooling to oh x ow (global when 1x1).  Its windows are
 * fixed (kernel = stride = in / out) only when out divides in; otherwise the
 * layer gets no geometry keys and runs timed in memplan verify. */
struct zt apool(struct zb *b, const struct zt *x, uint64_t oh, uint64_t ow, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o;
	json_t *l;

	zt_dims(&o, 4, x->d[0], x->d[1], oh, ow);
	l = emit(b, &o, suffix, "pool", 1, in);
	json_object_set_new(l, "mode", json_string("avg"));
	if (oh && ow && x->d[2] % oh == 0 && x->d[3] % ow == 0 && x->d[2] / oh <= INT32_MAX &&
	    x->d[3] / ow <= INT32_MAX)
		geo_keys(l, (unsigned)(x->d[2] / oh), (unsigned)(x->d[3] / ow),
			 (unsigned)(x->d[2] / oh), (unsigned)(x->d[3] / ow), 0, 0);
	finish(b, l, (double)zt_elems(x), NULL, NULL);
	return o;
}

struct zt flatten(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o;

	zt_dims(&o, 2, x->d[0], zt_elems(x) / x->d[0], 0, 0);
	emit(b, &o, suffix, "reshape", 1, in);
	return o;
}

/*
 * Fully connected: rows x in_f -> rows x nout.  The output shape is shape's,
 * or (shape NULL) x's with the last dimension nout.  weight false: the weight
 * is another layer's (tied, or an unrolled step's shared weight).
 */
struct zt fc_rows(struct zb *b, const struct zt *x, uint64_t rows, uint64_t in_f,
			 uint64_t nout, bool weight, bool bias, const struct zt *shape,
			 const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l;

	if (shape) {
		o = *shape;
		o.esz = 0;
	} else {
		o.d[o.nd - 1] = nout;
	}
	l = emit(b, &o, suffix, "fc", 1, in);
	if (weight)
		add_param4(b, l, 2, nout, in_f, 0, 0);
	if (bias)
		add_param4(b, l, 1, nout, 0, 0, 0);
	if (shape) /* reads rows of x, not all of it */
		b->io_bytes = zt_bytes(&o) + (double)rows * (double)in_f * b->esz + (double)b->param_bytes;
	finish(b, l, 2.0 * (double)rows * (double)in_f * (double)nout, NULL, NULL);
	return o;
}

struct zt fc(struct zb *b, const struct zt *x, uint64_t nout, bool bias, const char *suffix)
{
	uint64_t in_f = x->d[x->nd - 1];

	return fc_rows(b, x, zt_elems(x) / in_f, in_f, nout, true, bias, NULL, suffix);
}

/* The layer added last (borrowed), to add a comment. */
void comment_last(struct zb *b, const char *text)
{
	json_object_set_new(json_array_get(b->layers, json_array_size(b->layers) - 1), "comment",
			    json_string(text));
}

struct zt dropout(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "dropout", 1, in);

	b->io_bytes += (double)zt_elems(x); /* the mask, a byte per element */
	finish(b, l, 2.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* Sum of inputs (broadcast to the first input's shape). */
struct zt add(struct zb *b, unsigned n, const struct zt *const *xs, const char *suffix)
{
	struct zt o = *xs[0];
	json_t *l = emit(b, &o, suffix, "add", n, xs);

	finish(b, l, (double)(n - 1) * (double)zt_elems(&o), NULL, NULL);
	return o;
}

struct zt add2(struct zb *b, const struct zt *x, const struct zt *y, const char *suffix)
{
	const struct zt *xs[2] = { x, y };

	return add(b, 2, xs, suffix);
}

/* Concatenation with the output shape given (shape NULL: along axis). */
struct zt concat(struct zb *b, unsigned n, const struct zt *const *xs, unsigned axis,
			const struct zt *shape, const char *suffix)
{
	struct zt o = *xs[0];
	json_t *l;

	if (shape) {
		o = *shape;
	} else {
		for (unsigned i = 1; i < n; i++)
			o.d[axis] += xs[i]->d[axis];
	}
	l = emit(b, &o, suffix, "concat", n, xs);
	b->io_bytes = 2 * zt_bytes(&o);
	finish(b, l, 0, NULL, NULL);
	return o;
}

struct zt layernorm(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "layernorm", 1, in);

	add_param4(b, l, 1, x->d[x->nd - 1], 0, 0, 0);
	add_param4(b, l, 1, x->d[x->nd - 1], 0, 0, 0);
	finish(b, l, 8.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* Token ids [...] -> [..., dim] rows of a vocab x dim table. */
struct zt embedding(struct zb *b, const struct zt *ids, uint64_t vocab, uint64_t dim,
			   const char *suffix)
{
	const struct zt *in[1] = { ids };
	struct zt o = *ids;
	json_t *l;

	o.esz = 0;
	o.d[o.nd++] = dim;
	l = emit(b, &o, suffix, "embedding", 1, in);
	add_param4(b, l, 2, vocab, dim, 0, 0);
	b->io_bytes = zt_bytes(ids) + 2 * zt_bytes(&o); /* rows read, not the table */
	finish(b, l, 0, NULL, NULL);
	return o;
}

/*
 * Multi-head attention core on packed q, k, v [B, T, 3C] -> [B, T, C], as a
 * fused (flash) kernel: no T x T matrix is kept, backward reads q, k, v, the
 * output and the row statistics.  Causal masking halves the FLOPs.
 */
struct zt attention(struct zb *b, const struct zt *qkv, bool causal, const char *suffix)
{
	const struct zt *in[1] = { qkv };
	struct zt o = *qkv;
	double bt = (double)qkv->d[0] * (double)qkv->d[1];
	json_t *l;

	o.d[2] = qkv->d[2] / 3;
	l = emit(b, &o, suffix, "attention", 1, in);
	finish(b, l, (causal ? 2.0 : 4.0) * bt * (double)qkv->d[1] * (double)o.d[2], NULL, NULL);
	return o;
}

struct zt attention_gqa(struct zb *b, const struct zt *q, const struct zt *k, const struct zt *v,
			unsigned heads, bool eager, const char *suffix)
{
	const struct zt *in[3] = { q, k, v };
	struct zt o = *q;
	double bt = (double)q->d[0] * (double)q->d[1];
	json_t *l;

	l = emit(b, &o, suffix, "attention", 3, in);
	json_object_set_new(l, "heads", json_integer(heads));
	if (eager) {
		json_object_set_new(l, "impl", json_string("eager"));
		/* the probabilities are written and read again, and float32 scores */
		b->io_bytes += bt * heads * (double)q->d[1] * (2.0 * b->esz + 8.0);
	}
	/* causal: half the S x S products */
	finish(b, l, 2.0 * bt * (double)q->d[1] * (double)q->d[2], NULL, NULL);
	return o;
}

struct zt rmsnorm(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "rmsnorm", 1, in);

	add_param4(b, l, 1, x->d[x->nd - 1], 0, 0, 0);
	finish(b, l, 4.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

struct zt rope(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "rope", 1, in);

	finish(b, l, 3.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

struct zt mul2(struct zb *b, const struct zt *x, const struct zt *y, const char *suffix)
{
	const struct zt *xs[2] = { x, y };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "mul", 2, xs);

	finish(b, l, (double)zt_elems(&o), NULL, NULL);
	return o;
}

struct zt cast(struct zb *b, const struct zt *x, enum mp_dtype dt, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l;

	o.esz = mp_dtype_bytes(dt);
	l = emit(b, &o, suffix, "custom", 1, in);
	json_object_set_new(l, "dtype", json_string(mp_dtype_name(dt)));
	json_object_set_new(l, "saves", json_array());
	finish(b, l, 0, NULL, NULL);
	return o;
}

void dtype_last(struct zb *b, struct zt *o, enum mp_dtype dt)
{
	json_t *l = json_array_get(b->layers, json_array_size(b->layers) - 1);

	json_object_set_new(l, "dtype", json_string(mp_dtype_name(dt)));
	o->esz = mp_dtype_bytes(dt);
}

void freeze_last(struct zb *b)
{
	json_t *l = json_array_get(b->layers, json_array_size(b->layers) - 1);

	json_object_set_new(l, "frozen", json_true());
	json_object_del(json_object_get(l, "time"), "update");
}

void quantize_last(struct zb *b, enum mp_quant q, uint64_t n)
{
	json_t *l = json_array_get(b->layers, json_array_size(b->layers) - 1), *t = json_object_get(l, "time");
	/* a memory-bound kernel: reads the codes and constants, writes n elements */
	double ms = roof_ms(b, 0, (double)mp_quant_bytes(n, q) + (double)n * b->esz, b->tflops);

	json_object_set_new(l, "quant", json_string(mp_quant_name(q)));
	json_object_set_new(t, "fwd", json_real(json_real_value(json_object_get(t, "fwd")) + ms));
	json_object_set_new(t, "bwd", json_real(json_real_value(json_object_get(t, "bwd")) + ms));
}

struct zt softmax(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "softmax", 1, in);

	finish(b, l, 5.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* Softmax cross-entropy over x: a scalar. */
struct zt loss(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o;
	json_t *l;

	zt_dims(&o, 1, 1, 0, 0, 0);
	l = emit(b, &o, suffix, "loss", 1, in);
	finish(b, l, 5.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}
