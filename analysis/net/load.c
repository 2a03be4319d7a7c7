/*
 * Loading memplan-net/1 (memplan-net(5)): the top level of a file and the
 * Net it builds.  Layers are parsed (parse.c), checked (names, inputs,
 * sizes, times, in-place safety, cycles), given their conv and pool geometry
 * (geometry.c), then lowered in file order to forward, backward and
 * optimizer ops over tensors (lower.c).  Explicit "tensors" and "ops" are
 * appended and may name lowered tensors (ops.c).
 * O(layers + ops + tensor uses), with hash maps for names.
 */
#include "net.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/jget.h"
#include "loader.h"

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

void *arena_array(struct mp_net *net, size_t n, size_t elem)
{
	return mp_arena_alloc(&net->arena, n * elem);
}

const char *fmt_name(struct mp_net *net, const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *s = mp_arena_alloc(&net->arena, la + lb + 1);

	memcpy(s, a, la);
	memcpy(s + la, b, lb + 1);
	return s;
}

int32_t add_tensor(struct loader *L, const char *name, uint64_t bytes,
			  enum mp_tensor_kind kind, int32_t layer)
{
	return add_tensor_dt(L, name, bytes, kind, layer,
			     layer >= 0 && L->ls ? L->ls[layer].dtype : L->net->dtype);
}

int32_t add_tensor_dt(struct loader *L, const char *name, uint64_t bytes,
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
	t->qelems = 0;
	if (L->maps_live && mp_strmap_put(&L->tensor_names, name, id) >= 0) {
		net->n_tensors--;
		return -1;
	}
	return id;
}

struct mp_op *add_op(struct loader *L, const char *name, enum mp_phase ph,
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

/* Add id; returns 1 if it was new in this list. */
int idl_add_at(struct idlist *l, int32_t id, uint32_t json_pos)
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

void idl_add(struct idlist *l, int32_t id)
{
	idl_add_at(l, id, 0);
}

void idl_release(struct idlist *l)
{
	free(l->v);
	free(l->pos);
	free(l->mark);
}

int32_t *idl_commit(struct mp_net *net, struct idlist *l, uint32_t *n)
{
	int32_t *a = arena_array(net, l->n, sizeof(*a));

	if (l->n)
		memcpy(a, l->v, l->n * sizeof(*a));
	*n = l->n;
	l->n = 0;
	l->gen++;
	return a;
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

/*
 * "precision": a policy name, or {"policy", "params", "grads", "master",
 * "optimizer_state"} overriding its dtypes ("master": "none" drops the
 * master weights).
 */
static int parse_precision(struct loader *L, json_t *v, struct mp_precision *p)
{
	static const char *const keys[] = { "policy", "params", "grads", "master", "optimizer_state", NULL };
	static const char *const kinds[] = { "params", "grads", "optimizer_state" };
	const char *s;
	json_t *x;
	char path[64];

	if (json_is_object(v)) {
		if (jget_check_keys(v, "precision", keys, L->err) < 0)
			return -1;
		if (!(x = json_object_get(v, "policy"))) {
			mp_error_set(L->err, "precision: missing \"policy\" (%s)", mp_precision_list);
			return -1;
		}
	} else if (json_is_string(v)) {
		x = v;
	} else {
		mp_error_set(L->err, "precision: expected a policy name or an object, got %s", jget_type(v));
		return -1;
	}
	if (jget_string(x, json_is_object(v) ? "precision.policy" : "precision", &s, L->err) < 0)
		return -1;
	if (mp_precision_preset(s, p) < 0) {
		mp_error_set(L->err, "%s: unknown policy '%s' (%s)",
			     json_is_object(v) ? "precision.policy" : "precision", s, mp_precision_list);
		return -1;
	}
	if (!json_is_object(v))
		return 0;
	for (unsigned k = 0; k < 3; k++) {
		enum mp_dtype *dt = k == 0 ? &p->params : k == 1 ? &p->grads : &p->state;

		snprintf(path, sizeof(path), "precision.%s", kinds[k]);
		if ((x = json_object_get(v, kinds[k])) && parse_dtype(L, x, path, dt) < 0)
			return -1;
	}
	if ((x = json_object_get(v, "master"))) {
		enum mp_dtype dt;

		if (json_is_string(x) && !strcmp(json_string_value(x), "none"))
			p->master = -1;
		else if (parse_dtype(L, x, "precision.master", &dt) < 0)
			return -1;
		else
			p->master = (int)dt;
	}
	return 0;
}

static int grads_parse(const char *s)
{
	return !strcmp(s, "keep") ? 1 : !strcmp(s, "set_to_none") ? 0 : -1;
}

/*
 * Top-level key: a word parse() knows, as its value (>= 0); -1 when the key
 * is absent; -2 with *err for another value, "key: unknown what 'x' (list)".
 */
static int keyword(json_t *root, const char *key, const char *what, int (*parse)(const char *),
		   const char *list, struct mp_error *err)
{
	json_t *v = json_object_get(root, key);
	const char *s;
	int k;

	if (!v)
		return -1;
	if (jget_string(v, key, &s, err) < 0)
		return -2;
	if ((k = parse(s)) < 0) {
		mp_error_set(err, "%s: unknown %s '%s' (%s)", key, what, s, list);
		return -2;
	}
	return k;
}

struct mp_net *net_load_json(json_t *root, struct mp_error *err)
{
	static const char *const keys[] = { "format", "name", "dtype", "precision", "optimizer", "grads", "framework", "device",
		"batch", "layers", "ops", "tensors", "time_source", "description", "generator", NULL };
	struct loader L = { 0 };
	struct mp_net *net;
	const char *s;
	int k;
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
	mp_precision_none(&net->precision);
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
	if ((v = json_object_get(root, "precision")) && parse_precision(&L, v, &net->precision) < 0)
		goto fail;
	net->dtype = net->precision.policy != MP_PREC_NONE ? net->precision.act : MP_DT_FLOAT32;
	if ((v = json_object_get(root, "dtype")) && parse_dtype(&L, v, "dtype", &net->dtype) < 0)
		goto fail;
	net->precision.act = net->dtype;
	if ((k = keyword(root, "optimizer", "optimizer", mp_optimizer_parse, mp_optimizer_list, err)) == -2)
		goto fail;
	if (k >= 0)
		net->optimizer = (enum mp_optimizer)k;
	if ((k = keyword(root, "grads", "mode", grads_parse, "keep or set_to_none", err)) == -2)
		goto fail;
	if (k >= 0)
		net->grads_keep = k;
	if ((k = keyword(root, "framework", "framework", mp_framework_parse, "cudnn or pytorch", err)) == -2)
		goto fail;
	if (k >= 0)
		net->framework = (enum mp_framework)k;
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
	if ((v = json_object_get(root, "batch"))) {
		int64_t b;

		if (jget_int(v, "batch", 1, UINT32_MAX, &b, err) < 0)
			goto fail;
		net->batch = (uint32_t)b;
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

struct mp_net *net_load_file(const char *path, struct mp_error *err)
{
	struct mp_json_arena ja;
	struct mp_net *net = NULL;
	json_t *root;

	mp_json_arena_begin(&ja);
	root = mp_json_load_file(path, err);
	if (root)
		net = net_load_json(root, err); /* copies what it keeps */
	mp_json_arena_end(&ja);
	return net;
}
