/*
 * Model zoo (memplan-gen(1)): builders of memplan-net/1 layer lists for
 * published networks: AlexNet, VGG-16/19, ResNet (torchvision's 18..152 and
 * the deep family of SuperNeurons Table 4), Inception-v4, DenseNet-121,
 * MobileNet-V2, U-Net, a GPT-2 decoder, a BERT encoder and an LSTM seq2seq
 * with additive attention (tf-swap-out-in 3.2).  Layer structure, shapes and
 * parameter shapes follow the reference implementations named at each
 * builder; ReLU is in place where they do it in place.
 *
 * Times are estimates, never measurements: a roofline per layer for the
 * chosen device, max(FLOPs / peak of the dtype, bytes moved / memory
 * bandwidth), backward twice the forward FLOPs and bytes, the optimizer
 * update memory-bound on parameters and state.  Conv layers get algorithm
 * alternatives estimated the same way: implicit_gemm (no workspace),
 * winograd (3x3 stride 1, nonfused: transformed tiles in workspace, 2.25x
 * fewer FLOPs) and fft (stride 1, complex float32 transforms in workspace).
 * O(layers) per model.
 */
#include "zoo.h"

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "../net/net.h"

#define NAME_MAX_LEN 96

/* A layer's output as the builder tracks it. */
struct zt {
	char name[NAME_MAX_LEN];
	unsigned nd;
	uint64_t d[5];
	unsigned esz;            /* bytes per element */
};

/* A parameter shape. */
struct pshape {
	unsigned nd;
	uint64_t d[4];
};

/* The builder: the layer array, the roofline device, the name prefix. */
struct zb {
	json_t *layers;
	enum mp_dtype dt;
	unsigned esz;
	double tflops;           /* peak of dt, TFLOP/s */
	double tflops_f32;       /* FFT convolutions compute in float32 */
	double mem_gbps;
	unsigned upd_passes;     /* optimizer: bytes moved per parameter byte */
	char prefix[NAME_MAX_LEN];
	size_t prefix_len;
	bool failed;
	struct mp_error *err;
	double io_bytes;         /* the layer being built: bytes moved forward */
	uint64_t param_bytes;
};

static void zb_fail(struct zb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void zb_fail(struct zb *b, const char *fmt, ...)
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
static size_t zb_push(struct zb *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static size_t zb_push(struct zb *b, const char *fmt, ...)
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

static void zb_pop(struct zb *b, size_t len)
{
	b->prefix_len = len;
	b->prefix[len] = 0;
}

static void zt_dims(struct zt *t, unsigned nd, uint64_t a, uint64_t c, uint64_t d, uint64_t e)
{
	memset(t, 0, sizeof(*t));
	t->nd = nd;
	t->d[0] = a;
	t->d[1] = c;
	t->d[2] = d;
	t->d[3] = e;
}

/* Elements of t, or UINT64_MAX on overflow. */
static uint64_t zt_elems(const struct zt *t)
{
	uint64_t n = 1;

	for (unsigned i = 0; i < t->nd; i++)
		if (mp_mul_u64(n, t->d[i], &n) < 0)
			return UINT64_MAX;
	return n;
}

static double zt_bytes(const struct zt *t)
{
	return (double)zt_elems(t) * t->esz;
}

static json_t *dims_json(unsigned nd, const uint64_t *d)
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
static json_t *emit(struct zb *b, struct zt *out, const char *suffix, const char *type,
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

static void add_param4(struct zb *b, json_t *l, unsigned nd, uint64_t a, uint64_t c,
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
static void finish(struct zb *b, json_t *l, double flops, double *fwd, double *bwd)
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

static struct zt data(struct zb *b, const char *suffix, unsigned nd, uint64_t d0, uint64_t d1,
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

struct convp {
	unsigned cout, kh, kw, sh, sw, ph, pw, groups;
	bool bias;
};

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
static struct zt conv(struct zb *b, const struct zt *x, const struct convp *p, const char *suffix)
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

static struct zt conv2d(struct zb *b, const struct zt *x, unsigned cout, unsigned k,
			unsigned s, unsigned p, bool bias, const char *suffix)
{
	struct convp c = { cout, k, k, s, s, p, p, 1, bias };

	return conv(b, x, &c, suffix);
}

/* Transposed 2x2 stride-2 convolution ("up-convolution", U-Net). */
static struct zt upconv(struct zb *b, const struct zt *x, unsigned cout, const char *suffix)
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
static struct zt bn(struct zb *b, const struct zt *x, const char *suffix)
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
static struct zt act(struct zb *b, const struct zt *x, const char *type, bool inplace,
		     const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, type, 1, in);

	if (inplace)
		json_object_set_new(l, "inplace", json_true());
	finish(b, l, (strcmp(type, "relu") ? 8.0 : 1.0) * (double)zt_elems(x), NULL, NULL);
	return o;
}

static struct zt relu(struct zb *b, const struct zt *x, const char *suffix)
{
	return act(b, x, "relu", true, suffix);
}

/* Pooling window k, stride s, padding p (floor mode). */
static struct zt pool(struct zb *b, const struct zt *x, bool max, unsigned k, unsigned s,
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
static struct zt apool(struct zb *b, const struct zt *x, uint64_t oh, uint64_t ow, const char *suffix)
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

static struct zt flatten(struct zb *b, const struct zt *x, const char *suffix)
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
static struct zt fc_rows(struct zb *b, const struct zt *x, uint64_t rows, uint64_t in_f,
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

static struct zt fc(struct zb *b, const struct zt *x, uint64_t nout, bool bias, const char *suffix)
{
	uint64_t in_f = x->d[x->nd - 1];

	return fc_rows(b, x, zt_elems(x) / in_f, in_f, nout, true, bias, NULL, suffix);
}

/* The layer added last (borrowed), to add a comment. */
static void comment_last(struct zb *b, const char *text)
{
	json_object_set_new(json_array_get(b->layers, json_array_size(b->layers) - 1), "comment",
			    json_string(text));
}

static struct zt dropout(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "dropout", 1, in);

	b->io_bytes += (double)zt_elems(x); /* the mask, a byte per element */
	finish(b, l, 2.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* Sum of inputs (broadcast to the first input's shape). */
static struct zt add(struct zb *b, unsigned n, const struct zt *const *xs, const char *suffix)
{
	struct zt o = *xs[0];
	json_t *l = emit(b, &o, suffix, "add", n, xs);

	finish(b, l, (double)(n - 1) * (double)zt_elems(&o), NULL, NULL);
	return o;
}

static struct zt add2(struct zb *b, const struct zt *x, const struct zt *y, const char *suffix)
{
	const struct zt *xs[2] = { x, y };

	return add(b, 2, xs, suffix);
}

/* Concatenation with the output shape given (shape NULL: along axis). */
static struct zt concat(struct zb *b, unsigned n, const struct zt *const *xs, unsigned axis,
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

static struct zt layernorm(struct zb *b, const struct zt *x, const char *suffix)
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
static struct zt embedding(struct zb *b, const struct zt *ids, uint64_t vocab, uint64_t dim,
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
static struct zt attention(struct zb *b, const struct zt *qkv, bool causal, const char *suffix)
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

static struct zt softmax(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o = *x;
	json_t *l = emit(b, &o, suffix, "softmax", 1, in);

	finish(b, l, 5.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* Softmax cross-entropy over x: a scalar. */
static struct zt loss(struct zb *b, const struct zt *x, const char *suffix)
{
	const struct zt *in[1] = { x };
	struct zt o;
	json_t *l;

	zt_dims(&o, 1, 1, 0, 0, 0);
	l = emit(b, &o, suffix, "loss", 1, in);
	finish(b, l, 5.0 * (double)zt_elems(x), NULL, NULL);
	return o;
}

/* ---- ResNet ------------------------------------------------------------- */

int zoo_resnet_stages(uint32_t depth, uint32_t n[4], int *bottleneck,
		      uint32_t *effective, struct mp_error *err)
{
	static const struct { uint32_t depth, n[4]; int bottleneck; } std[] = {
		{ 18, { 2, 2, 2, 2 }, 0 }, { 34, { 3, 4, 6, 3 }, 0 },
		{ 50, { 3, 4, 6, 3 }, 1 }, { 101, { 3, 4, 23, 3 }, 1 },
		{ 152, { 3, 8, 36, 3 }, 1 },
	};

	for (size_t i = 0; i < sizeof(std) / sizeof(std[0]); i++)
		if (std[i].depth == depth) {
			memcpy(n, std[i].n, sizeof(std[i].n));
			*bottleneck = std[i].bottleneck;
			*effective = depth;
			return 0;
		}
	if (depth < 134 || depth > 50000) {
		mp_error_set(err, "resnet: depth %u is not 18, 34, 50, 101, 152, nor 3*(6+32+n3+6)+2 for n3 >= 0 (134 to 50000)", depth);
		return -1;
	}
	/* SuperNeurons Table 4: n1 = 6, n2 = 32, n4 = 6, n3 varies */
	n[0] = 6;
	n[1] = 32;
	n[2] = (depth - 2) / 3 - 44;
	n[3] = 6;
	*bottleneck = 1;
	*effective = 3 * (44 + n[2]) + 2;
	return 0;
}

/* torchvision BasicBlock / Bottleneck (v1.5: the stride on the 3x3 conv). */
static struct zt resnet_block(struct zb *b, const struct zt *x, unsigned planes, unsigned stride,
			      bool bottleneck)
{
	unsigned expansion = bottleneck ? 4 : 1;
	struct zt y, sc = *x;

	if (bottleneck) {
		y = conv2d(b, x, planes, 1, 1, 0, false, "conv1");
		y = bn(b, &y, "bn1");
		y = relu(b, &y, "relu1");
		y = conv2d(b, &y, planes, 3, stride, 1, false, "conv2");
		y = bn(b, &y, "bn2");
		y = relu(b, &y, "relu2");
		y = conv2d(b, &y, planes * 4, 1, 1, 0, false, "conv3");
		y = bn(b, &y, "bn3");
	} else {
		y = conv2d(b, x, planes, 3, stride, 1, false, "conv1");
		y = bn(b, &y, "bn1");
		y = relu(b, &y, "relu1");
		y = conv2d(b, &y, planes, 3, 1, 1, false, "conv2");
		y = bn(b, &y, "bn2");
	}
	if (stride != 1 || x->d[1] != (uint64_t)planes * expansion) {
		sc = conv2d(b, x, planes * expansion, 1, stride, 0, false, "downsample.0");
		sc = bn(b, &sc, "downsample.1");
	}
	y = add2(b, &y, &sc, "add");
	return relu(b, &y, bottleneck ? "relu3" : "relu2");
}

static void gen_resnet(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw,
		       const uint32_t n[4], bool bottleneck)
{
	static const unsigned widths[4] = { 64, 128, 256, 512 };
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);

	x = conv2d(b, &x, 64, 7, 2, 3, false, "conv1");
	x = bn(b, &x, "bn1");
	x = relu(b, &x, "relu");
	x = pool(b, &x, true, 3, 2, 1, "maxpool");
	for (unsigned s = 0; s < 4 && !b->failed; s++)
		for (uint32_t i = 0; i < n[s] && !b->failed; i++) {
			size_t save = zb_push(b, "layer%u.%u", s + 1, i);

			x = resnet_block(b, &x, widths[s], i == 0 && s > 0 ? 2 : 1, bottleneck);
			zb_pop(b, save);
		}
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 1000, true, "fc");
	loss(b, &x, "loss");
}

/* ---- AlexNet, VGG --------------------------------------------------------- */

/* torchvision alexnet (the one-tower variant without LRN of Krizhevsky 2014). */
static void gen_alexnet(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);

	x = conv2d(b, &x, 64, 11, 4, 2, true, "conv1");
	x = relu(b, &x, "relu1");
	x = pool(b, &x, true, 3, 2, 0, "pool1");
	x = conv2d(b, &x, 192, 5, 1, 2, true, "conv2");
	x = relu(b, &x, "relu2");
	x = pool(b, &x, true, 3, 2, 0, "pool2");
	x = conv2d(b, &x, 384, 3, 1, 1, true, "conv3");
	x = relu(b, &x, "relu3");
	x = conv2d(b, &x, 256, 3, 1, 1, true, "conv4");
	x = relu(b, &x, "relu4");
	x = conv2d(b, &x, 256, 3, 1, 1, true, "conv5");
	x = relu(b, &x, "relu5");
	x = pool(b, &x, true, 3, 2, 0, "pool5");
	if (x.d[2] != 6 || x.d[3] != 6)
		x = apool(b, &x, 6, 6, "avgpool");
	x = flatten(b, &x, "flatten");
	x = dropout(b, &x, "drop6");
	x = fc(b, &x, 4096, true, "fc6");
	x = relu(b, &x, "relu6");
	x = dropout(b, &x, "drop7");
	x = fc(b, &x, 4096, true, "fc7");
	x = relu(b, &x, "relu7");
	x = fc(b, &x, 1000, true, "fc8");
	loss(b, &x, "loss");
}

/* torchvision vgg16 / vgg19 (configurations D and E, no batch norm). */
static void gen_vgg(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw, unsigned depth)
{
	static const unsigned width[5] = { 64, 128, 256, 512, 512 };
	unsigned convs[5] = { 2, 2, 3, 3, 3 };
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);
	char nm[32];

	if (depth == 19)
		convs[2] = convs[3] = convs[4] = 4;
	for (unsigned s = 0; s < 5; s++) {
		for (unsigned i = 0; i < convs[s]; i++) {
			snprintf(nm, sizeof(nm), "conv%u_%u", s + 1, i + 1);
			x = conv2d(b, &x, width[s], 3, 1, 1, true, nm);
			snprintf(nm, sizeof(nm), "relu%u_%u", s + 1, i + 1);
			x = relu(b, &x, nm);
		}
		snprintf(nm, sizeof(nm), "pool%u", s + 1);
		x = pool(b, &x, true, 2, 2, 0, nm);
	}
	if (x.d[2] != 7 || x.d[3] != 7)
		x = apool(b, &x, 7, 7, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 4096, true, "fc6");
	x = relu(b, &x, "relu6");
	x = dropout(b, &x, "drop6");
	x = fc(b, &x, 4096, true, "fc7");
	x = relu(b, &x, "relu7");
	x = dropout(b, &x, "drop7");
	x = fc(b, &x, 1000, true, "fc8");
	loss(b, &x, "loss");
}

/* ---- Inception-v4 --------------------------------------------------------- */

/* BasicConv2d of Szegedy et al. 2016 as in Cadene's pretrainedmodels / timm:
 * conv (no bias), batch norm, ReLU in place. */
static struct zt cbr(struct zb *b, const struct zt *x, unsigned cout, unsigned kh, unsigned kw,
		     unsigned s, unsigned ph, unsigned pw, const char *name)
{
	struct convp c = { cout, kh, kw, s, s, ph, pw, 1, false };
	size_t save = zb_push(b, "%s", name);
	struct zt y = conv(b, x, &c, "conv");

	y = bn(b, &y, "bn");
	y = relu(b, &y, "relu");
	zb_pop(b, save);
	return y;
}

static struct zt cat_n(struct zb *b, unsigned n, const struct zt *xs, const char *suffix)
{
	const struct zt *p[8];

	MP_ASSERT(n <= 8);
	for (unsigned i = 0; i < n; i++)
		p[i] = &xs[i];
	return concat(b, n, p, 1, NULL, suffix);
}

static struct zt inception_a(struct zb *b, const struct zt *x)
{
	struct zt br[4], t;

	br[0] = cbr(b, x, 96, 1, 1, 1, 0, 0, "b0");
	t = cbr(b, x, 64, 1, 1, 1, 0, 0, "b1_0");
	br[1] = cbr(b, &t, 96, 3, 3, 1, 1, 1, "b1_1");
	t = cbr(b, x, 64, 1, 1, 1, 0, 0, "b2_0");
	t = cbr(b, &t, 96, 3, 3, 1, 1, 1, "b2_1");
	br[2] = cbr(b, &t, 96, 3, 3, 1, 1, 1, "b2_2");
	t = pool(b, x, false, 3, 1, 1, "b3_pool");
	br[3] = cbr(b, &t, 96, 1, 1, 1, 0, 0, "b3_1");
	return cat_n(b, 4, br, "concat");
}

static struct zt inception_b(struct zb *b, const struct zt *x)
{
	struct zt br[4], t;

	br[0] = cbr(b, x, 384, 1, 1, 1, 0, 0, "b0");
	t = cbr(b, x, 192, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 224, 1, 7, 1, 0, 3, "b1_1");
	br[1] = cbr(b, &t, 256, 7, 1, 1, 3, 0, "b1_2");
	t = cbr(b, x, 192, 1, 1, 1, 0, 0, "b2_0");
	t = cbr(b, &t, 192, 7, 1, 1, 3, 0, "b2_1");
	t = cbr(b, &t, 224, 1, 7, 1, 0, 3, "b2_2");
	t = cbr(b, &t, 224, 7, 1, 1, 3, 0, "b2_3");
	br[2] = cbr(b, &t, 256, 1, 7, 1, 0, 3, "b2_4");
	t = pool(b, x, false, 3, 1, 1, "b3_pool");
	br[3] = cbr(b, &t, 128, 1, 1, 1, 0, 0, "b3_1");
	return cat_n(b, 4, br, "concat");
}

static struct zt inception_c(struct zb *b, const struct zt *x)
{
	struct zt br[6], t;

	br[0] = cbr(b, x, 256, 1, 1, 1, 0, 0, "b0");
	t = cbr(b, x, 384, 1, 1, 1, 0, 0, "b1_0");
	br[1] = cbr(b, &t, 256, 1, 3, 1, 0, 1, "b1_1a");
	br[2] = cbr(b, &t, 256, 3, 1, 1, 1, 0, "b1_1b");
	t = cbr(b, x, 384, 1, 1, 1, 0, 0, "b2_0");
	t = cbr(b, &t, 448, 3, 1, 1, 1, 0, "b2_1");
	t = cbr(b, &t, 512, 1, 3, 1, 0, 1, "b2_2");
	br[3] = cbr(b, &t, 256, 1, 3, 1, 0, 1, "b2_3a");
	br[4] = cbr(b, &t, 256, 3, 1, 1, 1, 0, "b2_3b");
	t = pool(b, x, false, 3, 1, 1, "b3_pool");
	br[5] = cbr(b, &t, 256, 1, 1, 1, 0, 0, "b3_1");
	return cat_n(b, 6, br, "concat");
}

static void gen_inception_v4(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt), br[3], t;
	size_t save;

	x = cbr(b, &x, 32, 3, 3, 2, 0, 0, "stem.conv1");
	x = cbr(b, &x, 32, 3, 3, 1, 0, 0, "stem.conv2");
	x = cbr(b, &x, 64, 3, 3, 1, 1, 1, "stem.conv3");
	save = zb_push(b, "mixed_3a");
	br[0] = pool(b, &x, true, 3, 2, 0, "pool");
	br[1] = cbr(b, &x, 96, 3, 3, 2, 0, 0, "conv");
	x = cat_n(b, 2, br, "concat");
	zb_pop(b, save);
	save = zb_push(b, "mixed_4a");
	t = cbr(b, &x, 64, 1, 1, 1, 0, 0, "b0_0");
	br[0] = cbr(b, &t, 96, 3, 3, 1, 0, 0, "b0_1");
	t = cbr(b, &x, 64, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 64, 1, 7, 1, 0, 3, "b1_1");
	t = cbr(b, &t, 64, 7, 1, 1, 3, 0, "b1_2");
	br[1] = cbr(b, &t, 96, 3, 3, 1, 0, 0, "b1_3");
	x = cat_n(b, 2, br, "concat");
	zb_pop(b, save);
	save = zb_push(b, "mixed_5a");
	br[0] = cbr(b, &x, 192, 3, 3, 2, 0, 0, "conv");
	br[1] = pool(b, &x, true, 3, 2, 0, "pool");
	x = cat_n(b, 2, br, "concat");
	zb_pop(b, save);
	for (unsigned i = 0; i < 4; i++) {
		save = zb_push(b, "inception_a%u", i + 1);
		x = inception_a(b, &x);
		zb_pop(b, save);
	}
	save = zb_push(b, "reduction_a");
	br[0] = cbr(b, &x, 384, 3, 3, 2, 0, 0, "b0");
	t = cbr(b, &x, 192, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 224, 3, 3, 1, 1, 1, "b1_1");
	br[1] = cbr(b, &t, 256, 3, 3, 2, 0, 0, "b1_2");
	br[2] = pool(b, &x, true, 3, 2, 0, "b2_pool");
	x = cat_n(b, 3, br, "concat");
	zb_pop(b, save);
	for (unsigned i = 0; i < 7; i++) {
		save = zb_push(b, "inception_b%u", i + 1);
		x = inception_b(b, &x);
		zb_pop(b, save);
	}
	save = zb_push(b, "reduction_b");
	t = cbr(b, &x, 192, 1, 1, 1, 0, 0, "b0_0");
	br[0] = cbr(b, &t, 192, 3, 3, 2, 0, 0, "b0_1");
	t = cbr(b, &x, 256, 1, 1, 1, 0, 0, "b1_0");
	t = cbr(b, &t, 256, 1, 7, 1, 0, 3, "b1_1");
	t = cbr(b, &t, 320, 7, 1, 1, 3, 0, "b1_2");
	br[1] = cbr(b, &t, 320, 3, 3, 2, 0, 0, "b1_3");
	br[2] = pool(b, &x, true, 3, 2, 0, "b2_pool");
	x = cat_n(b, 3, br, "concat");
	zb_pop(b, save);
	for (unsigned i = 0; i < 3; i++) {
		save = zb_push(b, "inception_c%u", i + 1);
		x = inception_c(b, &x);
		zb_pop(b, save);
	}
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 1000, true, "fc");
	loss(b, &x, "loss");
}

/* ---- DenseNet-121 --------------------------------------------------------- */

/* torchvision densenet121: growth 32, bottleneck 4, blocks 6-12-24-16; each
 * dense layer concatenates every earlier feature map of its block (the
 * default, not the memory-efficient checkpointed variant). */
static void gen_densenet121(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	static const unsigned blocks[4] = { 6, 12, 24, 16 };
	const unsigned growth = 32, bottleneck = 4;
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);
	struct zt *feat = mp_xcalloc(64 + 1, sizeof(*feat));
	const struct zt **fp = mp_xcalloc(64 + 1, sizeof(*fp));

	x = conv2d(b, &x, 64, 7, 2, 3, false, "conv0");
	x = bn(b, &x, "norm0");
	x = relu(b, &x, "relu0");
	x = pool(b, &x, true, 3, 2, 1, "pool0");
	for (unsigned s = 0; s < 4 && !b->failed; s++) {
		size_t save = zb_push(b, "denseblock%u", s + 1), save2;
		unsigned nf = 1;

		feat[0] = x;
		for (unsigned i = 0; i < blocks[s]; i++) {
			struct zt y;

			save2 = zb_push(b, "denselayer%u", i + 1);
			for (unsigned k = 0; k < nf; k++)
				fp[k] = &feat[k];
			y = concat(b, nf, fp, 1, NULL, "concat");
			y = bn(b, &y, "norm1");
			y = relu(b, &y, "relu1");
			y = conv2d(b, &y, bottleneck * growth, 1, 1, 0, false, "conv1");
			y = bn(b, &y, "norm2");
			y = relu(b, &y, "relu2");
			feat[nf++] = conv2d(b, &y, growth, 3, 1, 1, false, "conv2");
			zb_pop(b, save2);
		}
		for (unsigned k = 0; k < nf; k++)
			fp[k] = &feat[k];
		x = concat(b, nf, fp, 1, NULL, "concat");
		zb_pop(b, save);
		if (s < 3) {
			save = zb_push(b, "transition%u", s + 1);
			x = bn(b, &x, "norm");
			x = relu(b, &x, "relu");
			x = conv2d(b, &x, (unsigned)(x.d[1] / 2), 1, 1, 0, false, "conv");
			x = pool(b, &x, false, 2, 2, 0, "pool");
			zb_pop(b, save);
		}
	}
	free(feat);
	free(fp);
	x = bn(b, &x, "norm5");
	x = relu(b, &x, "relu5");
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = fc(b, &x, 1000, true, "classifier");
	loss(b, &x, "loss");
}

/* ---- MobileNet-V2 --------------------------------------------------------- */

static struct zt cbr6(struct zb *b, const struct zt *x, unsigned cout, unsigned k, unsigned s,
		      unsigned groups, bool act_after, const char *name)
{
	struct convp c = { cout, k, k, s, s, k / 2, k / 2, groups, false };
	size_t save = zb_push(b, "%s", name);
	struct zt y = conv(b, x, &c, "conv");

	y = bn(b, &y, "bn");
	if (act_after)
		y = relu(b, &y, "relu6");
	zb_pop(b, save);
	return y;
}

/* torchvision mobilenet_v2 (width 1.0): inverted residuals, ReLU6 in place
 * (a relu layer: its backward reads the output alike). */
static void gen_mobilenet_v2(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	static const unsigned cfg[7][4] = {
		{ 1, 16, 1, 1 }, { 6, 24, 2, 2 }, { 6, 32, 3, 2 }, { 6, 64, 4, 2 },
		{ 6, 96, 3, 1 }, { 6, 160, 3, 2 }, { 6, 320, 1, 1 },
	};
	struct zt x = data(b, "data", 4, batch, 3, ih, iw, b->dt);
	unsigned blk = 1;

	x = cbr6(b, &x, 32, 3, 2, 1, true, "stem");
	for (unsigned r = 0; r < 7; r++)
		for (unsigned i = 0; i < cfg[r][2]; i++, blk++) {
			unsigned t = cfg[r][0], cout = cfg[r][1], s = i ? 1 : cfg[r][3];
			unsigned hid = (unsigned)x.d[1] * t;
			size_t save = zb_push(b, "block%u", blk);
			struct zt y = x;

			if (t != 1)
				y = cbr6(b, &y, hid, 1, 1, 1, true, "expand");
			y = cbr6(b, &y, hid, 3, s, hid, true, "dw");
			y = cbr6(b, &y, cout, 1, 1, 1, false, "project");
			if (s == 1 && x.d[1] == cout)
				y = add2(b, &y, &x, "add");
			x = y;
			zb_pop(b, save);
		}
	x = cbr6(b, &x, 1280, 1, 1, 1, true, "head");
	x = apool(b, &x, 1, 1, "avgpool");
	x = flatten(b, &x, "flatten");
	x = dropout(b, &x, "dropout");
	x = fc(b, &x, 1000, true, "classifier");
	loss(b, &x, "loss");
}

/* ---- U-Net ---------------------------------------------------------------- */

/* Ronneberger et al. 2015, Fig. 1: valid 3x3 convolutions with ReLU, 2x2 max
 * pooling, 2x2 up-convolutions halving the channels, skip features cropped
 * (a view: the concatenation reads the larger map), dropout at the end of
 * the contracting path, a 1x1 convolution to 2 classes; 1 input channel. */
static void gen_unet(struct zb *b, uint32_t batch, uint32_t ih, uint32_t iw)
{
	struct zt x = data(b, "data", 4, batch, 1, ih, iw, b->dt), skip[4];
	unsigned w = 64;

	for (unsigned lv = 0; lv < 4; lv++, w *= 2) {
		size_t save = zb_push(b, "enc%u", lv + 1);

		x = conv2d(b, &x, w, 3, 1, 0, true, "conv1");
		x = relu(b, &x, "relu1");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv2");
		x = relu(b, &x, "relu2");
		if (!b->failed && (x.d[2] % 2 || x.d[3] % 2))
			zb_fail(b, "image %ux%u gives an odd %llux%llu map before pooling at level %u (the valid-convolution U-Net needs even sizes there; 572x572 is the paper's)",
				ih, iw, (unsigned long long)x.d[2], (unsigned long long)x.d[3], lv + 1);
		skip[lv] = x;
		x = pool(b, &x, true, 2, 2, 0, "pool");
		zb_pop(b, save);
	}
	{
		size_t save = zb_push(b, "bottom");

		x = conv2d(b, &x, w, 3, 1, 0, true, "conv1");
		x = relu(b, &x, "relu1");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv2");
		x = relu(b, &x, "relu2");
		x = dropout(b, &x, "dropout");
		zb_pop(b, save);
	}
	for (unsigned lv = 4; lv-- > 0;) {
		size_t save = zb_push(b, "dec%u", lv + 1);
		const struct zt *xs[2];
		struct zt shape;

		w /= 2;
		x = upconv(b, &x, w, "upconv");
		if (!b->failed && (skip[lv].d[2] < x.d[2] || skip[lv].d[3] < x.d[3]))
			zb_fail(b, "image %ux%u is too small", ih, iw);
		xs[0] = &skip[lv];
		xs[1] = &x;
		shape = x;
		shape.d[1] = 2 * (uint64_t)w;
		x = concat(b, 2, xs, 1, &shape, "concat");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv1");
		x = relu(b, &x, "relu1");
		x = conv2d(b, &x, w, 3, 1, 0, true, "conv2");
		x = relu(b, &x, "relu2");
		zb_pop(b, save);
	}
	x = conv2d(b, &x, 2, 1, 1, 0, true, "final");
	loss(b, &x, "loss");
}

/* ---- transformers ----------------------------------------------------------- */

/* GPT-2 (Radford et al. 2019; Hugging Face GPT2LMHeadModel): pre-LN blocks,
 * GELU MLP of 4x width, dropout 0.1 on embeddings and residual branches,
 * 50257-token vocabulary, learned positions for max(1024, seq), the LM head
 * tied to the token embedding (an fc with no weight of its own). */
static void gen_gpt2(struct zb *b, uint32_t batch, uint32_t seq, uint32_t layers, uint32_t hidden)
{
	const uint64_t vocab = 50257, npos = seq > 1024 ? seq : 1024;
	struct zt ids = data(b, "tokens", 2, batch, seq, 0, 0, MP_DT_INT64), x, t, u;

	x = embedding(b, &ids, vocab, hidden, "wte");
	t = embedding(b, &ids, npos, hidden, "wpe");
	x = add2(b, &x, &t, "embed");
	x = dropout(b, &x, "drop");
	for (uint32_t i = 0; i < layers && !b->failed; i++) {
		size_t save = zb_push(b, "h.%u", i);

		t = layernorm(b, &x, "ln_1");
		t = fc(b, &t, 3 * (uint64_t)hidden, true, "attn.c_attn");
		t = attention(b, &t, true, "attn.core");
		t = fc(b, &t, hidden, true, "attn.c_proj");
		t = dropout(b, &t, "attn.resid_drop");
		x = add2(b, &x, &t, "residual_1");
		u = layernorm(b, &x, "ln_2");
		u = fc(b, &u, 4 * (uint64_t)hidden, true, "mlp.c_fc");
		u = act(b, &u, "gelu", false, "mlp.gelu");
		u = fc(b, &u, hidden, true, "mlp.c_proj");
		u = dropout(b, &u, "mlp.drop");
		x = add2(b, &x, &u, "residual_2");
		zb_pop(b, save);
	}
	x = layernorm(b, &x, "ln_f");
	x = fc_rows(b, &x, (uint64_t)batch * seq, hidden, vocab, false, false, NULL, "lm_head");
	comment_last(b, "weight tied to wte (memplan-net/1 has no shared parameters)");
	loss(b, &x, "loss");
}

/* BERT (Devlin et al. 2019; Hugging Face BertForPreTraining): post-LN
 * encoder, 30522-token vocabulary, 512 positions, 2 segment types, pooler,
 * masked-LM head (decoder tied to the word embedding, its own bias) and
 * next-sentence head. */
static void gen_bert(struct zb *b, uint32_t batch, uint32_t seq, uint32_t layers, uint32_t hidden)
{
	const uint64_t vocab = 30522, npos = seq > 512 ? seq : 512;
	struct zt ids = data(b, "input_ids", 2, batch, seq, 0, 0, MP_DT_INT64);
	struct zt seg = data(b, "token_type_ids", 2, batch, seq, 0, 0, MP_DT_INT64);
	struct zt e[3], x, t, p;
	const struct zt *ep[3] = { &e[0], &e[1], &e[2] };

	e[0] = embedding(b, &ids, vocab, hidden, "embeddings.word");
	e[1] = embedding(b, &ids, npos, hidden, "embeddings.position");
	e[2] = embedding(b, &seg, 2, hidden, "embeddings.token_type");
	x = add(b, 3, ep, "embeddings.sum");
	x = layernorm(b, &x, "embeddings.ln");
	x = dropout(b, &x, "embeddings.drop");
	for (uint32_t i = 0; i < layers && !b->failed; i++) {
		size_t save = zb_push(b, "encoder.%u", i);

		t = fc(b, &x, 3 * (uint64_t)hidden, true, "attn.qkv");
		t = attention(b, &t, false, "attn.core");
		t = fc(b, &t, hidden, true, "attn.dense");
		t = dropout(b, &t, "attn.drop");
		x = add2(b, &t, &x, "attn.residual");
		x = layernorm(b, &x, "attn.ln");
		t = fc(b, &x, 4 * (uint64_t)hidden, true, "ffn.intermediate");
		t = act(b, &t, "gelu", false, "ffn.gelu");
		t = fc(b, &t, hidden, true, "ffn.dense");
		t = dropout(b, &t, "ffn.drop");
		x = add2(b, &t, &x, "ffn.residual");
		x = layernorm(b, &x, "ffn.ln");
		zb_pop(b, save);
	}
	/* pooler: the first token of each sequence */
	zt_dims(&p, 2, batch, hidden, 0, 0);
	p = fc_rows(b, &x, batch, hidden, hidden, true, true, &p, "pooler.dense");
	comment_last(b, "reads the first token of each sequence");
	p = act(b, &p, "tanh", false, "pooler.tanh");
	t = fc(b, &x, hidden, true, "mlm.transform");
	t = act(b, &t, "gelu", false, "mlm.gelu");
	t = layernorm(b, &t, "mlm.ln");
	t = fc_rows(b, &t, (uint64_t)batch * seq, hidden, vocab, false, true, NULL, "mlm.decoder");
	comment_last(b, "weight tied to embeddings.word (memplan-net/1 has no shared parameters); the parameter is the bias");
	loss(b, &t, "mlm.loss");
	p = fc(b, &p, 2, true, "nsp.fc");
	loss(b, &p, "nsp.loss");
}

/* ---- seq2seq ---------------------------------------------------------------- */

/*
 * An LSTM cell step as a custom layer.  Its output is [B, 6, H]: h, c and
 * the four gate activations, which is what the step's backward reads (cuDNN
 * keeps them in its reserve space); the next step and the layer above read
 * it.  The weights [4H, in+H] and bias [4H] are shared by all steps of the
 * layer; they are listed on step 0 only, as memplan-net/1 has no shared
 * parameters, so the model's parameter count is right.
 */
static struct zt lstm_cell(struct zb *b, unsigned n_in, const struct zt *const *in,
			   uint64_t in_f, uint64_t batch, uint64_t hidden, bool params,
			   const char *suffix)
{
	struct zt o;
	json_t *l;
	double io;

	zt_dims(&o, 3, batch, 6, hidden, 0);
	l = emit(b, &o, suffix, "custom", n_in, in);
	json_object_set_new(l, "comment", json_string(params ?
		"LSTM cell: output h, c and 4 gates; weights shared by all steps, listed here" :
		"LSTM cell: output h, c and 4 gates; weights on step 0"));
	if (params) {
		add_param4(b, l, 2, 4 * hidden, in_f + hidden, 0, 0);
		add_param4(b, l, 1, 4 * hidden, 0, 0, 0);
	}
	/* bytes: x_t, h and c in, the output, the weights */
	io = (double)batch * (double)(in_f + 2 * hidden) * b->esz + zt_bytes(&o) +
	     (double)(4 * hidden * (in_f + hidden + 1)) * b->esz;
	b->io_bytes = io;
	if (!params)
		b->param_bytes = 0;
	finish(b, l, 2.0 * (double)batch * (double)(4 * hidden) * (double)(in_f + hidden) +
		     10.0 * (double)batch * (double)hidden, NULL, NULL);
	return o;
}

/*
 * LSTM encoder-decoder with additive (Bahdanau) attention as TF-NMT builds
 * it, the model of tf-swap-out-in 3.2: depth LSTM layers each side, unrolled
 * over seq steps; decoder state starts from the encoder's final state; input
 * feeding (the previous attention output joins the embedding); at each
 * decoder step the score v^T tanh(keys + W q) keeps a [B, T, H] intermediate
 * for backward, O(T^2 B H) in all (the memory 3.2.1 targets); an attention
 * layer W_a [h; context] without bias; a vocabulary projection without bias.
 * Vocabulary 32000 on both sides.
 */
static void gen_seq2seq(struct zb *b, uint32_t batch, uint32_t seq, uint32_t layers, uint32_t hidden)
{
	const uint64_t vocab = 32000, B = batch, H = hidden, T = seq;
	struct zt src = data(b, "src_ids", 2, B, T, 0, 0, MP_DT_INT64);
	struct zt tgt = data(b, "tgt_ids", 2, B, T, 0, 0, MP_DT_INT64);
	struct zt semb, temb, keys, mem, shape, prev_attn;
	struct zt *enc = mp_xcalloc((size_t)layers * seq, sizeof(*enc));
	struct zt *dec = mp_xcalloc(layers, sizeof(*dec));
	struct zt *outs = mp_xcalloc(seq, sizeof(*outs));
	const struct zt **xs = mp_xcalloc(seq > 3 ? seq : 3, sizeof(*xs));
	char nm[64];

	semb = embedding(b, &src, vocab, H, "src_embed");
	temb = embedding(b, &tgt, vocab, H, "tgt_embed");
	for (uint32_t t = 0; t < seq && !b->failed; t++)
		for (uint32_t l = 0; l < layers; l++) {
			const struct zt *in[2];
			unsigned n = 0;

			in[n++] = l ? &enc[(size_t)(l - 1) * seq + t] : &semb;
			if (t)
				in[n++] = &enc[(size_t)l * seq + t - 1];
			snprintf(nm, sizeof(nm), "enc.l%u.t%u", l, t);
			enc[(size_t)l * seq + t] = lstm_cell(b, n, in, H, B, H, t == 0, nm);
		}
	/* encoder outputs (the top layer's h at every step) and keys W_1 h_s */
	for (uint32_t t = 0; t < seq; t++)
		xs[t] = &enc[(size_t)(layers - 1) * seq + t];
	zt_dims(&shape, 3, B, T, H, 0);
	shape.esz = b->esz;
	mem = concat(b, seq, xs, 1, &shape, "enc.memory");
	keys = fc(b, &mem, H, false, "attn.keys");
	for (uint32_t t = 0; t < seq && !b->failed; t++) {
		size_t save = zb_push(b, "dec.t%u", t);
		struct zt q, s, ctx, cat;
		bool first = t == 0;

		for (uint32_t l = 0; l < layers; l++) {
			const struct zt *in[3];
			unsigned n = 0;

			in[n++] = l ? &dec[l - 1] : &temb;
			if (l == 0 && !first)
				in[n++] = &prev_attn;
			in[n++] = first ? &enc[(size_t)l * seq + seq - 1] : &dec[l];
			snprintf(nm, sizeof(nm), "l%u", l);
			dec[l] = lstm_cell(b, n, in, l ? H : 2 * H, B, H, first, nm);
		}
		zt_dims(&q, 3, B, 1, H, 0); /* expanded over the T keys: broadcasts */
		q = fc_rows(b, &dec[layers - 1], B, H, H, first, false, &q, "query");
		s = add2(b, &keys, &q, "score_add");
		s = act(b, &s, "tanh", false, "score_tanh");
		s = fc_rows(b, &s, B * T, H, 1, first, false, NULL, "score");
		s = softmax(b, &s, "align");
		{
			const struct zt *in[2] = { &s, &mem };
			json_t *l;

			zt_dims(&ctx, 2, B, H, 0, 0);
			l = emit(b, &ctx, "context", "custom", 2, in);
			json_object_set_new(l, "comment", json_string("context: alignment-weighted sum of the encoder outputs"));
			finish(b, l, 2.0 * (double)(B * T * H), NULL, NULL);
		}
		{
			const struct zt *in[2] = { &dec[layers - 1], &ctx };

			zt_dims(&shape, 2, B, 2 * H, 0, 0);
			shape.esz = b->esz;
			cat = concat(b, 2, in, 1, &shape, "cat");
		}
		prev_attn = fc_rows(b, &cat, B, 2 * H, H, first, false, NULL, "attention");
		outs[t] = prev_attn;
		zb_pop(b, save);
	}
	for (uint32_t t = 0; t < seq; t++)
		xs[t] = &outs[t];
	zt_dims(&shape, 3, B, T, H, 0);
	shape.esz = b->esz;
	mem = concat(b, seq, xs, 1, &shape, "dec.outputs");
	mem = fc(b, &mem, vocab, false, "proj");
	loss(b, &mem, "loss");
	free(enc);
	free(dec);
	free(outs);
	free(xs);
}

/* ---- catalogue and driver ------------------------------------------------------ */

enum model_id {
	M_ALEXNET, M_VGG16, M_VGG19, M_RESNET, M_INCEPTION_V4, M_DENSENET121,
	M_UNET, M_MOBILENET_V2, M_GPT2, M_BERT, M_SEQ2SEQ,
};

static const struct zoo_model models[] = {
	[M_ALEXNET] = { "alexnet", "AlexNet (torchvision), batch 128, 224x224", ZOO_OPT_IMAGE },
	[M_VGG16] = { "vgg16", "VGG-16 (torchvision, configuration D), batch 64, 224x224", ZOO_OPT_IMAGE },
	[M_VGG19] = { "vgg19", "VGG-19 (torchvision, configuration E), batch 64, 224x224", ZOO_OPT_IMAGE },
	[M_RESNET] = { "resnet", "ResNet, depth 18/34/50/101/152 or 3*(6+32+n3+6)+2 (SuperNeurons), default 50, batch 32, 224x224",
		       ZOO_OPT_DEPTH | ZOO_OPT_IMAGE },
	[M_INCEPTION_V4] = { "inception-v4", "Inception-v4 (Szegedy et al. 2016), batch 32, 299x299", ZOO_OPT_IMAGE },
	[M_DENSENET121] = { "densenet-121", "DenseNet-121 (torchvision), batch 32, 224x224", ZOO_OPT_IMAGE },
	[M_UNET] = { "unet", "U-Net (Ronneberger et al. 2015), batch 1, 572x572, 1 channel in, 2 classes", ZOO_OPT_IMAGE },
	[M_MOBILENET_V2] = { "mobilenet-v2", "MobileNet-V2 (torchvision), batch 64, 224x224", ZOO_OPT_IMAGE },
	[M_GPT2] = { "gpt2", "GPT-2 decoder, 12 layers, 768 hidden, 12 heads, seq 1024, batch 8",
		     ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN | ZOO_OPT_HEADS },
	[M_BERT] = { "bert", "BERT encoder with pre-training heads, 12 layers, 768 hidden, 12 heads, seq 128, batch 32",
		     ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN | ZOO_OPT_HEADS },
	[M_SEQ2SEQ] = { "seq2seq", "LSTM seq2seq with additive attention (TF-NMT), 2 layers, 512 hidden, seq 50, batch 128",
			ZOO_OPT_DEPTH | ZOO_OPT_SEQ | ZOO_OPT_HIDDEN },
};

static const struct {
	const char *alias;
	enum model_id m;
	uint32_t depth, hidden, heads;
} aliases[] = {
	{ "vgg-16", M_VGG16, 0, 0, 0 }, { "vgg-19", M_VGG19, 0, 0, 0 },
	{ "inception_v4", M_INCEPTION_V4, 0, 0, 0 }, { "inceptionv4", M_INCEPTION_V4, 0, 0, 0 },
	{ "densenet121", M_DENSENET121, 0, 0, 0 }, { "densenet", M_DENSENET121, 0, 0, 0 },
	{ "mobilenet_v2", M_MOBILENET_V2, 0, 0, 0 }, { "mobilenetv2", M_MOBILENET_V2, 0, 0, 0 },
	{ "u-net", M_UNET, 0, 0, 0 },
	{ "gpt2-small", M_GPT2, 12, 768, 12 }, { "gpt2-medium", M_GPT2, 24, 1024, 16 },
	{ "gpt2-large", M_GPT2, 36, 1280, 20 }, { "gpt2-xl", M_GPT2, 48, 1600, 25 },
	{ "bert-base", M_BERT, 12, 768, 12 }, { "bert-large", M_BERT, 24, 1024, 16 },
	{ "lstm-seq2seq", M_SEQ2SEQ, 0, 0, 0 },
};

unsigned zoo_model_count(void)
{
	return sizeof(models) / sizeof(models[0]);
}

const struct zoo_model *zoo_model_at(unsigned i)
{
	return i < zoo_model_count() ? &models[i] : NULL;
}

/* Model id and the options an alias fixes (through *o when not NULL). */
static int find_model(const char *name, unsigned *preset, struct zoo_opts *o)
{
	unsigned p = 0;

	for (unsigned i = 0; i < zoo_model_count(); i++)
		if (!strcasecmp(name, models[i].name)) {
			if (preset)
				*preset = 0;
			return (int)i;
		}
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcasecmp(name, aliases[i].alias)) {
			if (aliases[i].depth)
				p |= ZOO_OPT_DEPTH;
			if (aliases[i].hidden)
				p |= ZOO_OPT_HIDDEN | ZOO_OPT_HEADS;
			if (o) {
				if (aliases[i].depth)
					o->depth = aliases[i].depth;
				if (aliases[i].hidden) {
					o->hidden = aliases[i].hidden;
					o->heads = aliases[i].heads;
				}
			}
			if (preset)
				*preset = p;
			return (int)aliases[i].m;
		}
	/* resnetN, resnet-N */
	if (!strncasecmp(name, "resnet", 6)) {
		const char *d = name + 6 + (name[6] == '-');
		char *end;
		unsigned long v;

		if (*d < '1' || *d > '9')
			return -1;
		v = strtoul(d, &end, 10);
		if (*end || v > 50000)
			return -1;
		if (o)
			o->depth = (uint32_t)v;
		if (preset)
			*preset = ZOO_OPT_DEPTH;
		return M_RESNET;
	}
	return -1;
}

const struct zoo_model *zoo_model_find(const char *name, unsigned *preset)
{
	int m = find_model(name, preset, NULL);

	return m < 0 ? NULL : &models[m];
}

void zoo_opts_init(struct zoo_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->dtype = -1;
	o->optimizer = -1;
}

static int check_range(const char *model, const char *what, uint32_t v, uint32_t lo, uint32_t hi,
		       struct mp_error *err)
{
	if (v >= lo && v <= hi)
		return 0;
	mp_error_set(err, "%s: %s %u is out of range (%u to %u)", model, what, v, lo, hi);
	return -1;
}

static const char *const opt_names[] = { "depth", "image", "seq", "hidden", "heads" };

json_t *zoo_generate(const char *model, const struct zoo_opts *opts, struct mp_error *err)
{
	struct zoo_opts o = *opts, given = *opts;
	struct zb b = { 0 };
	const struct mp_device *dev = o.device;
	const struct zoo_model *zm;
	uint32_t n[4] = { 0 }, eff = 0;
	int bottleneck = 0, m;
	unsigned preset = 0, passed = 0;
	json_t *root, *gen;
	char name[64], desc[1024], note[160] = "";
	bool catalog;

	m = find_model(model, &preset, &o);
	if (m < 0) {
		mp_error_set(err, "unknown model '%s' (see 'memplan gen --help')", model);
		return NULL;
	}
	zm = &models[m];
	passed |= given.depth ? ZOO_OPT_DEPTH : 0;
	passed |= given.image_h || given.image_w ? ZOO_OPT_IMAGE : 0;
	passed |= given.seq ? ZOO_OPT_SEQ : 0;
	passed |= given.hidden ? ZOO_OPT_HIDDEN : 0;
	passed |= given.heads ? ZOO_OPT_HEADS : 0;
	for (unsigned i = 0; i < 5; i++) {
		unsigned bit = 1u << i;

		if ((passed & bit) && !(zm->options & bit)) {
			mp_error_set(err, "%s takes no %s option", zm->name, opt_names[i]);
			return NULL;
		}
		if ((passed & bit) && (preset & bit)) {
			mp_error_set(err, "'%s' fixes the %s; use '%s' to choose it", model, opt_names[i], zm->name);
			return NULL;
		}
	}
	if (!dev && !(dev = device_find(ZOO_DEFAULT_DEVICE))) {
		mp_error_set(err, "internal error: default device '%s' is not in the catalog", ZOO_DEFAULT_DEVICE);
		return NULL;
	}
	b.dt = o.dtype < 0 ? MP_DT_FLOAT32 : (enum mp_dtype)o.dtype;
	if (b.dt != MP_DT_FLOAT32 && b.dt != MP_DT_FLOAT16 && b.dt != MP_DT_BFLOAT16) {
		mp_error_set(err, "dtype '%s' is not float32, float16 or bfloat16", mp_dtype_name(b.dt));
		return NULL;
	}
	b.esz = mp_dtype_bytes(b.dt);
	b.tflops_f32 = dev->tflops[MP_DT_FLOAT32];
	b.tflops = dev->tflops[b.dt];
	b.mem_gbps = dev->mem_gbps;
	if (b.tflops_f32 <= 0 || b.mem_gbps <= 0) {
		mp_error_set(err, "device '%s' gives no float32 throughput (tflops) or memory bandwidth (mem_gbps); the roofline estimate needs both", dev->name);
		return NULL;
	}
	if (b.tflops <= 0) {
		snprintf(note, sizeof(note), " %s lists no %s throughput: its float32 peak is used.",
			 dev->name, mp_dtype_name(b.dt));
		b.tflops = b.tflops_f32;
	}
	if (o.optimizer < 0)
		o.optimizer = m == M_GPT2 || m == M_BERT ? MP_OPT_ADAM :
			      m == M_SEQ2SEQ ? MP_OPT_SGD : MP_OPT_MOMENTUM;
	b.upd_passes = o.optimizer == MP_OPT_ADAM ? 7 : o.optimizer == MP_OPT_MOMENTUM ? 5 :
		       o.optimizer == MP_OPT_SGD ? 3 : 0;
	/* defaults and ranges */
	if (!o.batch)
		o.batch = m == M_ALEXNET ? 128 : m == M_VGG16 || m == M_VGG19 || m == M_MOBILENET_V2 ? 64 :
			  m == M_UNET ? 1 : m == M_GPT2 ? 8 : m == M_SEQ2SEQ ? 128 : 32;
	if (check_range(zm->name, "batch", o.batch, 1, 65536, err) < 0)
		return NULL;
	if (zm->options & ZOO_OPT_IMAGE) {
		uint32_t def = m == M_INCEPTION_V4 ? 299 : m == M_UNET ? 572 : 224;

		if (!o.image_h)
			o.image_h = def;
		if (!o.image_w)
			o.image_w = o.image_h;
		if (check_range(zm->name, "image height", o.image_h, 1, 16384, err) < 0 ||
		    check_range(zm->name, "image width", o.image_w, 1, 16384, err) < 0)
			return NULL;
	}
	if (m == M_RESNET) {
		if (!o.depth)
			o.depth = 50;
		if (zoo_resnet_stages(o.depth, n, &bottleneck, &eff, err) < 0)
			return NULL;
	}
	if (m == M_GPT2 || m == M_BERT || m == M_SEQ2SEQ) {
		bool tf = m != M_SEQ2SEQ;

		if (!o.depth)
			o.depth = tf ? 12 : 2;
		if (!o.hidden)
			o.hidden = tf ? 768 : 512;
		if (!o.seq)
			o.seq = m == M_GPT2 ? 1024 : m == M_BERT ? 128 : 50;
		if (tf && !o.heads)
			o.heads = o.hidden % 64 == 0 ? o.hidden / 64 : 1;
		/* seq2seq unrolls: about seq * (2 * depth + 8) layers */
		if (check_range(zm->name, tf ? "layers (depth)" : "LSTM layers (depth)", o.depth, 1, tf ? 1024 : 16, err) < 0 ||
		    check_range(zm->name, "hidden", o.hidden, 1, 65536, err) < 0 ||
		    check_range(zm->name, "seq", o.seq, 1, tf ? 1048576 : 2048, err) < 0)
			return NULL;
		if (tf && (check_range(zm->name, "heads", o.heads, 1, o.hidden, err) < 0))
			return NULL;
		if (tf && o.hidden % o.heads) {
			mp_error_set(err, "%s: hidden %u is not a multiple of heads %u", zm->name, o.hidden, o.heads);
			return NULL;
		}
	}

	b.err = err;
	b.layers = json_array();
	switch ((enum model_id)m) {
	case M_ALEXNET:
		gen_alexnet(&b, o.batch, o.image_h, o.image_w);
		snprintf(name, sizeof(name), "alexnet");
		snprintf(desc, sizeof(desc), "AlexNet as torchvision builds it (5 conv, 3 fc, no LRN), batch %u, 3x%ux%u.", o.batch, o.image_h, o.image_w);
		break;
	case M_VGG16:
	case M_VGG19:
		gen_vgg(&b, o.batch, o.image_h, o.image_w, m == M_VGG16 ? 16 : 19);
		snprintf(name, sizeof(name), "%s", zm->name);
		snprintf(desc, sizeof(desc), "VGG-%u (Simonyan and Zisserman 2015, torchvision, no batch norm), batch %u, 3x%ux%u.", m == M_VGG16 ? 16 : 19, o.batch, o.image_h, o.image_w);
		break;
	case M_RESNET:
		gen_resnet(&b, o.batch, o.image_h, o.image_w, n, bottleneck);
		snprintf(name, sizeof(name), "resnet%u", eff);
		if (o.depth == 18 || o.depth == 34 || o.depth == 50 || o.depth == 101 || o.depth == 152)
			snprintf(desc, sizeof(desc), "ResNet-%u (He et al. 2016, torchvision v1.5: stride on the 3x3 conv), stages %u-%u-%u-%u, batch %u, 3x%ux%u.",
				 eff, n[0], n[1], n[2], n[3], o.batch, o.image_h, o.image_w);
		else
			snprintf(desc, sizeof(desc), "ResNet-%u of SuperNeurons Table 4: depth = 3*(n1+n2+n3+n4)+2 with bottleneck stages %u-%u-%u-%u%s, batch %u, 3x%ux%u.",
				 eff, n[0], n[1], n[2], n[3], eff != o.depth ? " (the requested depth rounded down to that form)" : "",
				 o.batch, o.image_h, o.image_w);
		break;
	case M_INCEPTION_V4:
		gen_inception_v4(&b, o.batch, o.image_h, o.image_w);
		snprintf(name, sizeof(name), "inception-v4");
		snprintf(desc, sizeof(desc), "Inception-v4 (Szegedy et al. 2016, as pretrainedmodels/timm build it, 1000 classes), batch %u, 3x%ux%u.", o.batch, o.image_h, o.image_w);
		break;
	case M_DENSENET121:
		gen_densenet121(&b, o.batch, o.image_h, o.image_w);
		snprintf(name, sizeof(name), "densenet-121");
		snprintf(desc, sizeof(desc), "DenseNet-121 (Huang et al. 2017, torchvision, concatenating every earlier feature map), batch %u, 3x%ux%u.", o.batch, o.image_h, o.image_w);
		break;
	case M_UNET:
		gen_unet(&b, o.batch, o.image_h, o.image_w);
		snprintf(name, sizeof(name), "unet");
		snprintf(desc, sizeof(desc), "U-Net (Ronneberger et al. 2015, valid convolutions), batch %u, 1x%ux%u in, 2 classes.", o.batch, o.image_h, o.image_w);
		break;
	case M_MOBILENET_V2:
		gen_mobilenet_v2(&b, o.batch, o.image_h, o.image_w);
		snprintf(name, sizeof(name), "mobilenet-v2");
		snprintf(desc, sizeof(desc), "MobileNet-V2 (Sandler et al. 2018, torchvision, width 1.0), batch %u, 3x%ux%u.", o.batch, o.image_h, o.image_w);
		break;
	case M_GPT2:
		gen_gpt2(&b, o.batch, o.seq, o.depth, o.hidden);
		snprintf(name, sizeof(name), "gpt2-%ux%u", o.depth, o.hidden);
		snprintf(desc, sizeof(desc), "GPT-2 decoder (Hugging Face GPT2LMHeadModel), %u layers, hidden %u, %u heads, seq %u, batch %u; attention as one fused (flash) kernel.",
			 o.depth, o.hidden, o.heads, o.seq, o.batch);
		break;
	case M_BERT:
		gen_bert(&b, o.batch, o.seq, o.depth, o.hidden);
		snprintf(name, sizeof(name), "bert-%ux%u", o.depth, o.hidden);
		snprintf(desc, sizeof(desc), "BERT encoder with pre-training heads (Hugging Face BertForPreTraining), %u layers, hidden %u, %u heads, seq %u, batch %u; attention as one fused (flash) kernel.",
			 o.depth, o.hidden, o.heads, o.seq, o.batch);
		break;
	case M_SEQ2SEQ:
		gen_seq2seq(&b, o.batch, o.seq, o.depth, o.hidden);
		snprintf(name, sizeof(name), "seq2seq-%ux%u-t%u", o.depth, o.hidden, o.seq);
		snprintf(desc, sizeof(desc), "LSTM seq2seq with additive attention and input feeding (TF-NMT, tf-swap-out-in 3.2), %u layers, hidden %u, %u steps unrolled, vocabulary 32000, batch %u.",
			 o.depth, o.hidden, o.seq, o.batch);
		break;
	}
	if (b.failed) {
		json_decref(b.layers);
		mp_error_prefix(err, "%s: ", zm->name);
		return NULL;
	}
	catalog = device_find(dev->name) && device_find(dev->name)->source == dev->source;
	{
		size_t k = strlen(desc);

		snprintf(desc + k, sizeof(desc) - k,
			 " Times are roofline estimates for %s (max of FLOPs over the %s peak and bytes over memory bandwidth; backward 2x forward), not measurements; conv algorithm alternatives and their workspaces are estimates too.%s Generated by memplan gen.",
			 dev->name, mp_dtype_name(b.dt), note);
	}
	root = json_object();
	json_object_set_new(root, "format", json_string("memplan-net/1"));
	json_object_set_new(root, "name", json_string(name));
	json_object_set_new(root, "description", json_string(desc));
	gen = json_object();
	json_object_set_new(gen, "model", json_string(zm->name));
	json_object_set_new(gen, "batch", json_integer(o.batch));
	if (zm->options & ZOO_OPT_IMAGE) {
		json_t *im = json_array();

		json_array_append_new(im, json_integer(o.image_h));
		json_array_append_new(im, json_integer(o.image_w));
		json_object_set_new(gen, "image", im);
	}
	if (m == M_RESNET) {
		json_object_set_new(gen, "depth", json_integer(o.depth));
		json_object_set_new(gen, "effective_depth", json_integer(eff));
		json_object_set_new(gen, "stages", dims_json(4, (uint64_t[4]){ n[0], n[1], n[2], n[3] }));
		json_object_set_new(gen, "block", json_string(bottleneck ? "bottleneck" : "basic"));
	}
	if (zm->options & ZOO_OPT_SEQ) {
		json_object_set_new(gen, "layers", json_integer(o.depth));
		json_object_set_new(gen, "hidden", json_integer(o.hidden));
		if (zm->options & ZOO_OPT_HEADS)
			json_object_set_new(gen, "heads", json_integer(o.heads));
		json_object_set_new(gen, "seq", json_integer(o.seq));
	}
	json_object_set_new(gen, "device", json_string(dev->name));
	json_object_set_new(root, "generator", gen);
	json_object_set_new(root, "dtype", json_string(mp_dtype_name(b.dt)));
	json_object_set_new(root, "optimizer", json_string(mp_optimizer_name((enum mp_optimizer)o.optimizer)));
	if (catalog) {
		json_object_set_new(root, "device", json_string(dev->name));
	} else {
		json_t *d = json_object(), *tf = json_object();

		json_object_set_new(d, "name", json_string(dev->name));
		json_object_set_new(d, "memory", json_integer((json_int_t)dev->memory_bytes));
		json_object_set_new(d, "h2d_gbps", json_real(dev->h2d_gbps));
		json_object_set_new(d, "d2h_gbps", json_real(dev->d2h_gbps));
		json_object_set_new(d, "latency_us", json_real(dev->latency_us));
		json_object_set_new(d, "mem_gbps", json_real(dev->mem_gbps));
		for (int k = 0; k < MP_DT__COUNT; k++)
			if (dev->tflops[k] > 0)
				json_object_set_new(tf, mp_dtype_name((enum mp_dtype)k), json_real(dev->tflops[k]));
		json_object_set_new(d, "tflops", tf);
		json_object_set_new(root, "device", d);
	}
	{
		char ts[96];

		snprintf(ts, sizeof(ts), "roofline:%s", dev->name);
		json_object_set_new(root, "time_source", json_string(ts));
	}
	json_object_set_new(root, "layers", b.layers);
	return root;
}
