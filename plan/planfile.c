/*
 * The plan file, memplan-plan(5) (format "memplan-plan/1"): writer and
 * reader.  A plan is self-contained: the net as given (with the SHA-256 of
 * its canonical serialization), the device, the budget, the planner, the
 * prediction, the arena, and the schedule, one entry per action with names
 * instead of ids.  The reader validates every field with its JSON path,
 * checks the digest, loads the embedded net, rebuilds the schedule, runs the
 * simulator on it again (so a schedule that is not executable is refused
 * with the simulator's message) and checks the arena offsets against the
 * re-simulated lifetimes.  Writing then reading gives the same schedule.
 * O(n) in the actions, plus the arena check (plan/arena.c).
 */
#include "planfile.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/evp.h>

#include "../analysis/base/jget.h"
#include "../analysis/jobs.h"
#include "arena.h"

#define PLAN_FORMAT "memplan-plan/1"

static const char *const ws_modes[] = { "none", "dynamic", "wr", "wd" };

/* The engine each action runs on (memplan-plan(5) "stream"). */
static const char *act_stream(enum mp_act_kind k)
{
	return k == MP_ACT_SWAP_IN ? "h2d" : k == MP_ACT_SWAP_OUT ? "d2h" : "compute";
}

/*
 * v with every real that holds a whole number below 2^63 in magnitude made an
 * integer, a new reference: 1.0, 1 and 1e0 are one value, however a tool (jq,
 * an editor's formatter) chose to spell it.
 */
static json_t *json_canonical(json_t *v)
{
	json_t *c, *x;
	const char *k;
	size_t i;
	double d;

	switch (json_typeof(v)) {
	case JSON_OBJECT:
		c = json_object();
		json_object_foreach(v, k, x)
			json_object_set_new(c, k, json_canonical(x));
		return c;
	case JSON_ARRAY:
		c = json_array();
		json_array_foreach(v, i, x)
			json_array_append_new(c, json_canonical(x));
		return c;
	case JSON_REAL:
		d = json_real_value(v);
		if (d == floor(d) && fabs(d) < 9223372036854775808.0)
			return json_integer((json_int_t)d);
		return json_incref(v);
	default:
		return json_incref(v);
	}
}

static int digest_chunk(const char *buf, size_t n, void *ctx)
{
	return EVP_DigestUpdate(ctx, buf, n) == 1 ? 0 : -1;
}

/*
 * The SHA-256 of v's values serialized canonically (json_canonical; compact,
 * keys sorted, ASCII only), as 64 lowercase hex digits: reformatting a plan
 * (jq ., an editor) keeps its digest, changing a value does not.  Without
 * canonical, of v as it is: the digest of plans memplan wrote before it
 * canonicalised, which the reader still accepts.  0, or -1 if v cannot be
 * serialized.
 */
static int json_sha256_hex(const json_t *v, bool canonical, char hex[65])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	json_t *c = canonical ? json_canonical((json_t *)v) : json_incref((json_t *)v);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	int ok;

	/* streamed: no serialization of a 10^5-layer net held in memory */
	ok = ctx && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	     json_dump_callback(c, digest_chunk, ctx, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) == 0 &&
	     EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 32;
	EVP_MD_CTX_free(ctx);
	json_decref(c);
	if (!ok)
		return -1;
	for (unsigned i = 0; i < 32; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 15];
	}
	hex[64] = '\0';
	return 0;
}

int plan_net_sha256(const json_t *v, char hex[65])
{
	return json_sha256_hex(v, true, hex);
}

/* --- algorithms by name ---------------------------------------------------
 * An op may list one algorithm several times, measured at different batch
 * sizes (memplan-net(5)); the pair (name, batch) is unique.  A name is
 * resolved to the entry measured at the micro-batch's size, else the
 * full-batch entry, else the first of that name; "algo_batch" names the entry
 * explicitly where that rule would pick another. */

static int32_t algo_find(const struct mp_op *op, const char *name, uint32_t batch)
{
	for (uint32_t k = 0; k < op->n_algos; k++)
		if (op->algos[k].batch == batch && !strcmp(op->algos[k].name, name))
			return (int32_t)k;
	return -1;
}

static int32_t algo_resolve(const struct mp_op *op, const char *name, uint32_t micro_batch)
{
	int32_t k = -1;

	if (micro_batch && micro_batch != op->batch)
		k = algo_find(op, name, micro_batch);
	if (k < 0)
		k = algo_find(op, name, 0);
	for (uint32_t j = 0; k < 0 && j < op->n_algos; j++)
		if (!strcmp(op->algos[j].name, name))
			k = (int32_t)j;
	return k;
}

/* The batch an algorithm entry was measured at (the op's batch for 0). */
static uint32_t algo_batch(const struct mp_op *op, int32_t algo)
{
	return op->algos[algo].batch ? op->algos[algo].batch : op->batch;
}

/* --- writer --------------------------------------------------------------- */

/*
 * The strings a schedule repeats, made once and shared by reference: an
 * action's kind, its stream and its op's or tensor's name.  Each json_string
 * is two allocations, and a 10^4-layer plan writes 120635 actions.
 */
struct shared_names {
	json_t *kind[MP_ACT_WAIT + 1], *stream[MP_ACT_WAIT + 1];
	json_t **op, **tensor;
};

static void names_init(struct shared_names *nm, const struct mp_net *net)
{
	memset(nm, 0, sizeof(*nm));
	nm->op = mp_xcalloc(net->n_ops ? net->n_ops : 1, sizeof(*nm->op));
	nm->tensor = mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*nm->tensor));
}

static void names_free(struct shared_names *nm, const struct mp_net *net)
{
	for (unsigned k = 0; k <= MP_ACT_WAIT; k++) {
		json_decref(nm->kind[k]);
		json_decref(nm->stream[k]);
	}
	for (uint32_t i = 0; i < net->n_ops; i++)
		json_decref(nm->op[i]);
	for (uint32_t i = 0; i < net->n_tensors; i++)
		json_decref(nm->tensor[i]);
	free(nm->op);
	free(nm->tensor);
}

/* *slot, made from str the first time: a new reference */
static json_t *shared_string(json_t **slot, const char *str)
{
	if (!*slot)
		*slot = json_string(str);
	return json_incref(*slot);
}

static json_t *action_json(const struct mp_net *net, const struct mp_schedule *s,
			   const uint64_t *offset, uint32_t i, struct shared_names *nm)
{
	const struct mp_action *a = &s->a[i];
	json_t *o = json_object();

	json_object_set_new(o, "action", shared_string(&nm->kind[a->kind], mp_act_name(a->kind)));
	if (a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE) {
		const struct mp_op *op = &net->ops[a->op];

		json_object_set_new(o, "op", shared_string(&nm->op[a->op], op->name));
		json_object_set_new(o, "stream", shared_string(&nm->stream[a->kind], act_stream(a->kind)));
		if (a->algo >= 0) {
			json_object_set_new(o, "algo", json_string(op->algos[a->algo].name));
			if (algo_resolve(op, op->algos[a->algo].name, 0) != a->algo)
				json_object_set_new(o, "algo_batch", json_integer(algo_batch(op, a->algo)));
		}
		if (a->micro > 1) {
			json_t *m = json_array();

			for (uint32_t k = 0; k < a->micro; k++) {
				const struct mp_micro *mb = &s->micro[a->micro_at + k];
				json_t *e = json_array();

				json_array_append_new(e, json_integer(mb->batch));
				if (mb->algo < 0) {
					json_array_append_new(e, json_null());
				} else {
					json_array_append_new(e, json_string(op->algos[mb->algo].name));
					if (algo_resolve(op, op->algos[mb->algo].name, mb->batch) != mb->algo)
						json_array_append_new(e, json_integer(algo_batch(op, mb->algo)));
				}
				json_array_append_new(m, e);
			}
			json_object_set_new(o, "micro", m);
		}
	} else {
		const struct mp_tensor *t = &net->tensors[a->tensor];

		json_object_set_new(o, "tensor", shared_string(&nm->tensor[a->tensor], t->name));
		json_object_set_new(o, "stream", shared_string(&nm->stream[a->kind], act_stream(a->kind)));
		if (a->kind == MP_ACT_ALLOC)
			json_object_set_new(o, "bytes", json_integer((json_int_t)a->bytes));
		else if (a->kind == MP_ACT_SWAP_IN || a->kind == MP_ACT_SWAP_OUT)
			json_object_set_new(o, "bytes", json_integer((json_int_t)t->bytes));
		if (a->kind == MP_ACT_ALLOC || a->kind == MP_ACT_SWAP_IN)
			json_object_set_new(o, "offset", json_integer((json_int_t)offset[i]));
	}
	json_object_set_new(o, "start_ms", json_real(a->start_ms));
	json_object_set_new(o, "end_ms", json_real(a->end_ms));
	json_object_set_new(o, "resident_bytes", json_integer((json_int_t)a->resident_bytes));
	return o;
}

/* "jobs" of a plan of several jobs (memplan-plan(5)): each job's name,
 * file, offset, prefix, predicted iteration against alone, and its net as
 * given with its digest (nets: the jobs' net files, in order). */
static json_t *jobs_json(const struct mp_net *net, json_t *nets, const struct mp_plan *p)
{
	json_t *arr = json_array();
	double ms[JOBS_MAX];
	char hex[65];

	jobs_times(net, &p->sched, ms);
	for (uint32_t j = 0; j < net->n_jobs; j++) {
		const struct mp_job *J = &net->jobs[j];
		json_t *o = json_object(), *nj = json_array_get(nets, j);

		MP_ASSERT(json_is_object(nj) && plan_net_sha256(nj, hex) == 0);
		json_object_set_new(o, "name", json_string(J->name));
		json_object_set_new(o, "file", J->file ? json_string(J->file) : json_null());
		json_object_set_new(o, "offset_ms", json_real(J->offset_ms));
		json_object_set_new(o, "prefix", json_string(J->prefix));
		json_object_set_new(o, "time_ms", json_real(ms[j]));
		json_object_set_new(o, "alone_time_ms", json_real(J->alone_ms));
		json_object_set_new(o, "overhead", json_real(J->alone_ms > 0 ? ms[j] / J->alone_ms - 1 : 0));
		json_object_set_new(o, "alone_peak_bytes", json_integer((json_int_t)J->alone_peak));
		json_object_set(o, "net", nj);
		json_object_set_new(o, "net_sha256", json_string(hex));
		json_array_append_new(arr, o);
	}
	return arr;
}

json_t *plan_to_json(const struct mp_net *net, json_t *net_json, const struct mp_plan_req *req,
		     const struct mp_plan *p)
{
	const struct mp_sim *sim = &p->sim;
	struct mp_plan tmp;
	const struct mp_plan *pa = p;   /* the plan whose arena is written */
	json_t *root = json_object(), *o, *sched, *ck = json_array();
	struct shared_names nm;
	char hex[65];

	MP_ASSERT(net_json && (net->n_jobs ? json_is_array(net_json) && json_array_size(net_json) == net->n_jobs :
				json_is_object(net_json)));
	if (!p->offset) {
		/* no arena yet: assign one on a shallow copy */
		tmp = *p;
		tmp.offset = NULL;
		plan_assign_arena(net, &tmp);
		pa = &tmp;
	}
	MP_ASSERT(net->n_jobs || plan_net_sha256(net_json, hex) == 0);
	json_object_set_new(root, "format", json_string(PLAN_FORMAT));
	json_object_set_new(root, "planner", json_string(mp_planner_name(p->planner)));
	json_object_set_new(root, "budget_bytes", json_integer((json_int_t)req->budget_bytes));
	json_object_set_new(root, "device", device_to_json(&req->device));
	json_object_set_new(root, "workspace_mode", json_string(ws_modes[req->ws_mode]));
	json_object_set_new(root, "workspace_limit_bytes", json_integer((json_int_t)req->ws_limit_bytes));
	for (int t = 0; t < MP_L__COUNT; t++)
		if (req->popts.checkpoints & (1u << t))
			json_array_append_new(ck, json_string(mp_layer_type_name((enum mp_layer_type)t)));
	json_object_set_new(root, "checkpoints", ck);
	if (p->note[0])
		json_object_set_new(root, "note", json_string(p->note));
	if (net->n_jobs) {
		json_object_set_new(root, "jobs", jobs_json(net, net_json, p));
	} else {
		json_object_set(root, "net", net_json);
		json_object_set_new(root, "net_sha256", json_string(hex));
	}

	o = json_object();
	json_object_set_new(o, "peak_bytes", json_integer((json_int_t)sim->peak_bytes));
	json_object_set_new(o, "peak_step", json_integer(sim->n_steps ? sim->peak_step + 1 : 0));
	if (sim->n_steps)
		json_object_set_new(o, "peak_op", json_string(net->ops[sim->steps[sim->peak_step].op].name));
	json_object_set_new(o, "fits", json_boolean(p->fits));
	json_object_set_new(o, "time_ms", json_real(sim->time_ms));
	json_object_set_new(o, "baseline_time_ms", json_real(p->baseline_ms));
	json_object_set_new(o, "baseline_peak_bytes", json_integer((json_int_t)p->baseline_peak));
	json_object_set_new(o, "overhead", json_real(p->overhead));
	json_object_set_new(o, "stall_ms", json_real(sim->stall_ms));
	json_object_set_new(o, "swap_out_bytes", json_integer((json_int_t)sim->d2h_bytes));
	json_object_set_new(o, "swap_in_bytes", json_integer((json_int_t)sim->h2d_bytes));
	json_object_set_new(o, "recomputed_ops", json_integer(sim->n_recompute));
	json_object_set_new(o, "recompute_ms", json_real(sim->recompute_ms));
	json_object_set_new(o, "msr", json_real(p->msr));
	json_object_set_new(o, "eor", json_real(p->eor));
	json_object_set_new(o, "cbr", json_real(p->cbr));
	json_object_set_new(o, "iterations", json_integer(p->iterations));
	json_object_set_new(o, "uncached_swap_bytes", json_integer((json_int_t)p->uncached_swap_bytes));
	json_object_set_new(root, "prediction", o);

	json_object_set_new(root, "arena", json_pack("{s:I, s:I, s:i}",
						     "bytes", (json_int_t)pa->arena_bytes,
						     "max_live_bytes", (json_int_t)pa->max_live_bytes,
						     "alignment", (int)PLAN_ARENA_ALIGN));
	sched = json_array();
	names_init(&nm, net);
	for (uint32_t i = 0; i < p->sched.n; i++)
		json_array_append_new(sched, action_json(net, &p->sched, pa->offset, i, &nm));
	names_free(&nm, net);
	json_object_set_new(root, "schedule", sched);
	if (pa == &tmp)
		free(tmp.offset);
	return root;
}

/* --- reader --------------------------------------------------------------- */

/* A byte count written by memplan: an integer in [0, 1 PiB] (no units). */
static int get_bytes(const json_t *v, const char *path, uint64_t *out, struct mp_error *err)
{
	int64_t i;

	if (jget_int(v, path, 0, (int64_t)MP_MAX_BYTES, &i, err) < 0)
		return -1;
	*out = (uint64_t)i;
	return 0;
}

/* A required member: *out borrowed, or an error naming it. */
static int member(json_t *obj, const char *path, const char *key, json_t **out,
		  struct mp_error *err)
{
	*out = json_object_get(obj, key);
	if (!*out) {
		mp_error_set(err, "%s: missing \"%s\"", *path ? path : "(top level)", key);
		return -1;
	}
	return 0;
}

static int read_device(json_t *v, struct mp_device *d, struct mp_error *err)
{
	json_t *mem, *copy = NULL;
	int unlimited, rc;

	if (jget_object(v, "device", err) < 0)
		return -1;
	/* memory 0: unlimited (no device given), which device_from_json refuses */
	mem = json_object_get(v, "memory");
	unlimited = json_is_integer(mem) && json_integer_value(mem) == 0;
	if (unlimited) {
		copy = json_copy(v);
		json_object_set_new(copy, "memory", json_integer(1));
		v = copy;
	}
	rc = device_from_json(v, "device", d, err);
	json_decref(copy);
	if (rc < 0)
		return -1;
	if (unlimited)
		d->memory_bytes = 0;
	/* the catalog entry or the default link it was written from: restore
	 * where its figures come from */
	{
		struct mp_device def;
		const struct mp_device *c = device_find(d->name);

		device_default(&def);
		if (!c && !strcmp(d->name, def.name))
			c = &def;
		if (c && c->memory_bytes == d->memory_bytes && c->h2d_gbps == d->h2d_gbps &&
		    c->d2h_gbps == d->d2h_gbps && c->latency_us == d->latency_us &&
		    c->mem_gbps == d->mem_gbps && !memcmp(c->tflops, d->tflops, sizeof(d->tflops)))
			*d = *c;
	}
	return 0;
}

static int read_request(json_t *root, struct mp_plan_req *req, enum mp_planner *planner,
			struct mp_error *err)
{
	json_t *v;
	const char *s;
	int k;

	memset(req, 0, sizeof(*req));
	policy_opts_default(&req->popts);
	req->dqn_seed = 1; /* memplan plan's default: the file does not record it */
	if (member(root, "", "planner", &v, err) < 0 || jget_string(v, "planner", &s, err) < 0)
		return -1;
	if ((k = mp_planner_parse(s)) < 0) {
		mp_error_set(err, "planner: unknown planner '%s'", s);
		return -1;
	}
	*planner = (enum mp_planner)k;
	if (member(root, "", "budget_bytes", &v, err) < 0 ||
	    get_bytes(v, "budget_bytes", &req->budget_bytes, err) < 0)
		return -1;
	if (member(root, "", "device", &v, err) < 0 || read_device(v, &req->device, err) < 0)
		return -1;
	if (member(root, "", "workspace_mode", &v, err) < 0 ||
	    jget_string(v, "workspace_mode", &s, err) < 0)
		return -1;
	for (k = 0; k < 4 && strcmp(s, ws_modes[k]); k++)
		;
	if (k == 4) {
		mp_error_set(err, "workspace_mode: unknown mode '%s' (none, dynamic, wr, wd)", s);
		return -1;
	}
	req->ws_mode = (enum mp_ws_mode)k;
	if ((v = json_object_get(root, "workspace_limit_bytes")) &&
	    get_bytes(v, "workspace_limit_bytes", &req->ws_limit_bytes, err) < 0)
		return -1;
	if ((v = json_object_get(root, "checkpoints"))) {
		size_t i;
		json_t *x;
		char p[64];

		if (!json_is_array(v)) {
			mp_error_set(err, "checkpoints: expected an array of layer types, got %s", jget_type(v));
			return -1;
		}
		req->popts.checkpoints = 0;
		json_array_foreach(v, i, x) {
			snprintf(p, sizeof(p), "checkpoints[%zu]", i);
			if (jget_string(x, p, &s, err) < 0)
				return -1;
			for (k = 0; k < MP_L__COUNT && strcmp(s, mp_layer_type_name((enum mp_layer_type)k)); k++)
				;
			if (k == MP_L__COUNT) {
				mp_error_set(err, "%s: unknown layer type '%s'", p, s);
				return -1;
			}
			req->popts.checkpoints |= 1u << k;
		}
	}
	return 0;
}

/* Check the prediction's fields; keep what the schedule cannot give back. */
static int read_prediction(json_t *v, struct mp_plan *p, struct mp_error *err)
{
	enum { BYTES, MS, FINITE, COUNT, STRING, BOOL };
	static const struct { const char *key; int type; int required; } f[] = {
		{ "peak_bytes", BYTES, 1 }, { "peak_step", COUNT, 1 }, { "peak_op", STRING, 0 },
		{ "fits", BOOL, 0 }, { "time_ms", MS, 1 }, { "baseline_time_ms", MS, 1 },
		{ "baseline_peak_bytes", BYTES, 1 }, { "overhead", FINITE, 1 }, { "stall_ms", MS, 1 },
		{ "swap_out_bytes", BYTES, 1 }, { "swap_in_bytes", BYTES, 1 },
		{ "recomputed_ops", COUNT, 1 }, { "recompute_ms", MS, 0 }, { "msr", FINITE, 1 }, { "eor", FINITE, 1 },
		{ "cbr", FINITE, 1 }, { "iterations", COUNT, 0 }, { "uncached_swap_bytes", BYTES, 0 },
	};
	enum { NF = sizeof(f) / sizeof(f[0]) };
	const char *keys[NF + 1];
	char path[64];

	for (unsigned i = 0; i < NF; i++)
		keys[i] = f[i].key;
	keys[NF] = NULL;
	if (jget_object(v, "prediction", err) < 0 || jget_check_keys(v, "prediction", keys, err) < 0)
		return -1;
	for (unsigned i = 0; i < NF; i++) {
		json_t *x = json_object_get(v, f[i].key);
		uint64_t b;
		int64_t n;
		double d;
		const char *s;
		int bl;
		int rc = 0;

		if (!x) {
			if (f[i].required) {
				mp_error_set(err, "prediction: missing \"%s\"", f[i].key);
				return -1;
			}
			continue;
		}
		jget_path(path, sizeof(path), "prediction", f[i].key);
		switch (f[i].type) {
		case BYTES: rc = get_bytes(x, path, &b, err); break;
		case MS: rc = jget_nonneg(x, path, &d, err); break;
		case FINITE: rc = jget_finite(x, path, &d, err); break;
		case COUNT: rc = jget_int(x, path, 0, UINT32_MAX, &n, err); break;
		case STRING: rc = jget_string(x, path, &s, err); break;
		case BOOL: rc = jget_bool(x, path, &bl, err); break;
		}
		if (rc < 0)
			return -1;
	}
	jget_nonneg(json_object_get(v, "baseline_time_ms"), "", &p->baseline_ms, err);
	get_bytes(json_object_get(v, "baseline_peak_bytes"), "", &p->baseline_peak, err);
	if (json_object_get(v, "uncached_swap_bytes"))
		get_bytes(json_object_get(v, "uncached_swap_bytes"), "", &p->uncached_swap_bytes, err);
	if (json_object_get(v, "iterations"))
		p->iterations = (uint32_t)json_integer_value(json_object_get(v, "iterations"));
	return 0;
}

/* Names to ids, for the schedule's entries. */
struct names {
	struct mp_strmap tensors, ops;
};

/* An algorithm of op by name (and optional measured batch) at path. */
static int read_algo(const struct mp_op *op, json_t *name_v, json_t *batch_v, uint32_t micro_batch,
		     const char *path, const char *batch_path, int32_t *out, struct mp_error *err)
{
	const char *name;

	if (jget_string(name_v, path, &name, err) < 0)
		return -1;
	if (batch_v) {
		int64_t b;

		if (jget_int(batch_v, batch_path, 1, UINT32_MAX, &b, err) < 0)
			return -1;
		*out = algo_find(op, name, (uint32_t)b == op->batch ? 0 : (uint32_t)b);
		if (*out < 0) {
			mp_error_set(err, "%s: op '%s' has no algorithm '%s' measured at batch %lld",
				     batch_path, op->name, name, (long long)b);
			return -1;
		}
		return 0;
	}
	*out = algo_resolve(op, name, micro_batch);
	if (*out < 0) {
		mp_error_set(err, "%s: op '%s' has no algorithm '%s'", path, op->name, name);
		return -1;
	}
	return 0;
}

static int read_micro(const struct mp_op *op, json_t *v, const char *path,
		      struct mp_schedule *s, uint32_t i, struct mp_error *err)
{
	struct mp_micro *m;
	size_t k, n;
	json_t *x;
	char p[300], q[300];
	int rc = -1;

	if (!json_is_array(v)) {
		mp_error_set(err, "%s: expected an array of [batch, algorithm] pairs, got %s", path, jget_type(v));
		return -1;
	}
	n = json_array_size(v);
	if (n < 2 || n > op->batch) {
		mp_error_set(err, "%s: expected 2 to %u micro-batches (the batch), got %zu", path, op->batch, n);
		return -1;
	}
	m = mp_xcalloc(n, sizeof(*m));
	json_array_foreach(v, k, x) {
		int64_t b;

		snprintf(p, sizeof(p), "%s[%zu]", path, k);
		if (!json_is_array(x) || json_array_size(x) < 2 || json_array_size(x) > 3) {
			mp_error_set(err, "%s: expected [batch, algorithm] or [batch, algorithm, algo_batch]", p);
			goto out;
		}
		snprintf(q, sizeof(q), "%s[0]", p);
		if (jget_int(json_array_get(x, 0), q, 1, op->batch, &b, err) < 0)
			goto out;
		m[k].batch = (uint32_t)b;
		snprintf(q, sizeof(q), "%s[1]", p);
		if (json_is_null(json_array_get(x, 1))) {
			if (json_array_size(x) == 3) {
				mp_error_set(err, "%s: the default implementation has no algo_batch", p);
				goto out;
			}
			m[k].algo = -1;
		} else {
			char r[300];

			snprintf(r, sizeof(r), "%s[2]", p);
			if (read_algo(op, json_array_get(x, 1), json_array_get(x, 2), m[k].batch,
				      q, r, &m[k].algo, err) < 0)
				goto out;
		}
	}
	sched_set_micro(s, i, m, (uint32_t)n);
	rc = 0;
out:
	free(m);
	return rc;
}

static int read_action(const struct mp_net *net, const struct names *N, json_t *x,
		       uint32_t i, struct mp_schedule *s, uint64_t *offset, struct mp_error *err)
{
	static const char *const kinds[] = { "compute", "recompute", "alloc", "free",
		"swap_out", "swap_in", "wait" };
	static const char *const op_keys[] = { "action", "op", "stream", "algo", "algo_batch", "micro",
		"start_ms", "end_ms", "resident_bytes", NULL };
	static const char *const alloc_keys[] = { "action", "tensor", "stream", "bytes", "offset",
		"start_ms", "end_ms", "resident_bytes", NULL };
	static const char *const swap_out_keys[] = { "action", "tensor", "stream", "bytes",
		"start_ms", "end_ms", "resident_bytes", NULL };
	static const char *const plain_keys[] = { "action", "tensor", "stream",
		"start_ms", "end_ms", "resident_bytes", NULL };
	char path[64], p[128];
	const char *str;
	json_t *v;
	enum mp_act_kind kind;
	struct mp_action *a;
	double ms;
	uint64_t b;
	int k;

	snprintf(path, sizeof(path), "schedule[%u]", i);
	if (jget_object(x, path, err) < 0 || member(x, path, "action", &v, err) < 0 ||
	    jget_string(v, jget_path(p, sizeof(p), path, "action"), &str, err) < 0)
		return -1;
	for (k = 0; k < 7 && strcmp(str, kinds[k]); k++)
		;
	if (k == 7) {
		mp_error_set(err, "%s: unknown action '%s' (compute, recompute, alloc, free, "
			     "swap_out, swap_in, wait)", p, str);
		return -1;
	}
	kind = (enum mp_act_kind)k;
	if (jget_check_keys(x, path, kind == MP_ACT_COMPUTE || kind == MP_ACT_RECOMPUTE ? op_keys :
			    kind == MP_ACT_ALLOC || kind == MP_ACT_SWAP_IN ? alloc_keys :
			    kind == MP_ACT_SWAP_OUT ? swap_out_keys : plain_keys, err) < 0)
		return -1;
	if (kind == MP_ACT_COMPUTE || kind == MP_ACT_RECOMPUTE) {
		int32_t op;

		if (member(x, path, "op", &v, err) < 0 ||
		    jget_string(v, jget_path(p, sizeof(p), path, "op"), &str, err) < 0)
			return -1;
		if ((op = mp_strmap_get(&N->ops, str)) < 0) {
			mp_error_set(err, "%s: no op named '%s'", p, str);
			return -1;
		}
		sched_push(s, kind, op, -1, 0);
	} else {
		int32_t t;

		if (member(x, path, "tensor", &v, err) < 0 ||
		    jget_string(v, jget_path(p, sizeof(p), path, "tensor"), &str, err) < 0)
			return -1;
		if ((t = mp_strmap_get(&N->tensors, str)) < 0) {
			mp_error_set(err, "%s: no tensor named '%s'", p, str);
			return -1;
		}
		sched_push(s, kind, -1, t, 0);
	}
	a = &s->a[s->n - 1];
	if (member(x, path, "stream", &v, err) < 0 ||
	    jget_string(v, jget_path(p, sizeof(p), path, "stream"), &str, err) < 0)
		return -1;
	if (strcmp(str, act_stream(kind))) {
		mp_error_set(err, "%s: expected \"%s\" for a %s, got \"%s\"", p, act_stream(kind),
			     mp_act_name(kind), str);
		return -1;
	}
	if (kind == MP_ACT_COMPUTE || kind == MP_ACT_RECOMPUTE) {
		const struct mp_op *op = &net->ops[a->op];
		char q[128];

		if ((v = json_object_get(x, "algo"))) {
			if (read_algo(op, v, json_object_get(x, "algo_batch"), 0,
				      jget_path(p, sizeof(p), path, "algo"),
				      jget_path(q, sizeof(q), path, "algo_batch"), &a->algo, err) < 0)
				return -1;
		} else if (json_object_get(x, "algo_batch")) {
			mp_error_set(err, "%s: algo_batch without algo", jget_path(p, sizeof(p), path, "algo_batch"));
			return -1;
		}
		if ((v = json_object_get(x, "micro")) &&
		    read_micro(op, v, jget_path(p, sizeof(p), path, "micro"), s, s->n - 1, err) < 0)
			return -1;
		a = &s->a[s->n - 1];
	} else if (kind == MP_ACT_ALLOC || kind == MP_ACT_SWAP_IN || kind == MP_ACT_SWAP_OUT) {
		const struct mp_tensor *t = &net->tensors[a->tensor];

		if (member(x, path, "bytes", &v, err) < 0 ||
		    get_bytes(v, jget_path(p, sizeof(p), path, "bytes"), &b, err) < 0)
			return -1;
		if (kind != MP_ACT_ALLOC && b != t->bytes) {
			mp_error_set(err, "%s: '%s' is %llu bytes, not %llu", p, t->name,
				     (unsigned long long)t->bytes, (unsigned long long)b);
			return -1;
		}
		if (kind == MP_ACT_ALLOC && t->kind != MP_TK_WORKSPACE && b < t->bytes) {
			mp_error_set(err, "%s: '%s' needs %llu bytes, got %llu", p, t->name,
				     (unsigned long long)t->bytes, (unsigned long long)b);
			return -1;
		}
		a->bytes = kind == MP_ACT_SWAP_OUT ? 0 : b;
		if (kind != MP_ACT_SWAP_OUT) {
			if (member(x, path, "offset", &v, err) < 0 ||
			    get_bytes(v, jget_path(p, sizeof(p), path, "offset"), &offset[i], err) < 0)
				return -1;
		}
	}
	/* the simulator recomputes these; they must still be well formed */
	if (member(x, path, "start_ms", &v, err) < 0 ||
	    jget_nonneg(v, jget_path(p, sizeof(p), path, "start_ms"), &ms, err) < 0 ||
	    member(x, path, "end_ms", &v, err) < 0 ||
	    jget_nonneg(v, jget_path(p, sizeof(p), path, "end_ms"), &ms, err) < 0 ||
	    member(x, path, "resident_bytes", &v, err) < 0 ||
	    get_bytes(v, jget_path(p, sizeof(p), path, "resident_bytes"), &b, err) < 0)
		return -1;
	return 0;
}

static int read_schedule(const struct mp_net *net, json_t *v, struct mp_plan *p,
			 struct mp_error *err)
{
	struct names N;
	size_t n, i;
	json_t *x;
	int rc = -1;

	if (!json_is_array(v)) {
		mp_error_set(err, "schedule: expected an array of actions, got %s", jget_type(v));
		return -1;
	}
	n = json_array_size(v);
	if (n > UINT32_MAX / 2) {
		mp_error_set(err, "schedule: %zu actions is more than memplan handles", n);
		return -1;
	}
	mp_strmap_init(&N.tensors);
	mp_strmap_init(&N.ops);
	mp_strmap_reserve(&N.tensors, net->n_tensors);
	mp_strmap_reserve(&N.ops, net->n_ops);
	for (uint32_t t = 0; t < net->n_tensors; t++)
		mp_strmap_put(&N.tensors, net->tensors[t].name, (int32_t)t);
	for (uint32_t o = 0; o < net->n_ops; o++)
		mp_strmap_put(&N.ops, net->ops[o].name, (int32_t)o);
	p->offset = mp_xmalloc((n + 1) * sizeof(*p->offset));
	for (i = 0; i < n; i++)
		p->offset[i] = UINT64_MAX;
	json_array_foreach(v, i, x)
		if (read_action(net, &N, x, (uint32_t)i, &p->sched, p->offset, err) < 0)
			goto out;
	rc = 0;
out:
	mp_strmap_release(&N.tensors);
	mp_strmap_release(&N.ops);
	return rc;
}

static int read_arena(json_t *v, struct mp_plan *p, struct mp_error *err)
{
	static const char *const keys[] = { "bytes", "max_live_bytes", "alignment", NULL };
	uint64_t live;
	json_t *x;

	if (jget_object(v, "arena", err) < 0 || jget_check_keys(v, "arena", keys, err) < 0 ||
	    member(v, "arena", "bytes", &x, err) < 0 || get_bytes(x, "arena.bytes", &p->arena_bytes, err) < 0 ||
	    member(v, "arena", "max_live_bytes", &x, err) < 0 ||
	    get_bytes(x, "arena.max_live_bytes", &live, err) < 0)
		return -1;
	if ((x = json_object_get(v, "alignment"))) {
		int64_t al;

		if (jget_int(x, "arena.alignment", 1, INT64_MAX, &al, err) < 0)
			return -1;
		if (al != PLAN_ARENA_ALIGN) {
			mp_error_set(err, "arena.alignment: expected %u, got %lld", PLAN_ARENA_ALIGN, (long long)al);
			return -1;
		}
	}
	return 0;
}

/* The "net" of holder (the plan, path ""; or a job, path "jobs[1]") with
 * its "net_sha256": the digest checked before anything reads the net, then
 * the net loaded into *net.  0, or -1 with *err naming the JSON path. */
static int read_net(json_t *holder, const char *path, struct mp_net **net, struct mp_error *err)
{
	json_t *net_json, *v;
	const char *s;
	char hex[65], np[64], sp[64];

	jget_path(np, sizeof(np), path, "net");
	jget_path(sp, sizeof(sp), path, "net_sha256");
	if (member(holder, path, "net", &net_json, err) < 0 || jget_object(net_json, np, err) < 0 ||
	    member(holder, path, "net_sha256", &v, err) < 0 || jget_string(v, sp, &s, err) < 0)
		return -1;
	if (strlen(s) != 64 || strspn(s, "0123456789abcdefABCDEF") != 64) {
		mp_error_set(err, "%s: expected 64 hexadecimal digits", sp);
		return -1;
	}
	if (plan_net_sha256(net_json, hex) < 0) {
		mp_error_set(err, "%s: cannot be serialized to check its digest", np);
		return -1;
	}
	if (strcasecmp(s, hex) && (json_sha256_hex(net_json, false, hex) < 0 || strcasecmp(s, hex))) {
		mp_error_set(err, "%s: does not match the embedded net (edited by hand?)", sp);
		return -1;
	}
	if (!(*net = net_load_json(net_json, err))) {
		mp_error_prefix(err, "%s: ", np);
		return -1;
	}
	return 0;
}

/* One job of "jobs": its net into *net, its offset and file; its name and
 * prefix are checked against the merge's once it is made. */
static int read_job(json_t *x, const char *path, struct mp_net **net, double *offset, const char **file,
		    struct mp_error *err)
{
	static const char *const keys[] = { "name", "file", "offset_ms", "prefix", "time_ms", "alone_time_ms",
		"overhead", "alone_peak_bytes", "net", "net_sha256", NULL };
	json_t *v;
	char q[64];

	*file = NULL;
	if (jget_object(x, path, err) < 0 || jget_check_keys(x, path, keys, err) < 0)
		return -1;
	if (member(x, path, "offset_ms", &v, err) < 0 ||
	    jget_nonneg(v, jget_path(q, sizeof(q), path, "offset_ms"), offset, err) < 0)
		return -1;
	if ((v = json_object_get(x, "file")) && !json_is_null(v) &&
	    jget_string(v, jget_path(q, sizeof(q), path, "file"), file, err) < 0)
		return -1;
	return read_net(x, path, net, err);
}

/* "jobs" (a plan of several jobs): every job's net, merged again at the
 * recorded offsets (analysis/jobs.h), into *net.  0, or -1 with *err. */
static int read_jobs(json_t *root, struct mp_net **net, struct mp_error *err)
{
	struct mp_net *nets[JOBS_MAX] = { NULL };
	const char *files[JOBS_MAX];
	double offsets[JOBS_MAX];
	json_t *arr = json_object_get(root, "jobs");
	size_t n = json_array_size(arr);
	char path[64];
	int rc = -1;

	*net = NULL;
	if (json_object_get(root, "net") || json_object_get(root, "net_sha256")) {
		mp_error_set(err, "%s: a plan of several jobs keeps each net in \"jobs\"",
			     json_object_get(root, "net") ? "net" : "net_sha256");
		return -1;
	}
	if (!json_is_array(arr) || n < 2 || n > JOBS_MAX) {
		mp_error_set(err, "jobs: expected an array of 2 to %u jobs", JOBS_MAX);
		return -1;
	}
	for (size_t j = 0; j < n; j++) {
		snprintf(path, sizeof(path), "jobs[%zu]", j);
		if (read_job(json_array_get(arr, j), path, &nets[j], &offsets[j], &files[j], err) < 0)
			goto out;
	}
	if (!(*net = jobs_merge((const struct mp_net *const *)nets, (uint32_t)n, offsets, files, NULL, err)))
		goto out;
	for (size_t j = 0; j < n; j++) {
		json_t *x = json_array_get(arr, j), *v = json_object_get(x, "alone_time_ms");
		const char *name = json_string_value(json_object_get(x, "name"));

		/* what the planner made of the job alone, as recorded */
		snprintf(path, sizeof(path), "jobs[%zu].alone_time_ms", j);
		if (v && jget_nonneg(v, path, &(*net)->jobs[j].alone_ms, err) < 0) {
			net_free(*net);
			*net = NULL;
			goto out;
		}
		const char *prefix = json_string_value(json_object_get(x, "prefix"));

		if (!name || strcmp(name, (*net)->jobs[j].name) || !prefix || strcmp(prefix, (*net)->jobs[j].prefix)) {
			mp_error_set(err, "jobs[%zu]: expected name \"%s\" and prefix \"%s\" (the merge's)", j,
				     (*net)->jobs[j].name, (*net)->jobs[j].prefix);
			net_free(*net);
			*net = NULL;
			goto out;
		}
	}
	rc = 0;
out:
	for (size_t j = 0; j < n && j < JOBS_MAX; j++)
		net_free(nets[j]);
	return rc;
}

int plan_read_json(json_t *root, struct mp_net **net_out, struct mp_plan_req *req_out,
		   struct mp_plan *p_out, struct mp_error *err)
{
	static const char *const keys[] = { "format", "planner", "budget_bytes", "device",
		"workspace_mode", "workspace_limit_bytes", "checkpoints", "note", "net", "net_sha256",
		"jobs", "prediction", "arena", "schedule", NULL };
	struct mp_net *net = NULL;
	json_t *v;
	const char *s;

	*net_out = NULL;
	plan_init(p_out);
	if (jget_object(root, "(top level)", err) < 0)
		goto fail;
	if (!(v = json_object_get(root, "format"))) {
		mp_error_set(err, "format: missing (expected \"" PLAN_FORMAT "\")");
		goto fail;
	}
	if (!json_is_string(v) || strcmp(json_string_value(v), PLAN_FORMAT)) {
		if (json_is_string(v) && !strcmp(json_string_value(v), "memplan-net/1"))
			mp_error_set(err, "format: this is a net, not a plan (memplan plan makes one)");
		else if (json_is_string(v))
			mp_error_set(err, "format: expected \"" PLAN_FORMAT "\", got \"%s\"", json_string_value(v));
		else
			mp_error_set(err, "format: expected \"" PLAN_FORMAT "\", got %s", jget_type(v));
		goto fail;
	}
	if (jget_check_keys(root, "", keys, err) < 0)
		goto fail;
	if (json_object_get(root, "jobs")) {
		if (read_jobs(root, &net, err) < 0)
			goto fail;
	} else if (read_net(root, "", &net, err) < 0) {
		goto fail;
	}
	if (read_request(root, req_out, &p_out->planner, err) < 0)
		goto fail;
	if ((v = json_object_get(root, "note"))) {
		if (jget_string(v, "note", &s, err) < 0)
			goto fail;
		snprintf(p_out->note, sizeof(p_out->note), "%s", s);
	}
	if (member(root, "", "prediction", &v, err) < 0 || read_prediction(v, p_out, err) < 0)
		goto fail;
	if (member(root, "", "arena", &v, err) < 0 || read_arena(v, p_out, err) < 0)
		goto fail;
	if (member(root, "", "schedule", &v, err) < 0 || read_schedule(net, v, p_out, err) < 0)
		goto fail;
	if (sim_run(net, &req_out->device, &p_out->sched, &p_out->sim, err) < 0)
		goto fail;
	p_out->max_live_bytes = p_out->sim.peak_bytes;
	if (plan_check_arena(net, p_out, err) < 0)
		goto fail;
	/* derived figures, as plan_run defines them, from the re-simulation */
	plan_metrics(p_out, req_out->budget_bytes);
	*net_out = net;
	return 0;
fail:
	net_free(net);
	plan_release(p_out);
	plan_init(p_out);
	return -1;
}

int plan_read_file(const char *path, struct mp_net **net_out, struct mp_plan_req *req_out,
		   struct mp_plan *p_out, struct mp_error *err)
{
	json_t *root;
	int rc;

	*net_out = NULL;
	plan_init(p_out);
	if (!(root = mp_json_load_file(path, err)))
		return -1;
	rc = plan_read_json(root, net_out, req_out, p_out, err);
	json_decref(root);
	return rc;
}
