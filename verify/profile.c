/*
 * The host side of memplan profile (memplan-profile(1)): the micro-batch
 * sizes a convolution is measured at (mu-cuDNN 3.4's batch size policies)
 * and the writer that puts a measurement into a copy of the net file.  The
 * measurement itself is exec_cuda_profile (profile_cuda.cu).
 * O(layers + algorithms^2 per layer).
 */
#include "profile.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../analysis/base/jget.h"

const char *prof_batches_name(enum mp_prof_batches b)
{
	static const char *const names[] = { "pow2", "all", "full" };

	return (unsigned)b < 3 ? names[b] : "?";
}

int prof_batches_parse(const char *s)
{
	for (int b = PROF_BATCH_POW2; b <= PROF_BATCH_FULL; b++)
		if (!strcmp(s, prof_batches_name((enum mp_prof_batches)b)))
			return b;
	return -1;
}

void prof_opts_default(struct mp_prof_opts *o)
{
	o->batches = PROF_BATCH_POW2;
	o->iters = 10;
	o->warmup = 3;
}

uint32_t *prof_batches(uint32_t batch, enum mp_prof_batches mode, uint32_t *n)
{
	return ucudnn_sizes(batch, (enum ucudnn_policy)mode, n);
}

void prof_init(struct mp_profile *m)
{
	memset(m, 0, sizeof(*m));
}

void prof_release(struct mp_profile *m)
{
	for (uint32_t i = 0; m->layers && i < m->n_layers; i++)
		free(m->layers[i].algos);
	free(m->layers);
	mp_arena_release(&m->arena);
	memset(m, 0, sizeof(*m));
}

/* A measured time: < 0 means none; otherwise it must be a real duration. */
static int check_ms(double ms, const char *what, struct mp_error *err)
{
	if (ms < 0 || ms <= MP_MAX_MS)
		return 0;
	mp_error_set(err, "%s: %g is not a time in milliseconds", what, ms);
	return -1;
}

/* The layer's batch (its shape's first dimension; 1 without one). */
static uint32_t layer_batch(const struct mp_net *net, uint32_t layer)
{
	int32_t fwd = net->layers[layer].fwd_op;

	return fwd >= 0 ? net->ops[fwd].batch : 1;
}

/* Strings go into JSON: jansson takes UTF-8 only. */
static int check_text(const char *s, const char *what, struct mp_error *err)
{
	json_t *j = json_string(s);

	if (!j) {
		mp_error_set(err, "%s: not a UTF-8 string", what);
		return -1;
	}
	json_decref(j);
	return 0;
}

/* The batch an algorithm is written at: 0 for the layer's whole batch. */
static uint32_t algo_batch(const struct mp_prof_algo *a, uint32_t layer_batch)
{
	return a->batch == layer_batch ? 0 : a->batch;
}

static int check_layer(const struct mp_net *net, const struct mp_prof_layer *pl, struct mp_error *err)
{
	const char *name = net->layers[pl->layer].name;
	uint32_t batch = layer_batch(net, (uint32_t)pl->layer);
	char what[160];

	if (!pl->measured)
		return 0;
	if (!(pl->fwd_ms >= 0)) {
		mp_error_set(err, "layer '%s': measured without a forward time", name);
		return -1;
	}
	snprintf(what, sizeof(what), "layer '%s'", name);
	if (check_ms(pl->fwd_ms, what, err) < 0 || check_ms(pl->bwd_ms, what, err) < 0 ||
	    check_ms(pl->update_ms, what, err) < 0)
		return -1;
	if (pl->workspace_bytes > MP_MAX_BYTES) {
		mp_error_set(err, "layer '%s': workspace of %llu bytes", name, (unsigned long long)pl->workspace_bytes);
		return -1;
	}
	for (uint32_t k = 0; k < pl->n_algos; k++) {
		const struct mp_prof_algo *a = &pl->algos[k];

		snprintf(what, sizeof(what), "layer '%s': algos[%u]", name, k);
		if (!a->name || !*a->name) {
			mp_error_set(err, "%s: no name", what);
			return -1;
		}
		if (check_text(a->name, what, err) < 0)
			return -1;
		snprintf(what, sizeof(what), "layer '%s': algos[%u] '%s'", name, k, a->name);
		if (a->fwd_ms < 0 && a->bwd_ms < 0) {
			mp_error_set(err, "%s: no time in either phase", what);
			return -1;
		}
		if (check_ms(a->fwd_ms, what, err) < 0 || check_ms(a->bwd_ms, what, err) < 0)
			return -1;
		if (a->batch > batch) {
			mp_error_set(err, "%s: micro-batch %u is above the layer's batch %u", what, a->batch, batch);
			return -1;
		}
		if (a->workspace_bytes > MP_MAX_BYTES) {
			mp_error_set(err, "%s: workspace of %llu bytes", what, (unsigned long long)a->workspace_bytes);
			return -1;
		}
		for (uint32_t j = 0; j < k; j++)
			if (!strcmp(pl->algos[j].name, a->name) && algo_batch(&pl->algos[j], batch) == algo_batch(a, batch)) {
				mp_error_set(err, "%s: measured twice at batch %u", what, a->batch ? a->batch : batch);
				return -1;
			}
	}
	return 0;
}

/* The file's value of a phase the measurement did not time: its "time", or
 * where it had none, its first algorithm's (the default, memplan-net(5)). */
static json_t *kept_phase(json_t *layer, const char *key)
{
	json_t *t = json_object_get(layer, "time");

	if (!t && strcmp(key, "update"))
		t = json_object_get(json_array_get(json_object_get(layer, "algos"), 0), "time");
	return json_object_get(t, key);
}

static json_t *time_json(double fwd_ms, double bwd_ms)
{
	json_t *t = json_object();

	if (fwd_ms >= 0)
		json_object_set_new(t, "fwd", json_real(fwd_ms));
	if (bwd_ms >= 0)
		json_object_set_new(t, "bwd", json_real(bwd_ms));
	return t;
}

static void apply_layer(json_t *obj, const struct mp_prof_layer *pl, uint32_t batch)
{
	static const char *const keys[] = { "fwd", "bwd", "update" };
	const double ms[] = { pl->fwd_ms, pl->bwd_ms, pl->update_ms };
	json_t *t = json_object();

	for (int p = 0; p < 3; p++) {
		json_t *old;

		if (ms[p] >= 0)
			json_object_set_new(t, keys[p], json_real(ms[p]));
		else if ((old = kept_phase(obj, keys[p])))
			json_object_set(t, keys[p], old);
	}
	json_object_set_new(obj, "time", t);
	if (pl->workspace_bytes)
		json_object_set_new(obj, "workspace", json_integer((json_int_t)pl->workspace_bytes));
	else
		json_object_del(obj, "workspace");
	if (!pl->n_algos) {
		json_object_del(obj, "algos");
		return;
	}
	json_t *algos = json_array();

	for (uint32_t k = 0; k < pl->n_algos; k++) {
		const struct mp_prof_algo *a = &pl->algos[k];
		json_t *o = json_object();

		json_object_set_new(o, "name", json_string(a->name));
		if (algo_batch(a, batch))
			json_object_set_new(o, "batch", json_integer(a->batch));
		json_object_set_new(o, "workspace", json_integer((json_int_t)a->workspace_bytes));
		json_object_set_new(o, "time", time_json(a->fwd_ms, a->bwd_ms));
		json_array_append_new(algos, o);
	}
	json_object_set_new(obj, "algos", algos);
}

/* {"tool", "iters", "warmup", "batches"}, with the file's generator as
 * "from" (a profiled file's own "from": profiling again does not nest). */
static json_t *generator_json(const json_t *root, const struct mp_profile *m)
{
	json_t *g = json_object(), *from = json_object_get(root, "generator");
	const char *tool = json_string_value(json_object_get(from, "tool"));

	if (tool && !strcmp(tool, "memplan profile"))
		from = json_object_get(from, "from");
	json_object_set_new(g, "tool", json_string("memplan profile"));
	json_object_set_new(g, "iters", json_integer(m->iters));
	json_object_set_new(g, "warmup", json_integer(m->warmup));
	json_object_set_new(g, "batches", json_string(prof_batches_name(m->batches)));
	if (from)
		json_object_set_new(g, "from", json_deep_copy(from));
	return g;
}

json_t *prof_apply(const json_t *net_root, const struct mp_net *net, const struct mp_profile *m,
		      const char **kept_why, uint32_t *n_kept, struct mp_error *err)
{
	const struct mp_prof_layer **by_layer = mp_xcalloc(net->n_layers + 1, sizeof(*by_layer));
	json_t *root = NULL, *layers = json_object_get(net_root, "layers");
	char source[160];

	if (json_array_size(layers) != net->n_layers) {
		mp_error_set(err, "the net file has %zu layers, the net %u", json_array_size(layers), net->n_layers);
		goto out;
	}
	if (!memchr(m->device, 0, sizeof(m->device)) || !m->device[0]) {
		mp_error_set(err, "the measurement names no device");
		goto out;
	}
	if (check_text(m->device, "device", err) < 0)
		goto out;
	for (uint32_t i = 0; i < m->n_layers; i++) {
		const struct mp_prof_layer *pl = &m->layers[i];
		const struct mp_layer *ly;

		if (pl->layer < 0 || (uint32_t)pl->layer >= net->n_layers) {
			mp_error_set(err, "layers[%u]: no layer %d in a net of %u", i, pl->layer, net->n_layers);
			goto out;
		}
		ly = &net->layers[pl->layer];
		if (by_layer[pl->layer]) {
			mp_error_set(err, "layer '%s': measured twice", ly->name);
			goto out;
		}
		by_layer[pl->layer] = pl;
		if (check_layer(net, pl, err) < 0)
			goto out;
	}
	root = json_deep_copy(net_root);
	layers = json_object_get(root, "layers");
	*n_kept = 0;
	for (uint32_t i = 0; i < net->n_layers; i++) {
		const struct mp_prof_layer *pl = by_layer[i];

		if (kept_why)
			kept_why[i] = NULL;
		if (!pl || !pl->measured) {
			if (kept_why)
				kept_why[i] = pl && pl->why ? pl->why : "not measured";
			++*n_kept;
			continue;
		}
		apply_layer(json_array_get(layers, i), pl, layer_batch(net, i));
	}
	snprintf(source, sizeof(source), "measured:%s", m->device);
	json_object_set_new(root, "time_source", json_string(source));
	json_object_set_new(root, "generator", generator_json(net_root, m));
out:
	free(by_layer);
	return root;
}
