/*
 * Reading a layer object of memplan-net/1 into its struct lspec, and the
 * values layers share with explicit tensors and ops: times, shapes, sizes,
 * dtypes, the running byte total, parameters, algorithms, "saves" and the
 * conv and pool geometry keys (checked against the shapes by geometry.c).
 * Every error names the JSON path.  O(keys + dimensions + parameters +
 * algorithms) per layer.
 */
#include <string.h>

#include "../base/jget.h"
#include "loader.h"

const char *const geo_keys[GK__COUNT] = { "kernel", "stride", "pad", "dilation", "groups" };

static int parse_time_obj(struct loader *L, json_t *v, const char *path,
			  double ms[3], bool allow_update)
{
	static const char *const keys[] = { "fwd", "bwd", "update", NULL };
	static const char *const keys2[] = { "fwd", "bwd", NULL };
	static const char *const names[] = { "fwd", "bwd", "update" };
	char p[256];

	if (jget_object(v, path, L->err) < 0 ||
	    jget_check_keys(v, path, allow_update ? keys : keys2, L->err) < 0)
		return -1;
	for (int i = 0; i < (allow_update ? 3 : 2); i++) {
		json_t *x = json_object_get(v, names[i]);

		if (!x)
			continue;
		if (jget_ms(x, jget_path(p, sizeof(p), path, names[i]), &ms[i], L->err) < 0)
			return -1;
	}
	return 0;
}

/* shape: array of positive integers -> element count, checked. */
static int parse_shape(struct loader *L, json_t *v, const char *path, uint64_t *elems,
		       uint64_t *dims, unsigned *ndim)
{
	char p[256];
	size_t i;
	json_t *d;

	if (!json_is_array(v)) {
		mp_error_set(L->err, "%s: expected an array of dimensions, got %s", path, jget_type(v));
		return -1;
	}
	if (json_array_size(v) == 0 || json_array_size(v) > MP_MAX_DIMS) {
		mp_error_set(L->err, "%s: expected 1 to 8 dimensions, got %zu", path, json_array_size(v));
		return -1;
	}
	*elems = 1;
	if (ndim)
		*ndim = (unsigned)json_array_size(v);
	json_array_foreach(v, i, d) {
		int64_t x;

		jget_index(p, sizeof(p), path, i);
		if (jget_int(d, p, 1, INT64_C(1) << 40, &x, L->err) < 0) {
			if (json_is_integer(d) && json_integer_value(d) <= 0)
				mp_error_set(L->err, "%s: dimension must be positive, got %lld", p,
					     (long long)json_integer_value(d));
			return -1;
		}
		if (dims)
			dims[i] = (uint64_t)x;
		if (mp_mul_u64(*elems, (uint64_t)x, elems) < 0 || *elems > MP_MAX_BYTES) {
			mp_error_set(L->err, "%s: shape has more than 2^50 elements", path);
			return -1;
		}
	}
	return 0;
}

/* Keep a parsed shape; a dimension above UINT32_MAX makes it unknown (nd 0). */
static void shape_keep(struct mp_shape *sh, const uint64_t *dims, unsigned nd)
{
	sh->nd = 0;
	for (unsigned i = 0; i < nd; i++) {
		if (dims[i] > UINT32_MAX)
			return;
		sh->d[i] = (uint32_t)dims[i];
	}
	sh->nd = (uint8_t)nd;
}

static int shape_bytes(struct loader *L, uint64_t elems, enum mp_dtype dt,
		       const char *path, uint64_t *bytes)
{
	if (mp_mul_u64(elems, mp_dtype_bytes(dt), bytes) < 0 || *bytes > MP_MAX_BYTES) {
		mp_error_set(L->err, "%s: tensor is larger than the 1 PiB memplan accepts", path);
		return -1;
	}
	return 0;
}

/* "shape" or "bytes" on an object: exactly one. */
int parse_size_pair(struct loader *L, json_t *obj, const char *path,
			   enum mp_dtype dt, uint64_t *bytes, uint64_t *elems,
			   uint64_t *dims, unsigned *ndim)
{
	json_t *shape = json_object_get(obj, "shape"), *b = json_object_get(obj, "bytes");
	char p[256];

	if (shape && b) {
		mp_error_set(L->err, "%s: give \"shape\" or \"bytes\", not both", path);
		return -1;
	}
	if (!shape && !b) {
		mp_error_set(L->err, "%s: missing \"shape\" (or \"bytes\")", path);
		return -1;
	}
	if (shape) {
		if (parse_shape(L, shape, jget_path(p, sizeof(p), path, "shape"), elems, dims, ndim) < 0)
			return -1;
		return shape_bytes(L, *elems, dt, p, bytes);
	}
	if (jget_size(b, jget_path(p, sizeof(p), path, "bytes"), bytes, L->err) < 0)
		return -1;
	if (*bytes == 0) {
		mp_error_set(L->err, "%s: must be positive", p);
		return -1;
	}
	*elems = *bytes / mp_dtype_bytes(dt);
	if (*elems == 0)
		*elems = 1;
	return 0;
}

int parse_dtype(struct loader *L, json_t *v, const char *path, enum mp_dtype *dt)
{
	const char *s;
	int d;

	if (jget_string(v, path, &s, L->err) < 0)
		return -1;
	d = mp_dtype_parse(s);
	if (d < 0) {
		mp_error_set(L->err, "%s: unknown dtype '%s' (float32, float16, bfloat16, float64, float8, int8, uint8, int32, int64, bool)", path, s);
		return -1;
	}
	*dt = (enum mp_dtype)d;
	return 0;
}

/* Every size joins a running total (a tensor and what lowering derives from
 * it), capped at MP_MAX_NET_BYTES so that no sum memplan forms can overflow. */
int count_bytes(struct loader *L, uint64_t bytes, const char *key, const char *path)
{
	if (bytes > MP_MAX_NET_BYTES || L->total_bytes > MP_MAX_NET_BYTES - bytes) {
		mp_error_set(L->err, "%s.%s: the net's tensors add up to more than the 64 PiB memplan accepts", path, key);
		return -1;
	}
	L->total_bytes += bytes;
	return 0;
}

static int parse_params(struct loader *L, struct lspec *s, struct mp_layer *ly, json_t *obj,
			const char *path)
{
	json_t *params = json_object_get(obj, "params"), *pb = json_object_get(obj, "param_bytes");
	char p[256], q[300];
	size_t i;
	json_t *v;

	if (params && pb) {
		mp_error_set(L->err, "%s: give \"params\" or \"param_bytes\", not both", path);
		return -1;
	}
	if (params) {
		jget_path(p, sizeof(p), path, "params");
		if (!json_is_array(params)) {
			mp_error_set(L->err, "%s: expected an array of shapes, got %s", p, jget_type(params));
			return -1;
		}
		s->n_params = (uint32_t)json_array_size(params);
		s->param_bytes = arena_array(L->net, s->n_params, sizeof(uint64_t));
		s->param_elems = arena_array(L->net, s->n_params, sizeof(uint64_t));
		ly->params = arena_array(L->net, s->n_params, sizeof(*ly->params));
		json_array_foreach(params, i, v) {
			uint64_t elems, dims[MP_MAX_DIMS];
			unsigned nd;

			jget_index(q, sizeof(q), p, i);
			if (parse_shape(L, v, q, &elems, dims, &nd) < 0 ||
			    shape_bytes(L, elems, s->pdtype, q, &s->param_bytes[i]) < 0)
				return -1;
			s->param_elems[i] = elems;
			shape_keep(&ly->params[i], dims, nd);
		}
	} else if (pb) {
		jget_path(p, sizeof(p), path, "param_bytes");
		/* shapes unknown: nd 0 (the arena zeroes) */
		if (json_is_array(pb)) {
			s->n_params = (uint32_t)json_array_size(pb);
			s->param_bytes = arena_array(L->net, s->n_params, sizeof(uint64_t));
			ly->params = arena_array(L->net, s->n_params, sizeof(*ly->params));
			json_array_foreach(pb, i, v) {
				jget_index(q, sizeof(q), p, i);
				if (jget_size(v, q, &s->param_bytes[i], L->err) < 0)
					return -1;
			}
		} else {
			s->n_params = 1;
			s->param_bytes = arena_array(L->net, 1, sizeof(uint64_t));
			ly->params = arena_array(L->net, 1, sizeof(*ly->params));
			if (jget_size(pb, p, &s->param_bytes[0], L->err) < 0)
				return -1;
		}
	}
	for (uint32_t k = 0; k < s->n_params; k++) {
		if (s->param_bytes[k] == 0) {
			/* only param_bytes can say zero: a shape's dimensions are >= 1 */
			if (json_is_array(pb))
				mp_error_set(L->err, "%s.param_bytes[%u]: must be positive", path, k);
			else
				mp_error_set(L->err, "%s.param_bytes: must be positive", path);
			return -1;
		}
	}
	if (pb) {
		unsigned sz = mp_dtype_bytes(s->pdtype);

		s->param_elems = arena_array(L->net, s->n_params, sizeof(uint64_t));
		for (uint32_t k = 0; k < s->n_params; k++)
			s->param_elems[k] = (s->param_bytes[k] + sz - 1) / sz;
	}
	/* a parameter, then its gradient, master weights and up to two
	 * optimizer states of at most 8 bytes per element each */
	for (uint32_t k = 0; k < s->n_params; k++)
		if (count_bytes(L, s->param_bytes[k], params ? "params" : "param_bytes", path) < 0 ||
		    count_bytes(L, s->param_elems[k] > MP_MAX_NET_BYTES / 32 ? MP_MAX_NET_BYTES + 1 : 32 * s->param_elems[k],
				params ? "params" : "param_bytes", path) < 0)
			return -1;
	return 0;
}

/* "quant": a frozen fc's weight (parameter 0) in 4 bits; its forward and
 * backward dequantize it into a workspace of the layer's dtype. */
static int parse_quant(struct loader *L, struct lspec *s, json_t *v, const char *path)
{
	char p[256];
	const char *name;
	int q;

	jget_path(p, sizeof(p), path, "quant");
	if (jget_string(v, p, &name, L->err) < 0)
		return -1;
	if ((q = mp_quant_parse(name)) < 0) {
		mp_error_set(L->err, "%s: unknown quantization '%s' (none, nf4, nf4-dq)", p, name);
		return -1;
	}
	if (q == MP_Q_NONE)
		return 0;
	if (s->type != MP_L_FC || !s->frozen) {
		mp_error_set(L->err, "%s: only a frozen fc layer's weight is quantized (QLoRA)", p);
		return -1;
	}
	if (s->ws_bytes || s->n_algos) {
		mp_error_set(L->err, "%s: a 4-bit layer's workspace is its dequantized weight: drop \"workspace\" and \"algos\"", p);
		return -1;
	}
	s->quant = (uint8_t)q;
	s->param_bytes[0] = mp_quant_bytes(s->param_elems[0], (enum mp_quant)q);
	s->dq_bytes = s->param_elems[0] * mp_dtype_bytes(s->dtype);
	return count_bytes(L, 2 * s->dq_bytes, "quant", path);
}

static int parse_algos(struct loader *L, struct lspec *s, json_t *v, const char *path)
{
	static const char *const keys[] = { "name", "workspace", "time", "batch", NULL };
	char p[256], q[300];
	size_t i;
	json_t *a;

	if (!json_is_array(v)) {
		mp_error_set(L->err, "%s: expected an array of algorithms, got %s", path, jget_type(v));
		return -1;
	}
	s->n_algos = (uint32_t)json_array_size(v);
	s->algos = arena_array(L->net, s->n_algos, sizeof(*s->algos));
	json_array_foreach(v, i, a) {
		double ms[3] = { -1, -1, -1 };
		json_t *x;

		jget_index(p, sizeof(p), path, i);
		if (jget_object(a, p, L->err) < 0 || jget_check_keys(a, p, keys, L->err) < 0)
			return -1;
		if (!(x = json_object_get(a, "name"))) {
			mp_error_set(L->err, "%s: missing \"name\"", p);
			return -1;
		}
		if (jget_string(x, jget_path(q, sizeof(q), p, "name"), &s->algos[i].name, L->err) < 0)
			return -1;
		s->algos[i].name = mp_arena_strdup(&L->net->arena, s->algos[i].name);
		if ((x = json_object_get(a, "batch"))) {
			int64_t b;

			if (jget_int(x, jget_path(q, sizeof(q), p, "batch"), 1, s->batch, &b, L->err) < 0)
				return -1;
			s->algos[i].batch = b == (int64_t)s->batch ? 0 : (uint32_t)b;
		}
		for (size_t j = 0; j < i; j++)
			if (!strcmp(s->algos[j].name, s->algos[i].name) && s->algos[j].batch == s->algos[i].batch) {
				mp_error_set(L->err, "%s.name: duplicate algorithm '%s'%s", p, s->algos[i].name,
					     s->algos[i].batch ? " at this batch" : "");
				return -1;
			}
		if ((x = json_object_get(a, "workspace")) &&
		    jget_size(x, jget_path(q, sizeof(q), p, "workspace"), &s->algos[i].ws, L->err) < 0)
			return -1;
		if (!(x = json_object_get(a, "time"))) {
			mp_error_set(L->err, "%s: missing \"time\"", p);
			return -1;
		}
		if (parse_time_obj(L, x, jget_path(q, sizeof(q), p, "time"), ms, false) < 0)
			return -1;
		s->algos[i].ms[0] = ms[0];
		s->algos[i].ms[1] = ms[1];
	}
	return 0;
}

static int parse_saves(struct loader *L, struct lspec *s, json_t *v, const char *path)
{
	static const struct { const char *name; unsigned bit; } items[] = {
		{ "input", SAVE_INPUT }, { "output", SAVE_OUTPUT }, { "params", SAVE_PARAMS },
		{ "mask", SAVE_MASK }, { "stats", SAVE_STATS }, { "indices", SAVE_INDICES },
	};
	char p[256];
	size_t i;
	json_t *x;

	if (!json_is_array(v)) {
		mp_error_set(L->err, "%s: expected an array of \"input\", \"output\", \"params\", \"mask\", \"stats\", \"indices\", got %s", path, jget_type(v));
		return -1;
	}
	s->saves = 0;
	json_array_foreach(v, i, x) {
		const char *str;
		size_t k;

		jget_index(p, sizeof(p), path, i);
		if (jget_string(x, p, &str, L->err) < 0)
			return -1;
		for (k = 0; k < sizeof(items) / sizeof(items[0]); k++)
			if (!strcmp(str, items[k].name))
				break;
		if (k == sizeof(items) / sizeof(items[0])) {
			mp_error_set(L->err, "%s: unknown item '%s' (expected input, output, params, mask, stats or indices)", p, str);
			return -1;
		}
		s->saves |= items[k].bit;
	}
	return 0;
}

/* One integer of a geometry key: >= 1 (pad: >= 0), at most INT32_MAX (what
 * cuDNN's descriptors take). */
static int geo_int(struct loader *L, json_t *v, const char *path, int64_t lo, uint32_t *out)
{
	int64_t x;

	if (!json_is_integer(v)) {
		mp_error_set(L->err, "%s: expected an integer, got %s", path, jget_type(v));
		return -1;
	}
	x = json_integer_value(v);
	if (x < lo) {
		mp_error_set(L->err, lo ? "%s: must be positive, got %lld" : "%s: must not be negative, got %lld",
			     path, (long long)x);
		return -1;
	}
	if (x > INT32_MAX) {
		mp_error_set(L->err, "%s: %lld is larger than %d", path, (long long)x, INT32_MAX);
		return -1;
	}
	*out = (uint32_t)x;
	return 0;
}

/* "kernel", "stride", "pad", "dilation": an integer for every spatial
 * dimension or an array of one per dimension (its length is checked against
 * the shapes later); "groups": an integer. */
static uint32_t *geo_raw(struct mp_geom *g, int key)
{
	switch (key) {
	case GK_KERNEL: return g->kernel;
	case GK_STRIDE: return g->stride;
	case GK_PAD: return g->pad;
	case GK_DILATION: return g->dilation;
	default: return &g->groups;
	}
}

static int parse_geo_value(struct loader *L, struct lspec *s, struct mp_layer *ly, int g,
			   json_t *v, const char *path)
{
	uint32_t *val = geo_raw(&ly->geom, g);
	int64_t lo = g == GK_PAD ? 0 : 1;
	char q[300];
	size_t i, n;
	json_t *x;

	if (json_is_integer(v)) {
		if (geo_int(L, v, path, lo, &val[0]) < 0)
			return -1;
		if (g != GK_GROUPS)
			val[1] = val[2] = val[0];
		s->geo_n[g] = 0;
		return 0;
	}
	if (g == GK_GROUPS || !json_is_array(v)) {
		mp_error_set(L->err, "%s: expected %s, got %s", path,
			     g == GK_GROUPS ? "a positive integer" :
			     g == GK_PAD ? "an integer >= 0 or an array of them, one per spatial dimension" :
			     "a positive integer or an array of them, one per spatial dimension",
			     jget_type(v));
		return -1;
	}
	n = json_array_size(v);
	if (n < 1 || n > 3) {
		mp_error_set(L->err, "%s: expected one value per spatial dimension (1 to 3), got %zu", path, n);
		return -1;
	}
	json_array_foreach(v, i, x)
		if (geo_int(L, x, jget_index(q, sizeof(q), path, i), lo, &val[i]) < 0)
			return -1;
	s->geo_n[g] = (uint8_t)n;
	return 0;
}

/*
 * An attention layer's "impl": "flash" (the default; also PyTorch's sdpa)
 * saves its inputs, output and a log-sum-exp per row; "eager" also the
 * softmax probabilities [B, heads, S, S] in the layer's dtype, and runs with
 * float32 scores as workspace ([B, heads, S, S] * 4 bytes, unless
 * "workspace" says otherwise).  Eager needs "heads" and an output [B, S, C].
 */
static int parse_attention(struct loader *L, struct lspec *s, const struct mp_layer *ly, json_t *obj,
			   const char *path)
{
	json_t *h = json_object_get(obj, "heads"), *im = json_object_get(obj, "impl");
	char p[256];
	const char *impl = "flash";
	int64_t heads = 0;
	uint64_t n, b, per;

	if (!h && !im)
		return 0;
	if (s->type != MP_L_ATTENTION) {
		mp_error_set(L->err, "%s.%s: only attention layers have one", path, h ? "heads" : "impl");
		return -1;
	}
	if (h && jget_int(h, jget_path(p, sizeof(p), path, "heads"), 1, INT32_MAX, &heads, L->err) < 0)
		return -1;
	if (im && jget_string(im, jget_path(p, sizeof(p), path, "impl"), &impl, L->err) < 0)
		return -1;
	if (strcmp(impl, "flash") && strcmp(impl, "sdpa") && strcmp(impl, "eager")) {
		mp_error_set(L->err, "%s.impl: unknown attention implementation '%s' (flash, sdpa or eager)", path, impl);
		return -1;
	}
	if (strcmp(impl, "eager"))
		return 0;
	if (!heads || ly->shape.nd != 3) {
		mp_error_set(L->err, "%s: eager attention needs \"heads\" and a shape [batch, seq, hidden]", path);
		return -1;
	}
	/* B * heads * S * S elements: the float32 softmax result, and its cast
	 * to the layer's dtype that the product with v keeps when that is not
	 * float32 (Hugging Face: softmax(..., dtype=float32).to(q.dtype)) */
	per = 4 + (s->dtype != MP_DT_FLOAT32 ? mp_dtype_bytes(s->dtype) : 0);
	if (mp_mul_u64(ly->shape.d[0], (uint64_t)heads, &n) < 0 || mp_mul_u64(n, ly->shape.d[1], &n) < 0 ||
	    mp_mul_u64(n, ly->shape.d[1], &n) < 0 || mp_mul_u64(n, per, &b) < 0 || b > MP_MAX_BYTES) {
		mp_error_set(L->err, "%s: the attention probabilities would be larger than 1 PiB", path);
		return -1;
	}
	s->probs_bytes = b;
	if (json_object_get(obj, "workspace"))
		return count_bytes(L, s->probs_bytes, "impl", path);
	s->ws_bytes = n * 4; /* the float32 scores */
	return count_bytes(L, s->probs_bytes + 2 * s->ws_bytes, "impl", path);
}

int parse_layer(struct loader *L, json_t *obj, uint32_t idx)
{
	static const char *const keys[] = { "name", "type", "inputs", "shape", "bytes",
		"dtype", "params", "param_bytes", "time", "workspace", "algos", "saves",
		"inplace", "mode", "kernel", "stride", "pad", "dilation", "groups", "frozen", "quant", "heads", "impl", "comment", NULL };
	struct lspec *s = &L->ls[idx];
	struct mp_layer *ly = &L->net->layers[idx];
	char path[64], p[256], q[300];
	json_t *v;
	size_t i;

	jget_index(path, sizeof(path), "layers", idx);
	if (jget_check_keys(obj, path, keys, L->err) < 0)
		return -1;
	s->dtype = L->net->dtype;
	s->pdtype = L->net->precision.policy != MP_PREC_NONE ? L->net->precision.params : s->dtype;
	if ((v = json_object_get(obj, "dtype"))) {
		if (parse_dtype(L, v, jget_path(p, sizeof(p), path, "dtype"), &s->dtype) < 0)
			return -1;
		s->pdtype = s->dtype;
	}
	/* inputs */
	v = json_object_get(obj, "inputs");
	if (s->type == MP_L_DATA) {
		if (v && (!json_is_array(v) || json_array_size(v))) {
			mp_error_set(L->err, "%s.inputs: a data layer takes no inputs", path);
			return -1;
		}
	} else {
		jget_path(p, sizeof(p), path, "inputs");
		if (!v) {
			mp_error_set(L->err, "%s: missing \"inputs\" (a %s layer reads at least one layer)", path, mp_layer_type_name(s->type));
			return -1;
		}
		if (!json_is_array(v)) {
			mp_error_set(L->err, "%s: expected an array of layer names, got %s", p, jget_type(v));
			return -1;
		}
		if (json_array_size(v) == 0) {
			mp_error_set(L->err, "%s: a %s layer reads at least one layer", p, mp_layer_type_name(s->type));
			return -1;
		}
		s->n_inputs = (uint32_t)json_array_size(v);
		s->inputs = arena_array(L->net, s->n_inputs, sizeof(int32_t));
		json_t *x;
		json_array_foreach(v, i, x) {
			const char *nm;
			int32_t id;

			jget_index(q, sizeof(q), p, i);
			if (jget_string(x, q, &nm, L->err) < 0)
				return -1;
			id = mp_strmap_get(&L->layer_names, nm);
			if (id < 0) {
				mp_error_set(L->err, "%s: no layer named '%s'", q, nm);
				return -1;
			}
			if ((uint32_t)id == idx) {
				mp_error_set(L->err, "%s: layer '%s' reads itself", q, nm);
				return -1;
			}
			s->inputs[i] = id;
		}
	}
	{
		uint64_t dims[MP_MAX_DIMS];
		unsigned nd = 0;

		if (parse_size_pair(L, obj, path, s->dtype, &s->out_bytes, &s->elems, dims, &nd) < 0)
			return -1;
		s->batch = nd >= 1 && dims[0] <= UINT32_MAX ? (uint32_t)dims[0] : 1;
		s->has_shape = nd >= 1;
		shape_keep(&ly->shape, dims, nd);
		/* output, its gradient, and a mask or statistics */
		if (count_bytes(L, 3 * s->out_bytes, json_object_get(obj, "shape") ? "shape" : "bytes", path) < 0)
			return -1;
		/* saved statistics: two float32 per normalised channel (bn, NCHW),
		 * per row (layernorm, attention's log-sum-exp); without a shape,
		 * bounded by one byte in 64 of the output */
		if (nd >= 2 && s->type == MP_L_BN)
			s->stats_bytes = 8 * dims[1];
		else if (nd >= 2 && s->type == MP_L_RMSNORM)
			s->stats_bytes = 4 * (s->elems / dims[nd - 1]);
		else if (nd >= 2)
			s->stats_bytes = 8 * (s->elems / dims[nd - 1]);
		else
			s->stats_bytes = s->out_bytes / 64;
		if (s->stats_bytes == 0)
			s->stats_bytes = 8;
	}
	if (parse_params(L, s, ly, obj, path) < 0)
		return -1;
	s->ms[0] = s->ms[1] = s->ms[2] = -1;
	if ((v = json_object_get(obj, "time"))) {
		if (parse_time_obj(L, v, jget_path(p, sizeof(p), path, "time"), s->ms, true) < 0)
			return -1;
		if (s->type == MP_L_DATA && s->ms[1] > 0) {
			mp_error_set(L->err, "%s.time.bwd: a data layer has no backward pass (nothing to differentiate)", path);
			return -1;
		}
		if (s->n_params == 0 && s->ms[2] > 0) {
			mp_error_set(L->err, "%s.time.update: the layer has no parameters, so the optimizer never updates it (give \"params\" or drop the time)", path);
			return -1;
		}
		s->timed = true;
	}
	if ((v = json_object_get(obj, "workspace")) &&
	    (jget_size(v, jget_path(p, sizeof(p), path, "workspace"), &s->ws_bytes, L->err) < 0 ||
	     count_bytes(L, 2 * s->ws_bytes, "workspace", path) < 0))
		return -1;
	if ((v = json_object_get(obj, "algos"))) {
		if (parse_algos(L, s, v, jget_path(p, sizeof(p), path, "algos")) < 0)
			return -1;
		if (!s->timed && s->n_algos && s->algos[0].batch) {
			mp_error_set(L->err, "%s.algos[0]: without a layer \"time\", the first algorithm is the default and must be for the whole batch", path);
			return -1;
		}
		if (!s->timed && s->n_algos) {
			/* no default implementation: the first algorithm is it */
			s->ms[0] = s->algos[0].ms[0];
			s->ms[1] = s->algos[0].ms[1];
			s->ws_bytes = s->algos[0].ws;
			s->timed = true;
		}
	}
	s->pool_max = true;
	if ((v = json_object_get(obj, "mode"))) {
		const char *m;

		jget_path(p, sizeof(p), path, "mode");
		if (s->type != MP_L_POOL) {
			mp_error_set(L->err, "%s: only pool layers have a mode", p);
			return -1;
		}
		if (jget_string(v, p, &m, L->err) < 0)
			return -1;
		if (strcmp(m, "max") && strcmp(m, "avg")) {
			mp_error_set(L->err, "%s: unknown pool mode '%s' (max or avg)", p, m);
			return -1;
		}
		s->pool_max = !strcmp(m, "max");
	}
	for (int g = 0; g < GK__COUNT; g++) {
		if (!(v = json_object_get(obj, geo_keys[g])))
			continue;
		jget_path(p, sizeof(p), path, geo_keys[g]);
		if (g == GK_GROUPS && s->type != MP_L_CONV) {
			mp_error_set(L->err, "%s: only conv layers have groups", p);
			return -1;
		}
		if (s->type != MP_L_CONV && s->type != MP_L_POOL) {
			mp_error_set(L->err, "%s: only conv and pool layers have a %s", p, geo_keys[g]);
			return -1;
		}
		if (parse_geo_value(L, s, ly, g, v, p) < 0)
			return -1;
		s->geo_given |= 1u << g;
	}
	if ((v = json_object_get(obj, "inplace"))) {
		int b;

		if (jget_bool(v, jget_path(p, sizeof(p), path, "inplace"), &b, L->err) < 0)
			return -1;
		s->inplace = b;
	}
	if (s->type == MP_L_RESHAPE)
		s->inplace = true;
	if (parse_attention(L, s, ly, obj, path) < 0)
		return -1;
	if ((v = json_object_get(obj, "frozen"))) {
		int b;

		if (jget_bool(v, jget_path(p, sizeof(p), path, "frozen"), &b, L->err) < 0)
			return -1;
		if (b && s->n_params == 0) {
			mp_error_set(L->err, "%s: the layer has no parameters to freeze", p);
			return -1;
		}
		s->frozen = b;
		if (b && s->ms[2] > 0) {
			mp_error_set(L->err, "%s.time.update: a frozen layer is never updated (drop the time or \"frozen\")", path);
			return -1;
		}
	}
	if ((v = json_object_get(obj, "quant")) && parse_quant(L, s, v, path) < 0)
		return -1;
	s->saves = default_saves(s, &ly->shape, L->net->framework);
	if ((v = json_object_get(obj, "saves")) &&
	    parse_saves(L, s, v, jget_path(p, sizeof(p), path, "saves")) < 0)
		return -1;
	s->saves_given = v != NULL;
	if ((v = json_object_get(obj, "comment")) && !json_is_string(v)) {
		mp_error_set(L->err, "%s.comment: expected a string, got %s", path, jget_type(v));
		return -1;
	}
	return 0;
}
