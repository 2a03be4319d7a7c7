/*
 * Explicit "tensors" and "ops" of memplan-net/1 (memplan-net(5)), appended
 * after the lowered layers: they may name lowered tensors, and an op reads
 * and writes tensors by name.  O(tensors + the ops' inputs and outputs),
 * names through the loader's hash maps.
 */
#include <stdio.h>
#include <string.h>

#include "../base/jget.h"
#include "loader.h"

static int parse_kind(struct loader *L, json_t *v, const char *path, enum mp_tensor_kind *k)
{
	const char *s;

	if (jget_string(v, path, &s, L->err) < 0)
		return -1;
	for (int i = 0; i < MP_TK__COUNT; i++)
		if (!strcmp(s, mp_tensor_kind_name((enum mp_tensor_kind)i))) {
			*k = (enum mp_tensor_kind)i;
			return 0;
		}
	mp_error_set(L->err, "%s: unknown tensor kind '%s' (input, activation, gradient, parameter, parameter_gradient, optimizer_state, workspace)", path, s);
	return -1;
}

int parse_tensors(struct loader *L, json_t *arr)
{
	static const char *const keys[] = { "name", "kind", "shape", "bytes", "dtype", "per_sample", "comment", NULL };
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
		int per_sample = 0;
		int32_t id;
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
		if ((v = json_object_get(obj, "per_sample"))) {
			const char *q = jget_path(p, sizeof(p), path, "per_sample");

			if (jget_bool(v, q, &per_sample, L->err) < 0)
				return -1;
			if (per_sample && !L->net->batch) {
				mp_error_set(L->err, "%s: the net has no batch (give a top-level \"batch\")", q);
				return -1;
			}
			if (per_sample && bytes % L->net->batch) {
				mp_error_set(L->err, "%s: %llu bytes is no multiple of the batch %u", q,
					     (unsigned long long)bytes, L->net->batch);
				return -1;
			}
		}
		if ((id = add_tensor_dt(L, mp_arena_strdup(&L->net->arena, name), bytes, kind, -1, dt)) < 0) {
			mp_error_set(L->err, "%s.name: duplicate tensor name '%s'", path, name);
			return -1;
		}
		L->net->tensors[id].per_sample = per_sample;
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

int parse_ops(struct loader *L, json_t *arr)
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
