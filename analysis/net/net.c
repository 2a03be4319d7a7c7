/*
 * Loading and lowering memplan-net/1 (memplan-net(5)).  Layers are parsed,
 * checked (names, inputs, sizes, times, in-place safety, cycles), given their
 * conv and pool geometry (checked when the file gives it, inferred from the
 * shapes when not), then lowered
 * in file order to forward, backward and optimizer ops over tensors.  Explicit
 * "tensors" and "ops" are appended and may name lowered tensors.
 * O(layers + ops + tensor uses), with hash maps for names.
 */
#include "net.h"

#include <errno.h>
#include <sys/stat.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/jget.h"

static const char *const kind_names[MP_TK__COUNT] = {
	"input", "activation", "gradient", "parameter", "parameter_gradient",
	"optimizer_state", "workspace",
};

const char *mp_tensor_kind_name(enum mp_tensor_kind k)
{
	return k < MP_TK__COUNT ? kind_names[k] : "?";
}

const char *mp_phase_name(enum mp_phase p)
{
	return p == MP_PHASE_FWD ? "forward" : p == MP_PHASE_BWD ? "backward" : "optimizer";
}

static const char *const type_names[MP_L__COUNT] = {
	"data", "conv", "fc", "relu", "sigmoid", "tanh", "elu", "gelu", "silu",
	"pool", "lrn", "bn", "layernorm", "dropout", "softmax", "loss", "add",
	"concat", "embedding", "attention", "reshape", "custom", "op",
};

const char *mp_layer_type_name(enum mp_layer_type t)
{
	return t < MP_L__COUNT ? type_names[t] : "?";
}

int mp_layer_type_parse(const char *s)
{
	static const struct { const char *alias; enum mp_layer_type t; } aliases[] = {
		{ "linear", MP_L_FC }, { "matmul", MP_L_FC }, { "batchnorm", MP_L_BN },
		{ "flatten", MP_L_RESHAPE }, { "view", MP_L_RESHAPE },
		{ "input", MP_L_DATA }, { "swish", MP_L_SILU },
	};
	for (int i = 0; i < MP_L_OP; i++)
		if (!strcmp(s, type_names[i]))
			return i;
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		if (!strcmp(s, aliases[i].alias))
			return (int)aliases[i].t;
	return -1;
}

const char *mp_optimizer_name(enum mp_optimizer o)
{
	static const char *const n[] = { "none", "sgd", "momentum", "adam" };
	return n[o];
}

/* What a layer's backward reads, besides the gradient of its output. */
enum {
	SAVE_INPUT = 1, SAVE_OUTPUT = 2, SAVE_PARAMS = 4, SAVE_MASK = 8,
	SAVE_STATS = 16,
};

/* The lowering table of memplan-net(5). */
static unsigned default_saves(enum mp_layer_type t, int pool_max)
{
	switch (t) {
	case MP_L_CONV: case MP_L_FC: return SAVE_INPUT | SAVE_PARAMS;
	case MP_L_RELU: case MP_L_SIGMOID: case MP_L_TANH: case MP_L_ELU:
	case MP_L_SOFTMAX: return SAVE_OUTPUT;
	case MP_L_GELU: case MP_L_SILU: case MP_L_LOSS: case MP_L_EMBEDDING:
		return SAVE_INPUT;
	case MP_L_POOL: return pool_max ? SAVE_INPUT | SAVE_OUTPUT : 0;
	case MP_L_LRN: return SAVE_INPUT | SAVE_OUTPUT;
	case MP_L_BN: case MP_L_LAYERNORM: return SAVE_INPUT | SAVE_STATS | SAVE_PARAMS;
	case MP_L_DROPOUT: return SAVE_MASK;
	case MP_L_ATTENTION: return SAVE_INPUT | SAVE_OUTPUT | SAVE_STATS | SAVE_PARAMS;
	case MP_L_CUSTOM: return SAVE_INPUT | SAVE_OUTPUT | SAVE_PARAMS;
	default: return 0;
	}
}

/* Conv and pool geometry keys (memplan-net(5) "Geometry"). */
enum { GK_KERNEL, GK_STRIDE, GK_PAD, GK_DILATION, GK_GROUPS, GK__COUNT };
static const char *const geo_keys[GK__COUNT] = { "kernel", "stride", "pad", "dilation", "groups" };

/* A layer while loading: what the JSON said, before lowering. */
struct lspec {
	const char *name;
	enum mp_layer_type type;
	enum mp_dtype dtype;
	uint32_t n_inputs;
	int32_t *inputs;         /* [n_inputs] layer ids */
	uint64_t out_bytes, elems, stats_bytes;
	uint32_t n_params;
	uint64_t *param_bytes;   /* [n_params] */
	double ms[3];            /* fwd, bwd, update; <0: not given */
	uint64_t ws_bytes;
	uint32_t n_algos;
	struct { const char *name; uint64_t ws; double ms[2]; uint32_t batch; } *algos;
	uint32_t batch;          /* first dimension of the shape; 1 without one */
	bool per_sample;         /* has a shape whose first dimension is the net's batch */
	bool has_shape;
	/* the shapes and the geometry go straight to net->layers[] (no copy
	 * per layer); the geometry keys' values wait there, in geom, until
	 * layer_geometry checks them */
	unsigned geo_given;      /* bit (1 << GK_*) per geometry key in the file */
	uint8_t geo_n[GK__COUNT]; /* 0: one integer for every dimension; else the array's length */
	unsigned saves;
	bool inplace, pool_max, timed;
	/* derived */
	bool needs_grad;
	uint32_t n_consumers;
	int32_t first_consumer;  /* for in-place checks */
};

struct loader {
	struct mp_net *net;
	struct mp_error *err;
	struct lspec *ls;        /* [n_layers] */
	uint32_t cap_tensors, cap_ops;
	struct mp_strmap tensor_names, op_names, layer_names;
	/* Lowered names are unique by construction: layer names are, and no
	 * generated suffix (.out, .dout, .paramK, .paramK.grad, .paramK.m, ...)
	 * is a proper suffix of another.  The tensor and op maps are filled only
	 * once explicit tensors or ops need lookups (maps_live). */
	bool maps_live;
	uint64_t total_bytes;    /* running total, see count_bytes */
};

static void maps_start(struct loader *L)
{
	if (L->maps_live)
		return;
	L->maps_live = true;
	mp_strmap_reserve(&L->tensor_names, L->net->n_tensors + 64);
	mp_strmap_reserve(&L->op_names, L->net->n_ops + 64);
	for (uint32_t i = 0; i < L->net->n_tensors; i++)
		mp_strmap_put(&L->tensor_names, L->net->tensors[i].name, (int32_t)i);
	for (uint32_t i = 0; i < L->net->n_ops; i++)
		mp_strmap_put(&L->op_names, L->net->ops[i].name, (int32_t)i);
}

static int32_t add_tensor_dt(struct loader *L, const char *name, uint64_t bytes,
			     enum mp_tensor_kind kind, int32_t layer, enum mp_dtype dt);

static void *arena_array(struct mp_net *net, size_t n, size_t elem)
{
	return mp_arena_alloc(&net->arena, n * elem);
}

static const char *fmt_name(struct mp_net *net, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = mp_arena_alloc(&net->arena, la + lb + 1);

	memcpy(s, a, la);
	memcpy(s + la, b, lb + 1);
	return s;
}

static int32_t add_tensor(struct loader *L, const char *name, uint64_t bytes,
			  enum mp_tensor_kind kind, int32_t layer)
{
	return add_tensor_dt(L, name, bytes, kind, layer,
			     layer >= 0 && L->ls ? L->ls[layer].dtype : L->net->dtype);
}

static int32_t add_tensor_dt(struct loader *L, const char *name, uint64_t bytes,
			     enum mp_tensor_kind kind, int32_t layer, enum mp_dtype dt)
{
	struct mp_net *net = L->net;
	struct mp_tensor *t;
	int32_t id = (int32_t)net->n_tensors;

	mp_grow((void **)&net->tensors, &L->cap_tensors, net->n_tensors + 1, sizeof(*t));
	t = &net->tensors[net->n_tensors++];
	t->name = name;
	t->bytes = bytes;
	t->kind = kind;
	t->producer = -1;
	t->layer = layer;
	t->dtype = dt;
	t->per_sample = false;
	if (L->maps_live && mp_strmap_put(&L->tensor_names, name, id) >= 0) {
		net->n_tensors--;
		return -1;
	}
	return id;
}

static struct mp_op *add_op(struct loader *L, const char *name, enum mp_phase ph,
			    enum mp_layer_type type, int32_t layer, int32_t *id)
{
	struct mp_net *net = L->net;
	struct mp_op *op;

	*id = (int32_t)net->n_ops;
	if (L->maps_live && mp_strmap_put(&L->op_names, name, *id) >= 0)
		return NULL;
	mp_grow((void **)&net->ops, &L->cap_ops, net->n_ops + 1, sizeof(*op));
	op = &net->ops[net->n_ops++];
	memset(op, 0, sizeof(*op));
	op->name = name;
	op->phase = ph;
	op->type = type;
	op->layer = layer;
	op->ws = -1;
	op->fwd = -1;
	op->index = (uint32_t)*id;
	op->json_index = -1;
	return op;
}

/* Growable id list used while building an op's inputs and outputs, with
 * O(1) deduplication: mark[id] == gen for ids already in the current list
 * (an op may list 10^5 inputs; a scan per add would be quadratic). */
struct idlist {
	uint32_t n, cap;
	int32_t *v;
	uint32_t *pos;          /* [n] JSON position of each id (explicit ops) */
	uint32_t mark_cap, gen;
	uint32_t *mark;         /* [mark_cap] */
};

/* Add id; returns 1 if it was new in this list. */
static int idl_add_at(struct idlist *l, int32_t id, uint32_t json_pos)
{
	if ((uint32_t)id >= l->mark_cap) {
		uint32_t old = l->mark_cap;

		mp_grow((void **)&l->mark, &l->mark_cap, (uint32_t)id + 1, sizeof(*l->mark));
		memset(l->mark + old, 0, (l->mark_cap - old) * sizeof(*l->mark));
	}
	if (l->gen == 0)
		l->gen = 1;
	if (l->mark[id] == l->gen)
		return 0;
	l->mark[id] = l->gen;
	if (l->n + 1 > l->cap) {
		mp_grow((void **)&l->v, &l->cap, l->n + 1, sizeof(*l->v));
		l->pos = mp_xrealloc(l->pos, l->cap * sizeof(*l->pos));
	}
	l->pos[l->n] = json_pos;
	l->v[l->n++] = id;
	return 1;
}

static void idl_add(struct idlist *l, int32_t id)
{
	idl_add_at(l, id, 0);
}

static void idl_release(struct idlist *l)
{
	free(l->v);
	free(l->pos);
	free(l->mark);
}

static int32_t *idl_commit(struct mp_net *net, struct idlist *l, uint32_t *n)
{
	int32_t *a = arena_array(net, l->n, sizeof(*a));

	if (l->n)
		memcpy(a, l->v, l->n * sizeof(*a));
	*n = l->n;
	l->n = 0;
	l->gen++;
	return a;
}

/* ---- parsing ---------------------------------------------------------- */

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
static int parse_size_pair(struct loader *L, json_t *obj, const char *path,
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

static int parse_dtype(struct loader *L, json_t *v, const char *path, enum mp_dtype *dt)
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
static int count_bytes(struct loader *L, uint64_t bytes, const char *key, const char *path)
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
		ly->params = arena_array(L->net, s->n_params, sizeof(*ly->params));
		json_array_foreach(params, i, v) {
			uint64_t elems, dims[MP_MAX_DIMS];
			unsigned nd;

			jget_index(q, sizeof(q), p, i);
			if (parse_shape(L, v, q, &elems, dims, &nd) < 0 ||
			    shape_bytes(L, elems, s->dtype, q, &s->param_bytes[i]) < 0)
				return -1;
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
		/* a parameter, its gradient and up to two optimizer states */
		if (count_bytes(L, 4 * s->param_bytes[k], params ? "params" : "param_bytes", path) < 0)
			return -1;
	}
	return 0;
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
		{ "mask", SAVE_MASK }, { "stats", SAVE_STATS },
	};
	char p[256];
	size_t i;
	json_t *x;

	if (!json_is_array(v)) {
		mp_error_set(L->err, "%s: expected an array of \"input\", \"output\", \"params\", \"mask\", \"stats\", got %s", path, jget_type(v));
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
			mp_error_set(L->err, "%s: unknown item '%s' (expected input, output, params, mask or stats)", p, str);
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

static int parse_layer(struct loader *L, json_t *obj, uint32_t idx)
{
	static const char *const keys[] = { "name", "type", "inputs", "shape", "bytes",
		"dtype", "params", "param_bytes", "time", "workspace", "algos", "saves",
		"inplace", "mode", "kernel", "stride", "pad", "dilation", "groups", "comment", NULL };
	struct lspec *s = &L->ls[idx];
	struct mp_layer *ly = &L->net->layers[idx];
	char path[64], p[256], q[300];
	json_t *v;
	size_t i;

	jget_index(path, sizeof(path), "layers", idx);
	if (jget_check_keys(obj, path, keys, L->err) < 0)
		return -1;
	s->dtype = L->net->dtype;
	if ((v = json_object_get(obj, "dtype")) &&
	    parse_dtype(L, v, jget_path(p, sizeof(p), path, "dtype"), &s->dtype) < 0)
		return -1;
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
	s->saves = default_saves(s->type, s->pool_max);
	if ((v = json_object_get(obj, "saves")) &&
	    parse_saves(L, s, v, jget_path(p, sizeof(p), path, "saves")) < 0)
		return -1;
	if ((v = json_object_get(obj, "inplace"))) {
		int b;

		if (jget_bool(v, jget_path(p, sizeof(p), path, "inplace"), &b, L->err) < 0)
			return -1;
		s->inplace = b;
	}
	if (s->type == MP_L_RESHAPE)
		s->inplace = true;
	if ((v = json_object_get(obj, "comment")) && !json_is_string(v)) {
		mp_error_set(L->err, "%s.comment: expected a string, got %s", path, jget_type(v));
		return -1;
	}
	return 0;
}

/* ---- geometry ---------------------------------------------------------- */

/* One spatial output size: floor((in + 2 pad - dilation (kernel - 1) - 1) /
 * stride) + 1, or -1 when the window is wider than the padded input.  Every
 * argument is below 2^33 (dimensions are uint32, geometry values int32), so
 * the arithmetic fits int64. */
static int64_t geo_out(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
	int64_t num = in + 2 * p - d * (k - 1) - 1;

	return num < 0 ? -1 : num / s + 1;
}

/* The smallest pad in [0, k - 1] giving out (dilation 1), in closed form: the
 * output grows with the pad, so the first pad reaching out is the only
 * candidate.  false when none. */
static bool pad_for(int64_t in, int64_t out, int64_t k, int64_t s, uint32_t *pad)
{
	int64_t lo = (out - 1) * s + k - in, p = lo <= 0 ? 0 : (lo + 1) / 2;

	if (p > k - 1 || geo_out(in, k, s, p, 1) != out)
		return false;
	*pad = (uint32_t)p;
	return true;
}

/* Pool window for stride s: kernel s or s + 1 with pad 0 covering the input
 * exactly ((in - kernel) divisible by s, no row left over), then kernel s or
 * s + 1 with the smallest pad that gives out. */
static bool pool_fit(int64_t in, int64_t out, int64_t s, uint32_t *k, uint32_t *pad)
{
	for (int64_t kk = s; kk <= s + 1; kk++)
		if (kk <= INT32_MAX && geo_out(in, kk, s, 0, 1) == out && (in - kk) % s == 0) {
			*k = (uint32_t)kk;
			*pad = 0;
			return true;
		}
	for (int64_t kk = s; kk <= s + 1; kk++)
		if (kk <= INT32_MAX && pad_for(in, out, kk, s, pad)) {
			*k = (uint32_t)kk;
			return true;
		}
	return false;
}

/*
 * Geometry of a conv or pool layer that gives no geometry keys, from its
 * shapes (memplan-net(5) "Geometry"); the geometry's nsp stays 0 when the shapes
 * do not fit the rule.  Never an error: analysis does not need geometry.
 * O(spatial dimensions).
 */
static void geometry_infer(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	struct mp_layer *ly = &L->net->layers[idx];
	const struct mp_shape *o = &ly->shape, *x, *w = NULL;
	struct mp_geom g = { 0 };
	uint32_t nsp;

	if (s->n_inputs != 1 || o->nd < 3 || o->nd > 5)
		return;
	x = &L->net->layers[s->inputs[0]].shape;
	if (x->nd != o->nd || x->d[0] != o->d[0])
		return;
	nsp = o->nd - 2u;
	if (s->type == MP_L_CONV) {
		if (!s->n_params)
			return;
		w = &ly->params[0];
		if (w->nd != o->nd || w->d[0] != o->d[1] || x->d[1] % w->d[1])
			return;
		g.groups = x->d[1] / w->d[1];
		if (o->d[1] % g.groups)
			return;
	} else {
		if (x->d[1] != o->d[1])
			return;
		g.groups = 1;
	}
	for (uint32_t i = 0; i < nsp; i++) {
		int64_t in = x->d[2 + i], out = o->d[2 + i], s0 = (in + out / 2) / out;
		bool found = false;

		if (s0 < 1)
			s0 = 1;
		g.dilation[i] = 1;
		/* the rounded ratio, then one less and one more */
		for (int t = 0; t < 3 && !found; t++) {
			int64_t st = t == 0 ? s0 : t == 1 ? s0 - 1 : s0 + 1;

			if (st < 1 || st > INT32_MAX)
				continue;
			if (s->type == MP_L_CONV) {
				g.kernel[i] = w->d[2 + i];
				found = g.kernel[i] <= INT32_MAX &&
					pad_for(in, out, g.kernel[i], st, &g.pad[i]);
			} else {
				found = pool_fit(in, out, st, &g.kernel[i], &g.pad[i]);
			}
			g.stride[i] = (uint32_t)st;
		}
		if (!found)
			return;
	}
	g.nsp = (uint8_t)nsp;
	ly->geom = g;
}

static void fmt_dims(char *buf, size_t n, const uint32_t *d, unsigned nd)
{
	size_t used = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < nd && used < n; i++)
		used += (size_t)snprintf(buf + used, n - used, "%s%u", i ? ", " : "", d[i]);
}

/* Why a shape is unknown, for "geometry needs shapes" messages. */
static const char *no_shape_why(const struct lspec *s)
{
	return s->has_shape ? "has a dimension above 4294967295" : "has \"bytes\", not a \"shape\"";
}

/*
 * Geometry of a conv or pool layer that gives geometry keys: missing keys
 * take their defaults (kernel: the weight's; stride 1, for pool the kernel;
 * pad 0; dilation 1; groups 1), then everything is checked against the
 * shapes.  -1 with the JSON path of what disagrees.  O(spatial dimensions).
 */
static int geometry_given(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	struct mp_layer *ly = &L->net->layers[idx];
	const struct mp_geom *raw = &ly->geom; /* the keys' values, as parsed */
	const struct mp_shape *o = &ly->shape, *x, *w = NULL;
	struct mp_geom g = { 0 };
	char path[64], p[256], a[128], b[128];
	const char *in_name;
	uint32_t nsp, c, k;
	int first = 0;


	jget_index(path, sizeof(path), "layers", idx);
	while (!(s->geo_given & (1u << first)))
		first++;
	jget_path(p, sizeof(p), path, geo_keys[first]);
	if (!o->nd) {
		mp_error_set(L->err, "%s: geometry needs shapes: '%s' %s", p, s->name, no_shape_why(s));
		return -1;
	}
	if (s->n_inputs != 1) {
		mp_error_set(L->err, "%s: geometry needs exactly one input; '%s' reads %u", p, s->name, s->n_inputs);
		return -1;
	}
	x = &L->net->layers[s->inputs[0]].shape;
	in_name = L->ls[s->inputs[0]].name;
	if (!x->nd) {
		mp_error_set(L->err, "%s: geometry needs shapes: the input '%s' %s", p, in_name,
			     no_shape_why(&L->ls[s->inputs[0]]));
		return -1;
	}
	if (o->nd < 3 || o->nd > 5) {
		mp_error_set(L->err, "%s: geometry needs a shape [N, C, spatial...] with 1 to 3 spatial dimensions; '%s' has %u dimensions",
			     p, s->name, o->nd);
		return -1;
	}
	if (x->nd != o->nd) {
		mp_error_set(L->err, "%s: geometry needs the input's shape to have as many dimensions: '%s' has %u, its input '%s' %u",
			     p, s->name, o->nd, in_name, x->nd);
		return -1;
	}
	nsp = o->nd - 2u;
	for (int gk = 0; gk < GK_GROUPS; gk++)
		if (s->geo_n[gk] && s->geo_n[gk] != nsp) {
			mp_error_set(L->err, "%s.%s: expected %u values, one per spatial dimension of [N, C, ...], got %u",
				     path, geo_keys[gk], nsp, s->geo_n[gk]);
			return -1;
		}
	if (o->d[0] != x->d[0]) {
		mp_error_set(L->err, "%s.shape[0]: batch %u differs from the input '%s' batch %u",
			     path, o->d[0], in_name, x->d[0]);
		return -1;
	}
	c = x->d[1];
	k = o->d[1];
	g.groups = s->geo_given & (1u << GK_GROUPS) ? raw->groups : 1;
	if (s->type == MP_L_CONV) {
		uint32_t want[MP_MAX_DIMS];

		if (!s->n_params) {
			mp_error_set(L->err, "%s: geometry needs the conv's weight in \"params\"", p);
			return -1;
		}
		w = &ly->params[0];
		if (!w->nd) {
			mp_error_set(L->err, "%s: geometry needs shapes: the weight is given as \"param_bytes\"", p);
			return -1;
		}
		if (c % g.groups || k % g.groups) {
			mp_error_set(L->err, "%s.groups: %u does not divide the %s's %u channels", path, g.groups,
				     c % g.groups ? "input" : "output", c % g.groups ? c : k);
			return -1;
		}
		if (w->nd != o->nd) {
			fmt_dims(a, sizeof(a), w->d, w->nd);
			mp_error_set(L->err, "%s.params[0]: the weight [%s] has %u dimensions, not the %u of [K, C/groups, kernel...]",
				     path, a, w->nd, o->nd);
			return -1;
		}
		want[0] = k;
		want[1] = c / g.groups;
		for (uint32_t i = 0; i < nsp; i++)
			want[2 + i] = s->geo_given & (1u << GK_KERNEL) ? raw->kernel[i] : w->d[2 + i];
		if (memcmp(w->d, want, o->nd * sizeof(*want))) {
			fmt_dims(a, sizeof(a), w->d, w->nd);
			fmt_dims(b, sizeof(b), want, o->nd);
			mp_error_set(L->err, "%s.params[0]: the weight [%s] is not [K, C/groups, kernel...] = [%s]",
				     path, a, b);
			return -1;
		}
		for (uint32_t i = 0; i < nsp; i++) {
			g.kernel[i] = want[2 + i];
			if (g.kernel[i] > INT32_MAX) {
				mp_error_set(L->err, "%s.params[0][%u]: a kernel of %u is larger than %d", path, 2 + i,
					     g.kernel[i], INT32_MAX);
				return -1;
			}
		}
	} else {
		if (!(s->geo_given & (1u << GK_KERNEL))) {
			mp_error_set(L->err, "%s: a pool layer's geometry needs \"kernel\"", p);
			return -1;
		}
		if (k != c) {
			mp_error_set(L->err, "%s.shape[1]: a pool layer keeps its input's channels: %u, its input '%s' has %u",
				     path, k, in_name, c);
			return -1;
		}
		for (uint32_t i = 0; i < nsp; i++)
			g.kernel[i] = raw->kernel[i];
	}
	for (uint32_t i = 0; i < nsp; i++) {
		int64_t got;

		g.stride[i] = s->geo_given & (1u << GK_STRIDE) ? raw->stride[i] :
			      s->type == MP_L_POOL ? g.kernel[i] : 1;
		g.pad[i] = s->geo_given & (1u << GK_PAD) ? raw->pad[i] : 0;
		g.dilation[i] = s->geo_given & (1u << GK_DILATION) ? raw->dilation[i] : 1;
		got = geo_out(x->d[2 + i], g.kernel[i], g.stride[i], g.pad[i], g.dilation[i]);
		if (got < 0) {
			mp_error_set(L->err, "%s.shape[%u]: the window, %u*(%u - 1) + 1 = %llu wide, is wider than the input '%s' with its padding, %u + 2*%u = %llu",
				     path, 2 + i, g.dilation[i], g.kernel[i],
				     (unsigned long long)g.dilation[i] * (g.kernel[i] - 1) + 1, in_name, x->d[2 + i], g.pad[i],
				     (unsigned long long)x->d[2 + i] + 2ull * g.pad[i]);
			return -1;
		}
		if (got != o->d[2 + i]) {
			mp_error_set(L->err, "%s.shape[%u]: expected floor((%u + 2*%u - %u*(%u - 1) - 1) / %u) + 1 = %lld from the input '%s' and the geometry, got %u",
				     path, 2 + i, x->d[2 + i], g.pad[i], g.dilation[i], g.kernel[i], g.stride[i],
				     (long long)got, in_name, o->d[2 + i]);
			return -1;
		}
	}
	g.nsp = (uint8_t)nsp;
	g.given = true;
	ly->geom = g;
	return 0;
}

static int layer_geometry(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];

	if (s->type != MP_L_CONV && s->type != MP_L_POOL)
		return 0;
	if (s->geo_given)
		return geometry_given(L, idx);
	geometry_infer(L, idx);
	return 0;
}

/* Does an input of shape a broadcast to b (NumPy rules: trailing dimensions
 * equal, or 1 in a)? */
static bool broadcasts(const struct mp_shape *a, const struct mp_shape *b)
{
	if (a->nd > b->nd)
		return false;
	for (unsigned k = 1; k <= a->nd; k++)
		if (a->d[a->nd - k] != 1 && a->d[a->nd - k] != b->d[b->nd - k])
			return false;
	return true;
}

/* Do every input of a concat and its output have a shape, with one batch
 * (first dimension)?  Then an output smaller than its inputs is a concat of
 * crops or slices of each sample that the shapes state (U-Net's copy and
 * crop, one state out of an RNN step's packed ones); without shapes nothing
 * says so. */
static bool concat_shaped(const struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	const struct mp_shape *o = &L->net->layers[idx].shape;

	if (!o->nd)
		return false;
	for (uint32_t k = 0; k < s->n_inputs; k++) {
		const struct mp_shape *in = &L->net->layers[s->inputs[k]].shape;

		if (!in->nd || in->d[0] != o->d[0])
			return false;
	}
	return true;
}

/* Sizes that an add or a concat layer fixes: every input of an add is the
 * output's size (or broadcasts to its shape); a concat's output holds its
 * inputs, no more and no less, or crops of them (concat_shaped).  In bytes
 * where every dtype is the output's (a size given in bytes need not be a
 * whole number of elements), else in elements. */
static int check_sizes(struct loader *L, uint32_t idx)
{
	const struct lspec *s = &L->ls[idx];
	const struct mp_layer *ly = &L->net->layers[idx];
	bool bytes = true;
	uint64_t sum = 0, out;
	const char *unit;

	if (s->type != MP_L_ADD && s->type != MP_L_CONCAT)
		return 0;
	for (uint32_t k = 0; k < s->n_inputs; k++)
		if (L->ls[s->inputs[k]].dtype != s->dtype)
			bytes = false;
	out = bytes ? s->out_bytes : s->elems;
	unit = bytes ? "bytes" : "elements";
	for (uint32_t k = 0; k < s->n_inputs; k++) {
		const struct lspec *in = &L->ls[s->inputs[k]];
		const struct mp_layer *il = &L->net->layers[s->inputs[k]];
		uint64_t size = bytes ? in->out_bytes : in->elems;

		if (mp_add_u64(sum, size, &sum) < 0) {
			mp_error_set(L->err, "layers[%u]: the inputs of '%s' hold more than 2^64 %s", idx, s->name, unit);
			return -1;
		}
		if (s->type != MP_L_ADD || size == out)
			continue;
		if (il->shape.nd && ly->shape.nd && broadcasts(&il->shape, &ly->shape))
			continue;
		mp_error_set(L->err, "layers[%u].inputs[%u]: '%s' has %llu %s, but the add '%s' makes %llu%s",
			     idx, k, in->name, (unsigned long long)size, unit, s->name, (unsigned long long)out,
			     il->shape.nd && ly->shape.nd ? " and its shape does not broadcast to the output's"
							  : " (give both shapes for a broadcasting add)");
		return -1;
	}
	if (s->type != MP_L_CONCAT || sum == out)
		return 0;
	if (sum > out && concat_shaped(L, idx))
		return 0;
	mp_error_set(L->err, "layers[%u]: the concat '%s' makes %llu %s, but its inputs hold %llu%s",
		     idx, s->name, (unsigned long long)out, unit, (unsigned long long)sum,
		     sum < out ? "" : " (for a concat of crops or slices, give the shapes of the output and of every input, with one batch)");
	return -1;
}

static int lspec_algo_ws(const struct lspec *s)
{
	for (uint32_t k = 0; k < s->n_algos; k++)
		if (s->algos[k].ws)
			return 1;
	return 0;
}

/* In-place output aliases the input tensor: check no reader can see the
 * overwrite (memplan-net(5), "in place"). */
static int check_inplace(struct loader *L, uint32_t idx)
{
	struct lspec *s = &L->ls[idx];
	char path[64];

	if (s->type == MP_L_RESHAPE) {
		if (s->n_inputs != 1) {
			mp_error_set(L->err, "layers[%u].inputs: a reshape layer has exactly one input", idx);
			return -1;
		}
		if (s->out_bytes != L->ls[s->inputs[0]].out_bytes) {
			mp_error_set(L->err, "layers[%u].shape: a reshape keeps its input's size: '%s' is %llu bytes, its input '%s' is %llu bytes",
				     idx, s->name, (unsigned long long)s->out_bytes, L->ls[s->inputs[0]].name,
				     (unsigned long long)L->ls[s->inputs[0]].out_bytes);
			return -1;
		}
		return 0; /* a view writes nothing */
	}
	snprintf(path, sizeof(path), "layers[%u].inplace", idx);
	if (s->n_inputs != 1) {
		mp_error_set(L->err, "%s: an in-place layer has exactly one input", path);
		return -1;
	}
	if (s->out_bytes != L->ls[s->inputs[0]].out_bytes) {
		mp_error_set(L->err, "%s: output of '%s' (%llu bytes) differs from its input '%s' (%llu bytes)",
			     path, s->name, (unsigned long long)s->out_bytes,
			     L->ls[s->inputs[0]].name, (unsigned long long)L->ls[s->inputs[0]].out_bytes);
		return -1;
	}
	if (s->needs_grad && (s->saves & SAVE_INPUT)) {
		mp_error_set(L->err, "%s: '%s' saves its input for backward, which updating it in place destroys", path, s->name);
		return -1;
	}
	/* walk back the chain of layers sharing this buffer */
	for (int32_t cur = s->inputs[0];;) {
		struct lspec *c = &L->ls[cur];

		if (c->n_consumers > 1) {
			mp_error_set(L->err, "%s: '%s' overwrites the output of '%s', which %u layers read",
				     path, s->name, c->name, c->n_consumers);
			return -1;
		}
		if (c->needs_grad && ((c->saves & SAVE_OUTPUT) ||
				      (c->inplace && c->type != MP_L_RESHAPE && (c->saves & SAVE_INPUT)))) {
			mp_error_set(L->err, "%s: '%s' overwrites the output of '%s', which its backward reads",
				     path, s->name, c->name);
			return -1;
		}
		if (!c->inplace)
			break;
		cur = c->inputs[0];
	}
	return 0;
}

/* Kahn's order over layers; a cycle is reported with a layer on it. */
static int order_layers(struct loader *L, uint32_t n, int32_t *order)
{
	uint32_t *indeg = mp_xcalloc(n, sizeof(*indeg)), head = 0, tail = 0;
	uint32_t *cstart = mp_xcalloc(n + 1, sizeof(*cstart)), *cons;
	int rc = 0;

	for (uint32_t i = 0; i < n; i++)
		for (uint32_t k = 0; k < L->ls[i].n_inputs; k++)
			cstart[L->ls[i].inputs[k] + 1]++;
	for (uint32_t i = 0; i < n; i++)
		cstart[i + 1] += cstart[i];
	cons = mp_xmalloc((cstart[n] + 1) * sizeof(*cons));
	{
		uint32_t *fill = mp_xcalloc(n, sizeof(*fill));

		for (uint32_t i = 0; i < n; i++)
			for (uint32_t k = 0; k < L->ls[i].n_inputs; k++) {
				uint32_t src = (uint32_t)L->ls[i].inputs[k];

				cons[cstart[src] + fill[src]++] = i;
			}
		free(fill);
	}
	for (uint32_t i = 0; i < n; i++) {
		indeg[i] = L->ls[i].n_inputs;
		if (!indeg[i])
			order[tail++] = (int32_t)i;
	}
	while (head < tail) {
		uint32_t u = (uint32_t)order[head++];

		for (uint32_t k = cstart[u]; k < cstart[u + 1]; k++)
			if (--indeg[cons[k]] == 0)
				order[tail++] = (int32_t)cons[k];
	}
	if (tail < n) {
		/* every unordered layer has an unordered input: walk inputs until a repeat */
		uint32_t start = 0;
		uint8_t *seen = mp_xcalloc(n, 1);

		while (indeg[start] == 0)
			start++;
		while (!seen[start]) {
			seen[start] = 1;
			for (uint32_t k = 0; k < L->ls[start].n_inputs; k++)
				if (indeg[L->ls[start].inputs[k]]) {
					start = (uint32_t)L->ls[start].inputs[k];
					break;
				}
		}
		/* start is on the cycle; name it and the input that closes it */
		for (uint32_t k = 0; k < L->ls[start].n_inputs; k++)
			if (indeg[L->ls[start].inputs[k]]) {
				mp_error_set(L->err, "layers[%u].inputs[%u]: cycle: '%s' depends on itself through '%s'",
					     start, k, L->ls[start].name, L->ls[L->ls[start].inputs[k]].name);
				break;
			}
		free(seen);
		rc = -1;
	}
	free(indeg);
	free(cstart);
	free(cons);
	return rc;
}

/* ---- lowering --------------------------------------------------------- */

/* "grads": "keep": layer idx's op L.accumulate adds the backward's new
 * gradients into the kept .grad tensors, in place (AccumulateGrad with a
 * .grad that exists).  Its time is not modelled (0 ms): an elementwise add of
 * the parameters' size. */
static int accumulate_grads(struct loader *L, uint32_t idx, uint32_t np,
			    const int32_t *fresh, int32_t *grad)
{
	struct mp_net *net = L->net;
	struct mp_op *op;
	int32_t id;
	int32_t *in = arena_array(net, 2 * np, sizeof(int32_t));

	op = add_op(L, fmt_name(net, L->ls[idx].name, ".accumulate"), MP_PHASE_BWD, MP_L_CUSTOM, (int32_t)idx, &id);
	if (!op)
		return -1;
	op->fwd = net->layers[idx].fwd_op;
	op->batch = 1;
	memcpy(in, fresh, np * sizeof(int32_t));
	memcpy(in + np, grad, np * sizeof(int32_t));
	op->in = in;
	op->n_in = 2 * np;
	op->out = grad;
	op->n_out = np;
	return 0;
}

static int lower_layers(struct loader *L, uint32_t n, const int32_t *order)
{
	struct mp_net *net = L->net;
	unsigned n_states = net->optimizer == MP_OPT_ADAM ? 2 : net->optimizer == MP_OPT_MOMENTUM ? 1 : 0;
	int32_t *dout = mp_xmalloc(n * sizeof(*dout)); /* gradient of each layer's output */
	struct idlist in = { 0 }, out = { 0 };
	int rc = -1;

	/* the net's batch: the first data layer's; layers with a shape whose
	 * first dimension is that batch hold per-sample tensors */
	for (uint32_t k = 0; k < n && !net->batch; k++)
		if (L->ls[k].type == MP_L_DATA && L->ls[k].has_shape)
			net->batch = L->ls[k].batch;
	for (uint32_t k = 0; k < n; k++)
		L->ls[k].per_sample = net->batch && L->ls[k].has_shape && L->ls[k].batch == net->batch;
	/* needs_grad in topological order: params, or an input that needs it */
	for (uint32_t k = 0; k < n; k++) {
		struct lspec *s = &L->ls[order[k]];

		s->needs_grad = s->type != MP_L_DATA && s->n_params > 0;
		for (uint32_t i = 0; i < s->n_inputs; i++)
			if (L->ls[s->inputs[i]].needs_grad)
				s->needs_grad = true;
	}
	for (uint32_t i = 0; i < n; i++)
		if (L->ls[i].inplace && check_inplace(L, i) < 0)
			goto out;

	net->n_layers = n;
	for (uint32_t i = 0; i < n; i++) {
		struct lspec *s = &L->ls[i];
		struct mp_layer *ly = &net->layers[i];
		const char *nm = s->name;
		int32_t *pid = arena_array(net, s->n_params, sizeof(int32_t));
		int32_t mask = -1, stats = -1, op_id;
		struct mp_op *op;
		char path[64];

		snprintf(path, sizeof(path), "layers[%u]", i);
		ly->name = nm;
		ly->type = s->type;
		ly->n_inputs = s->n_inputs;
		ly->inputs = s->inputs;
		ly->inplace = s->inplace;
		ly->fwd_op = ly->bwd_op = ly->upd_op = -1;
		ly->pool_mode = s->type == MP_L_POOL && !s->pool_max;
		ly->dtype = s->dtype;
		ly->n_params = s->n_params; /* shape, params and geom: parse_layer and layer_geometry */
		ly->dout = ly->mask = ly->stats = -1;
		dout[i] = -1;
		if (s->inplace) {
			ly->out = net->layers[s->inputs[0]].out;
		} else {
			ly->out = add_tensor(L, fmt_name(net, nm, ".out"), s->out_bytes,
					     s->type == MP_L_DATA ? MP_TK_INPUT : MP_TK_ACTIVATION, (int32_t)i);
			if (ly->out < 0)
				goto dup_tensor;
			net->tensors[ly->out].per_sample = s->per_sample;
		}
		for (uint32_t k = 0; k < s->n_params; k++) {
			char suf[32];

			snprintf(suf, sizeof(suf), ".param%u", k);
			pid[k] = add_tensor(L, fmt_name(net, nm, suf), s->param_bytes[k], MP_TK_PARAM, (int32_t)i);
			if (pid[k] < 0)
				goto dup_tensor;
		}
		if (s->needs_grad && (s->saves & SAVE_MASK)) {
			uint64_t mb = s->elems; /* one byte per element */

			mask = add_tensor(L, fmt_name(net, nm, ".mask"), mb ? mb : 1, MP_TK_ACTIVATION, (int32_t)i);
			if (mask < 0)
				goto dup_tensor;
			net->tensors[mask].per_sample = s->per_sample;
		}
		if (s->needs_grad && (s->saves & SAVE_STATS)) {
			stats = add_tensor(L, fmt_name(net, nm, ".stats"), s->stats_bytes, MP_TK_ACTIVATION, (int32_t)i);
			if (stats < 0)
				goto dup_tensor;
			net->tensors[stats].per_sample = s->per_sample && s->type != MP_L_BN;
		}
		ly->mask = mask;
		ly->stats = stats;
		/* forward op */
		op = add_op(L, fmt_name(net, nm, ".fwd"), MP_PHASE_FWD, s->type, (int32_t)i, &op_id);
		if (!op)
			goto dup_op;
		ly->fwd_op = op_id;
		op->ms = s->ms[0] >= 0 ? s->ms[0] : 0;
		op->recomputable = s->type != MP_L_DATA;
		for (uint32_t k = 0; k < s->n_inputs; k++)
			idl_add(&in, net->layers[s->inputs[k]].out);
		for (uint32_t k = 0; k < s->n_params; k++)
			idl_add(&in, pid[k]);
		idl_add(&out, ly->out);
		if (mask >= 0)
			idl_add(&out, mask);
		if (stats >= 0)
			idl_add(&out, stats);
		op->in = idl_commit(net, &in, &op->n_in);
		op->out = idl_commit(net, &out, &op->n_out);
		op->batch = s->batch;
		if (s->ws_bytes || lspec_algo_ws(s)) {
			op->ws = add_tensor(L, fmt_name(net, nm, ".fwd.ws"), s->ws_bytes, MP_TK_WORKSPACE, (int32_t)i);
			if (op->ws < 0)
				goto dup_tensor;
			net->tensors[op->ws].per_sample = s->per_sample;
		}
		for (uint32_t k = 0; k < s->n_algos; k++)
			if (s->algos[k].ms[0] >= 0)
				op->n_algos++;
		op->algos = arena_array(net, op->n_algos, sizeof(*op->algos));
		op->n_algos = 0;
		for (uint32_t k = 0; k < s->n_algos; k++)
			if (s->algos[k].ms[0] >= 0)
				op->algos[op->n_algos++] = (struct mp_algo){ s->algos[k].name, s->algos[k].ws, s->algos[k].ms[0], s->algos[k].batch };
		if (!s->timed && s->type != MP_L_DATA && s->type != MP_L_RESHAPE)
			net->n_untimed++;

		if (!s->needs_grad)
			continue;
		/* gradient of this layer's output, unless it ends the forward pass */
		if (s->n_consumers > 0) {
			dout[i] = add_tensor(L, fmt_name(net, nm, ".dout"), s->out_bytes, MP_TK_GRADIENT, (int32_t)i);
			if (dout[i] < 0)
				goto dup_tensor;
			net->tensors[dout[i]].per_sample = s->per_sample;
			ly->dout = dout[i];
		}
	}
	/* backward and optimizer ops, after all gradients exist */
	for (uint32_t i = 0; i < n; i++) {
		struct lspec *s = &L->ls[i];
		struct mp_layer *ly = &net->layers[i];
		const struct mp_op *fop = &net->ops[ly->fwd_op];
		const char *nm = s->name;
		struct mp_op *op;
		int32_t op_id, first_param = -1;
		uint32_t np = 0;

		if (!s->needs_grad)
			continue;
		for (uint32_t k = 0; k < fop->n_in; k++)
			if (net->tensors[fop->in[k]].kind == MP_TK_PARAM) {
				if (first_param < 0)
					first_param = (int32_t)k;
				np++;
			}
		op = add_op(L, fmt_name(net, nm, ".bwd"), MP_PHASE_BWD, s->type, (int32_t)i, &op_id);
		if (!op)
			goto dup_op;
		fop = &net->ops[ly->fwd_op]; /* add_op may move the array */
		ly->bwd_op = op_id;
		op->fwd = ly->fwd_op;
		op->ms = s->ms[1] >= 0 ? s->ms[1] : 0;
		if (s->saves & SAVE_INPUT)
			for (uint32_t k = 0; k < s->n_inputs; k++)
				idl_add(&in, net->layers[s->inputs[k]].out);
		if (s->saves & SAVE_OUTPUT)
			idl_add(&in, ly->out);
		if (s->saves & SAVE_PARAMS) {
			/* weights: conv and fc read the first parameter, others all */
			for (uint32_t k = 0; k < fop->n_in; k++)
				if (net->tensors[fop->in[k]].kind == MP_TK_PARAM &&
				    (!(s->type == MP_L_CONV || s->type == MP_L_FC) || (int32_t)k == first_param))
					idl_add(&in, fop->in[k]);
		}
		for (uint32_t k = 1; k < fop->n_out; k++) /* mask, stats */
			idl_add(&in, fop->out[k]);
		if (dout[i] >= 0)
			idl_add(&in, dout[i]);
		for (uint32_t k = 0; k < s->n_inputs; k++) {
			int32_t src = s->inputs[k];

			if (L->ls[src].needs_grad && dout[src] >= 0) {
				/* an in-place layer's input gradient is its own dout's buffer
				 * in frameworks; memplan keeps them separate (conservative) */
				idl_add(&out, dout[src]);
				if (net->tensors[dout[src]].producer < 0)
					net->tensors[dout[src]].producer = op_id;
			}
		}
		{
			int32_t *pg = arena_array(net, np, sizeof(int32_t));
			int32_t *fresh = net->grads_keep ? arena_array(net, np, sizeof(int32_t)) : NULL;
			uint32_t j = 0;

			for (uint32_t k = 0; k < fop->n_in; k++) {
				const struct mp_tensor *pt = &net->tensors[fop->in[k]];
				const char *pname = pt->name;
				uint64_t pbytes = pt->bytes;

				if (pt->kind != MP_TK_PARAM)
					continue;
				pg[j] = add_tensor(L, fmt_name(net, pname, ".grad"), pbytes, MP_TK_PARAM_GRAD, (int32_t)i);
				if (pg[j] < 0)
					goto dup_tensor;
				if (fresh) {
					/* keep: .grad stays; the backward makes a new one
					 * that accumulate_grads adds into it */
					fresh[j] = add_tensor(L, fmt_name(net, pname, ".grad.new"), pbytes, MP_TK_GRADIENT, (int32_t)i);
					if (fresh[j] < 0)
						goto dup_tensor;
					net->tensors[fresh[j]].producer = op_id;
					idl_add(&out, fresh[j]);
				} else {
					net->tensors[pg[j]].producer = op_id;
					idl_add(&out, pg[j]);
				}
				j++;
			}
			op = &net->ops[op_id];
			op->in = idl_commit(net, &in, &op->n_in);
			op->out = idl_commit(net, &out, &op->n_out);
			op->batch = s->batch;
			if (s->ws_bytes || lspec_algo_ws(s)) {
				op->ws = add_tensor(L, fmt_name(net, nm, ".bwd.ws"), s->ws_bytes, MP_TK_WORKSPACE, (int32_t)i);
				if (op->ws < 0)
					goto dup_tensor;
				net->tensors[op->ws].per_sample = s->per_sample;
			}
			for (uint32_t k = 0; k < s->n_algos; k++)
				if (s->algos[k].ms[1] >= 0)
					op->n_algos++;
			op->algos = arena_array(net, op->n_algos, sizeof(*op->algos));
			op->n_algos = 0;
			for (uint32_t k = 0; k < s->n_algos; k++)
				if (s->algos[k].ms[1] >= 0)
					op->algos[op->n_algos++] = (struct mp_algo){ s->algos[k].name, s->algos[k].ws, s->algos[k].ms[1], s->algos[k].batch };
			if (fresh && np && accumulate_grads(L, i, np, fresh, pg) < 0)
				goto dup_op;

			if (net->optimizer == MP_OPT_NONE || np == 0)
				continue;
			/* optimizer update: reads grads and state, writes params and state */
			struct mp_op *u = add_op(L, fmt_name(net, nm, ".update"), MP_PHASE_OPT, s->type, (int32_t)i, &op_id);
			if (!u)
				goto dup_op;
			ly->upd_op = op_id;
			u->ms = s->ms[2] >= 0 ? s->ms[2] : 0;
			u->batch = 1;
			fop = &net->ops[ly->fwd_op];
			j = 0;
			for (uint32_t k = 0; k < fop->n_in; k++) {
				int32_t pt = fop->in[k];

				if (net->tensors[pt].kind != MP_TK_PARAM)
					continue;
				idl_add(&in, pt);
				idl_add(&in, pg[j++]);
				idl_add(&out, pt);
				for (unsigned st = 0; st < n_states; st++) {
					int32_t sid = add_tensor(L, fmt_name(net, net->tensors[pt].name, st ? ".v" : ".m"),
								 net->tensors[pt].bytes, MP_TK_OPT_STATE, (int32_t)i);
					if (sid < 0)
						goto dup_tensor;
					idl_add(&in, sid);
					idl_add(&out, sid);
				}
			}
			u = &net->ops[op_id];
			u->in = idl_commit(net, &in, &u->n_in);
			u->out = idl_commit(net, &out, &u->n_out);
		}
	}
	rc = 0;
	goto out;
dup_tensor:
	mp_error_set(L->err, "a generated tensor name collides with another tensor; rename the layer");
	goto out;
dup_op:
	mp_error_set(L->err, "a generated op name collides with another op; rename the layer");
out:
	idl_release(&in);
	idl_release(&out);
	free(dout);
	return rc;
}


/* ---- explicit tensors and ops ----------------------------------------- */

static int parse_kind(struct loader *L, json_t *v, const char *path, enum mp_tensor_kind *k)
{
	const char *s;

	if (jget_string(v, path, &s, L->err) < 0)
		return -1;
	for (int i = 0; i < MP_TK__COUNT; i++)
		if (!strcmp(s, kind_names[i])) {
			*k = (enum mp_tensor_kind)i;
			return 0;
		}
	mp_error_set(L->err, "%s: unknown tensor kind '%s' (input, activation, gradient, parameter, parameter_gradient, optimizer_state, workspace)", path, s);
	return -1;
}

static int parse_tensors(struct loader *L, json_t *arr)
{
	static const char *const keys[] = { "name", "kind", "shape", "bytes", "dtype", "comment", NULL };
	char path[64], p[256];
	size_t i;
	json_t *obj;

	if (!json_is_array(arr)) {
		mp_error_set(L->err, "tensors: expected an array, got %s", jget_type(arr));
		return -1;
	}
	json_array_foreach(arr, i, obj) {
		enum mp_dtype dt = L->net->dtype;
		enum mp_tensor_kind kind = MP_TK_ACTIVATION;
		uint64_t bytes, elems;
		const char *name;
		json_t *v;

		snprintf(path, sizeof(path), "tensors[%zu]", i);
		if (jget_object(obj, path, L->err) < 0 || jget_check_keys(obj, path, keys, L->err) < 0)
			return -1;
		if (!(v = json_object_get(obj, "name"))) {
			mp_error_set(L->err, "%s: missing \"name\"", path);
			return -1;
		}
		if (jget_string(v, jget_path(p, sizeof(p), path, "name"), &name, L->err) < 0)
			return -1;
		if ((v = json_object_get(obj, "kind")) &&
		    parse_kind(L, v, jget_path(p, sizeof(p), path, "kind"), &kind) < 0)
			return -1;
		if ((v = json_object_get(obj, "comment")) && !json_is_string(v)) {
			mp_error_set(L->err, "%s.comment: expected a string, got %s", path, jget_type(v));
			return -1;
		}
		if ((v = json_object_get(obj, "dtype")) &&
		    parse_dtype(L, v, jget_path(p, sizeof(p), path, "dtype"), &dt) < 0)
			return -1;
		if (parse_size_pair(L, obj, path, dt, &bytes, &elems, NULL, NULL) < 0 ||
		    count_bytes(L, bytes, json_object_get(obj, "shape") ? "shape" : "bytes", path) < 0)
			return -1;
		if (add_tensor_dt(L, mp_arena_strdup(&L->net->arena, name), bytes, kind, -1, dt) < 0) {
			mp_error_set(L->err, "%s.name: duplicate tensor name '%s'", path, name);
			return -1;
		}
	}
	return 0;
}

/* A list of tensor names into l (deduplicated); unique: a name given twice
 * is an error (an op writes each output once). */
static int parse_tensor_list(struct loader *L, json_t *v, const char *path,
			     struct idlist *l, bool unique)
{
	char p[300];
	size_t i;
	json_t *x;

	if (!json_is_array(v)) {
		mp_error_set(L->err, "%s: expected an array of tensor names, got %s", path, jget_type(v));
		return -1;
	}
	json_array_foreach(v, i, x) {
		const char *nm;
		int32_t id;

		jget_index(p, sizeof(p), path, i);
		if (jget_string(x, p, &nm, L->err) < 0)
			return -1;
		if ((id = mp_strmap_get(&L->tensor_names, nm)) < 0) {
			mp_error_set(L->err, "%s: no tensor named '%s'", p, nm);
			return -1;
		}
		if (!idl_add_at(l, id, (uint32_t)i) && unique) {
			uint32_t first = 0;

			while (l->v[first] != id)
				first++;
			mp_error_set(L->err, "%s: '%s' is listed twice (also at [%u]); an op writes each output once",
				     p, nm, l->pos[first]);
			return -1;
		}
	}
	return 0;
}

static int parse_ops(struct loader *L, json_t *arr)
{
	static const char *const keys[] = { "name", "type", "phase", "inputs", "outputs",
		"time", "workspace", "algos", "recompute", "comment", NULL };
	static const char *const akeys[] = { "name", "workspace", "time", NULL };
	struct idlist in = { 0 }, out = { 0 };
	char path[64], p[256], q[300];
	size_t i;
	json_t *obj;
	int rc = -1;

	if (!json_is_array(arr)) {
		mp_error_set(L->err, "ops: expected an array, got %s", jget_type(arr));
		return -1;
	}
	json_array_foreach(arr, i, obj) {
		enum mp_phase ph = MP_PHASE_FWD;
		enum mp_layer_type type = MP_L_OP;
		const char *name;
		struct mp_op *op;
		int32_t id;
		json_t *v;

		snprintf(path, sizeof(path), "ops[%zu]", i);
		if (jget_object(obj, path, L->err) < 0 || jget_check_keys(obj, path, keys, L->err) < 0)
			goto out;
		if (!(v = json_object_get(obj, "name"))) {
			mp_error_set(L->err, "%s: missing \"name\"", path);
			goto out;
		}
		if (jget_string(v, jget_path(p, sizeof(p), path, "name"), &name, L->err) < 0)
			goto out;
		if ((v = json_object_get(obj, "comment")) && !json_is_string(v)) {
			mp_error_set(L->err, "%s.comment: expected a string, got %s", path, jget_type(v));
			goto out;
		}
		if ((v = json_object_get(obj, "phase"))) {
			const char *s;

			if (jget_string(v, jget_path(p, sizeof(p), path, "phase"), &s, L->err) < 0)
				goto out;
			if (!strcmp(s, "forward"))
				ph = MP_PHASE_FWD;
			else if (!strcmp(s, "backward"))
				ph = MP_PHASE_BWD;
			else if (!strcmp(s, "optimizer"))
				ph = MP_PHASE_OPT;
			else {
				mp_error_set(L->err, "%s: unknown phase '%s' (forward, backward or optimizer)", p, s);
				goto out;
			}
		}
		if ((v = json_object_get(obj, "type"))) {
			const char *s;
			int t;

			if (jget_string(v, jget_path(p, sizeof(p), path, "type"), &s, L->err) < 0)
				goto out;
			if ((t = mp_layer_type_parse(s)) < 0) {
				mp_error_set(L->err, "%s: unknown type '%s'", p, s);
				goto out;
			}
			type = (enum mp_layer_type)t;
		}
		if ((v = json_object_get(obj, "inputs")) &&
		    parse_tensor_list(L, v, jget_path(p, sizeof(p), path, "inputs"), &in, false) < 0)
			goto out;
		if (!(v = json_object_get(obj, "outputs"))) {
			mp_error_set(L->err, "%s: missing \"outputs\"", path);
			goto out;
		}
		if (parse_tensor_list(L, v, jget_path(p, sizeof(p), path, "outputs"), &out, true) < 0)
			goto out;
		if (out.n == 0) {
			mp_error_set(L->err, "%s.outputs: an op writes at least one tensor", path);
			goto out;
		}
		op = add_op(L, mp_arena_strdup(&L->net->arena, name), ph, type, -1, &id);
		if (!op) {
			mp_error_set(L->err, "%s.name: duplicate op name '%s'", path, name);
			goto out;
		}
		op->index = L->net->n_layers * 3 + (uint32_t)i;
		op->json_index = (int32_t)i;
		op->batch = 1;
		op->recomputable = ph == MP_PHASE_FWD;
		op->in_json = arena_array(L->net, in.n, sizeof(*op->in_json));
		if (in.n)
			memcpy(op->in_json, in.pos, in.n * sizeof(*op->in_json));
		op->in = idl_commit(L->net, &in, &op->n_in);
		op->out = idl_commit(L->net, &out, &op->n_out);
		if ((v = json_object_get(obj, "time"))) {
			if (jget_ms(v, jget_path(p, sizeof(p), path, "time"), &op->ms, L->err) < 0)
				goto out;
		} else {
			L->net->n_untimed++;
		}
		if ((v = json_object_get(obj, "recompute"))) {
			int b;

			if (jget_bool(v, jget_path(p, sizeof(p), path, "recompute"), &b, L->err) < 0)
				goto out;
			if (b && ph != MP_PHASE_FWD) {
				mp_error_set(L->err, "%s: only forward ops can be recomputed", p);
				goto out;
			}
			op->recomputable = b;
		}
		if ((v = json_object_get(obj, "workspace"))) {
			uint64_t ws;

			if (jget_size(v, jget_path(p, sizeof(p), path, "workspace"), &ws, L->err) < 0 ||
			    count_bytes(L, ws, "workspace", path) < 0)
				goto out;
			if (ws) {
				int32_t t = add_tensor(L, fmt_name(L->net, op->name, ".ws"), ws, MP_TK_WORKSPACE, -1);

				if (t < 0) {
					mp_error_set(L->err, "%s.workspace: tensor name '%s.ws' is taken", path, op->name);
					goto out;
				}
				L->net->ops[id].ws = t;
			}
		}
		if ((v = json_object_get(obj, "algos"))) {
			size_t k;
			json_t *a;

			jget_path(p, sizeof(p), path, "algos");
			if (!json_is_array(v)) {
				mp_error_set(L->err, "%s: expected an array of algorithms, got %s", p, jget_type(v));
				goto out;
			}
			op = &L->net->ops[id];
			op->n_algos = (uint32_t)json_array_size(v);
			op->algos = arena_array(L->net, op->n_algos, sizeof(*op->algos));
			json_array_foreach(v, k, a) {
				struct mp_algo *al = &op->algos[k];
				const char *an;
				json_t *x;

				jget_index(q, sizeof(q), p, k);
				if (jget_object(a, q, L->err) < 0 || jget_check_keys(a, q, akeys, L->err) < 0)
					goto out;
				if (!(x = json_object_get(a, "name")) || !(json_object_get(a, "time"))) {
					mp_error_set(L->err, "%s: missing \"%s\"", q, x ? "time" : "name");
					goto out;
				}
				if (jget_string(x, jget_path(p, sizeof(p), q, "name"), &an, L->err) < 0)
					goto out;
				al->name = mp_arena_strdup(&L->net->arena, an);
				if (jget_ms(json_object_get(a, "time"), jget_path(p, sizeof(p), q, "time"), &al->ms, L->err) < 0)
					goto out;
				if ((x = json_object_get(a, "workspace")) &&
				    jget_size(x, jget_path(p, sizeof(p), q, "workspace"), &al->workspace_bytes, L->err) < 0)
					goto out;
				jget_path(p, sizeof(p), path, "algos");
			}
			if (op->ws < 0)
				for (uint32_t j = 0; j < op->n_algos; j++)
					if (op->algos[j].workspace_bytes) {
						int32_t t = add_tensor(L, fmt_name(L->net, op->name, ".ws"), 0, MP_TK_WORKSPACE, -1);

						if (t < 0) {
							mp_error_set(L->err, "%s.algos: tensor name '%s.ws' is taken", path, op->name);
							goto out;
						}
						L->net->ops[id].ws = t;
						break;
					}
		}
	}
	rc = 0;
out:
	idl_release(&in);
	idl_release(&out);
	return rc;
}

/* ---- top level -------------------------------------------------------- */

static int parse_layers(struct loader *L, json_t *arr)
{
	uint32_t n;
	int32_t *order;
	size_t i;
	json_t *obj;
	int rc = -1;

	if (!json_is_array(arr)) {
		mp_error_set(L->err, "layers: expected an array, got %s", jget_type(arr));
		return -1;
	}
	if (json_array_size(arr) > (1u << 24)) {
		mp_error_set(L->err, "layers: more than 16M layers");
		return -1;
	}
	n = (uint32_t)json_array_size(arr);
	L->ls = mp_xcalloc(n ? n : 1, sizeof(*L->ls));
	L->net->layers = mp_xcalloc(n ? n : 1, sizeof(*L->net->layers));
	mp_strmap_reserve(&L->layer_names, n);
	/* pass 1: names and types, so inputs may name any layer */
	json_array_foreach(arr, i, obj) {
		char path[64], p[256];
		const char *s;
		json_t *v;
		int t;

		jget_index(path, sizeof(path), "layers", i);
		if (jget_object(obj, path, L->err) < 0)
			return -1;
		if (!(v = json_object_get(obj, "name"))) {
			mp_error_set(L->err, "%s: missing \"name\"", path);
			return -1;
		}
		if (jget_string(v, jget_path(p, sizeof(p), path, "name"), &s, L->err) < 0)
			return -1;
		L->ls[i].name = mp_arena_strdup(&L->net->arena, s);
		if (mp_strmap_put(&L->layer_names, L->ls[i].name, (int32_t)i) >= 0) {
			mp_error_set(L->err, "%s: duplicate layer name '%s' (first at layers[%d])", p, s,
				     mp_strmap_get(&L->layer_names, L->ls[i].name));
			return -1;
		}
		if (!(v = json_object_get(obj, "type"))) {
			mp_error_set(L->err, "%s: missing \"type\"", path);
			return -1;
		}
		if (jget_string(v, jget_path(p, sizeof(p), path, "type"), &s, L->err) < 0)
			return -1;
		if ((t = mp_layer_type_parse(s)) < 0) {
			mp_error_set(L->err, "%s: unknown layer type '%s' (data, conv, fc, relu, sigmoid, tanh, elu, gelu, silu, pool, lrn, bn, layernorm, dropout, softmax, loss, add, concat, embedding, attention, reshape, custom)", p, s);
			return -1;
		}
		L->ls[i].type = (enum mp_layer_type)t;
	}
	json_array_foreach(arr, i, obj)
		if (parse_layer(L, obj, (uint32_t)i) < 0)
			return -1;
	/* after every layer's shape is known: inputs may come later in the file */
	for (uint32_t k = 0; k < n; k++)
		if (layer_geometry(L, k) < 0)
			return -1;
	for (uint32_t k = 0; k < n; k++)
		if (check_sizes(L, k) < 0)
			return -1;
	for (uint32_t k = 0; k < n; k++)
		for (uint32_t j = 0; j < L->ls[k].n_inputs; j++)
			L->ls[L->ls[k].inputs[j]].n_consumers++;
	order = mp_xmalloc((n ? n : 1) * sizeof(*order));
	if (order_layers(L, n, order) == 0)
		rc = lower_layers(L, n, order);
	free(order);
	return rc;
}

/* The position in the JSON "inputs" array of an explicit op's k-th distinct
 * input (inputs were deduplicated while loading). */
static uint32_t in_index(const struct mp_op *op, uint32_t k)
{
	return op->in_json ? op->in_json[k] : k;
}

static bool op_reads_tensor(const struct mp_op *op, int32_t t)
{
	for (uint32_t k = 0; k < op->n_in; k++)
		if (op->in[k] == t)
			return true;
	return false;
}

/* Kinds resident for the whole iteration, and across iterations, whatever
 * writes them: parameters, optimizer state, and gradients kept as .grad. */
static bool resident_kind(const struct mp_net *net, enum mp_tensor_kind k)
{
	return k == MP_TK_PARAM || k == MP_TK_OPT_STATE || (k == MP_TK_PARAM_GRAD && net->grads_keep);
}

/* Producers, resident-at-start tensors (resident_kind, and inputs no op
 * writes except in place), and reads of never-written tensors. */
static int finish(struct loader *L)
{
	struct mp_net *net = L->net;

	for (uint32_t o = 0; o < net->n_ops; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_out; k++) {
			struct mp_tensor *t = &net->tensors[op->out[k]];

			if (t->producer < 0 && !resident_kind(net, t->kind) &&
			    !(t->kind == MP_TK_INPUT && op_reads_tensor(op, op->out[k])))
				t->producer = (int32_t)o;
		}
	}
	for (uint32_t o = 0; o < net->n_ops; o++) {
		const struct mp_op *op = &net->ops[o];

		for (uint32_t k = 0; k < op->n_in; k++) {
			const struct mp_tensor *t = &net->tensors[op->in[k]];
			char where[64] = "";

			if (op->json_index >= 0)
				snprintf(where, sizeof(where), "ops[%d].inputs[%u]: ", op->json_index, in_index(op, k));
			if (t->kind == MP_TK_WORKSPACE) {
				mp_error_set(L->err, "%sop '%s' reads workspace tensor '%s'; workspace lives only inside its op",
					     where, op->name, t->name);
				return -1;
			}
			if (t->producer < 0 && !resident_kind(net, t->kind) && t->kind != MP_TK_INPUT) {
				mp_error_set(L->err, "%sop '%s' reads '%s', which no op writes (give it kind \"input\" or \"parameter\" if it exists before the iteration)",
					     where, op->name, t->name);
				return -1;
			}
		}
	}
	if (net->n_ops == 0) {
		mp_error_set(L->err, "the net has no layers and no ops");
		return -1;
	}
	return 0;
}

struct mp_net *net_load_json(json_t *root, struct mp_error *err)
{
	static const char *const keys[] = { "format", "name", "dtype", "optimizer", "grads", "device",
		"layers", "ops", "tensors", "time_source", "description", "generator", NULL };
	struct loader L = { 0 };
	struct mp_net *net;
	const char *s;
	json_t *v;

	if (jget_object(root, "(top level)", err) < 0)
		return NULL;
	net = mp_xcalloc(1, sizeof(*net));
	L.net = net;
	L.err = err;
	mp_strmap_init(&L.tensor_names);
	mp_strmap_init(&L.op_names);
	mp_strmap_init(&L.layer_names);
	net->name = "unnamed";
	net->dtype = MP_DT_FLOAT32;
	if (!(v = json_object_get(root, "format"))) {
		mp_error_set(err, "format: missing (expected \"memplan-net/1\")");
		goto fail;
	}
	if (!json_is_string(v) || strcmp(json_string_value(v), "memplan-net/1")) {
		if (json_is_string(v) && !strcmp(json_string_value(v), "memplan-plan/1"))
			mp_error_set(err, "format: this is a plan, not a net (memplan verify reads plans)");
		else if (json_is_string(v))
			mp_error_set(err, "format: expected \"memplan-net/1\", got \"%.64s\"", json_string_value(v));
		else
			mp_error_set(err, "format: expected \"memplan-net/1\", got %s", jget_type(v));
		goto fail;
	}
	if (jget_check_keys(root, "", keys, err) < 0)
		goto fail;
	if ((v = json_object_get(root, "name"))) {
		if (jget_string(v, "name", &s, err) < 0)
			goto fail;
		net->name = mp_arena_strdup(&net->arena, s);
	}
	if ((v = json_object_get(root, "description")) && !json_is_string(v)) {
		mp_error_set(err, "description: expected a string, got %s", jget_type(v));
		goto fail;
	}
	if ((v = json_object_get(root, "generator")) && !json_is_object(v)) {
		mp_error_set(err, "generator: expected an object, got %s", jget_type(v));
		goto fail;
	}
	if ((v = json_object_get(root, "time_source"))) {
		if (jget_string(v, "time_source", &s, err) < 0)
			goto fail;
		net->time_source = mp_arena_strdup(&net->arena, s);
	}
	if ((v = json_object_get(root, "dtype")) && parse_dtype(&L, v, "dtype", &net->dtype) < 0)
		goto fail;
	if ((v = json_object_get(root, "optimizer"))) {
		static const char *const opts[] = { "none", "sgd", "momentum", "adam" };
		int k;

		if (jget_string(v, "optimizer", &s, err) < 0)
			goto fail;
		for (k = 0; k < 4 && strcmp(s, opts[k]); k++)
			;
		if (k == 4) {
			mp_error_set(err, "optimizer: unknown optimizer '%s' (none, sgd, momentum, adam)", s);
			goto fail;
		}
		net->optimizer = (enum mp_optimizer)k;
	}
	if ((v = json_object_get(root, "grads"))) {
		if (jget_string(v, "grads", &s, err) < 0)
			goto fail;
		if (strcmp(s, "keep") && strcmp(s, "set_to_none")) {
			mp_error_set(err, "grads: unknown mode '%s' (keep or set_to_none)", s);
			goto fail;
		}
		net->grads_keep = !strcmp(s, "keep");
	}
	if ((v = json_object_get(root, "device"))) {
		if (json_is_string(v)) {
			const struct mp_device *d;

			if (jget_string(v, "device", &s, err) < 0)
				goto fail;
			d = device_find(s);
			if (!d) {
				mp_error_set(err, "device: unknown device '%s' (see 'memplan devices')", s);
				goto fail;
			}
			net->device = *d;
		} else if (device_from_json(v, "device", &net->device, err) < 0) {
			goto fail;
		}
		net->has_device = true;
	}
	if ((v = json_object_get(root, "layers")) && parse_layers(&L, v) < 0)
		goto fail;
	if (json_object_get(root, "tensors") || json_object_get(root, "ops"))
		maps_start(&L);
	if ((v = json_object_get(root, "tensors")) && parse_tensors(&L, v) < 0)
		goto fail;
	if ((v = json_object_get(root, "ops")) && parse_ops(&L, v) < 0)
		goto fail;
	if (finish(&L) < 0)
		goto fail;
	free(L.ls);
	mp_strmap_release(&L.tensor_names);
	mp_strmap_release(&L.op_names);
	mp_strmap_release(&L.layer_names);
	return net;
fail:
	free(L.ls);
	mp_strmap_release(&L.tensor_names);
	mp_strmap_release(&L.op_names);
	mp_strmap_release(&L.layer_names);
	net_free(net);
	return NULL;
}

struct mp_net *net_load_file_json(const char *path, json_t **root_out, struct mp_error *err)
{
	json_t *root = mp_json_load_file(path, err);
	struct mp_net *net;

	*root_out = NULL;
	if (!root)
		return NULL;
	net = net_load_json(root, err);
	if (net)
		*root_out = root;
	else
		json_decref(root);
	return net;
}

/* jansson allocations for a parse whose tree dies at once: a bump arena, so
 * the hundreds of thousands of small nodes of a big net are neither freed
 * one by one nor left for malloc to consolidate. */
static struct mp_arena *json_arena;

static void *json_arena_malloc(size_t n)
{
	return mp_arena_alloc_raw(json_arena, n);
}

static void json_arena_free(void *p)
{
	(void)p;
}

struct mp_net *net_load_file(const char *path, struct mp_error *err)
{
	struct mp_arena arena = { 0 };
	json_malloc_t old_malloc;
	json_free_t old_free;
	struct mp_net *net = NULL;
	json_t *root;

	json_get_alloc_funcs(&old_malloc, &old_free);
	json_arena = &arena;
	json_set_alloc_funcs(json_arena_malloc, json_arena_free);
	root = mp_json_load_file(path, err);
	if (root)
		net = net_load_json(root, err); /* copies what it keeps */
	json_set_alloc_funcs(old_malloc, old_free);
	json_arena = NULL;
	mp_arena_release(&arena); /* the whole tree, without walking it */
	return net;
}

void net_free(struct mp_net *net)
{
	if (!net)
		return;
	free(net->tensors);
	free(net->ops);
	free(net->layers);
	mp_arena_release(&net->arena); /* a scaled copy's own arena only */
	free(net);
}

uint64_t net_bytes_of_kind(const struct mp_net *net, enum mp_tensor_kind k)
{
	uint64_t sum = 0;

	for (uint32_t i = 0; i < net->n_tensors; i++)
		if (net->tensors[i].kind == k)
			sum += net->tensors[i].bytes; /* each <= 2^50, n < 2^32: no overflow */
	return sum;
}

uint64_t net_param_count(const struct mp_net *net)
{
	uint64_t n = 0;

	for (uint32_t i = 0; i < net->n_tensors; i++)
		if (net->tensors[i].kind == MP_TK_PARAM)
			n += net->tensors[i].bytes / mp_dtype_bytes(net->tensors[i].dtype);
	return n;
}

int32_t net_find_tensor(const struct mp_net *net, const char *name)
{
	for (uint32_t i = 0; i < net->n_tensors; i++)
		if (!strcmp(net->tensors[i].name, name))
			return (int32_t)i;
	return -1;
}

int32_t net_find_op(const struct mp_net *net, const char *name)
{
	for (uint32_t i = 0; i < net->n_ops; i++)
		if (!strcmp(net->ops[i].name, name))
			return (int32_t)i;
	return -1;
}

static bool compute_bound(enum mp_layer_type t)
{
	return t == MP_L_CONV || t == MP_L_FC || t == MP_L_ATTENTION || t == MP_L_EMBEDDING;
}

struct mp_net *net_scaled(const struct mp_net *net, uint32_t batch, double compute_factor,
			  double memory_factor, struct mp_error *err)
{
	struct mp_net *c;
	double r;

	if (!net->batch) {
		mp_error_set(err, "the net has no batch to vary (no data layer with a shape)");
		return NULL;
	}
	r = (double)batch / net->batch;
	c = mp_xcalloc(1, sizeof(*c));
	*c = *net;
	memset(&c->arena, 0, sizeof(c->arena));
	c->parent = net;
	c->batch = batch;
	c->tensors = mp_xmalloc((net->n_tensors + 1) * sizeof(*c->tensors));
	c->ops = mp_xmalloc((net->n_ops + 1) * sizeof(*c->ops));
	c->layers = mp_xmalloc((net->n_layers + 1) * sizeof(*c->layers));
	memcpy(c->tensors, net->tensors, net->n_tensors * sizeof(*c->tensors));
	memcpy(c->ops, net->ops, net->n_ops * sizeof(*c->ops));
	memcpy(c->layers, net->layers, net->n_layers * sizeof(*c->layers));
	for (uint32_t i = 0; i < net->n_layers; i++) /* the shapes of per-sample outputs */
		if (c->layers[i].shape.nd && c->layers[i].shape.d[0] == net->batch)
			c->layers[i].shape.d[0] = batch;
	for (uint32_t t = 0; t < net->n_tensors; t++) {
		struct mp_tensor *x = &c->tensors[t];

		if (x->per_sample) {
			/* exact for batch-first shapes: bytes = batch * per-sample bytes */
			uint64_t per = x->bytes / net->batch, b;

			if (per * net->batch != x->bytes)
				per = (x->bytes + net->batch - 1) / net->batch;
			if (mp_mul_u64(per, batch, &b) < 0 || b > MP_MAX_BYTES) {
				mp_error_set(err, "batch %u makes '%s' larger than 1 PiB", batch, x->name);
				net_free(c);
				return NULL;
			}
			x->bytes = b ? b : 1;
		}
	}
	for (uint32_t o = 0; o < net->n_ops; o++) {
		struct mp_op *op = &c->ops[o];
		double g = compute_bound(op->type) ? compute_factor : memory_factor;
		double f = (op->phase == MP_PHASE_OPT ? 1.0 : r) * g;

		op->ms *= f;
		if (op->batch == net->batch)
			op->batch = batch;
		if (op->n_algos) {
			struct mp_algo *a = mp_arena_alloc(&c->arena, op->n_algos * sizeof(*a));

			memcpy(a, op->algos, op->n_algos * sizeof(*a));
			for (uint32_t k = 0; k < op->n_algos; k++) {
				if (!a[k].batch) {
					a[k].ms *= f;
					a[k].workspace_bytes = (uint64_t)((double)a[k].workspace_bytes * r);
				} else {
					a[k].ms *= g; /* measured at its own micro-batch */
					if (a[k].batch >= batch)
						a[k].batch = UINT32_MAX; /* no longer a micro-batch of this batch */
				}
			}
			op->algos = a;
		}
	}
	return c;
}
