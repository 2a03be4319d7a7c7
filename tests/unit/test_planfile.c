/*
 * Unit tests of plan/arena.c, plan/trace.c and plan/planfile.c: the arena on
 * hand-computed lifetimes and its properties on every example under the
 * fixed policies; the plan file's round trip (same actions, same simulated
 * times, same text when written again); the trace's tracks and counter;
 * the reader's refusals, each with its exact message, from a file and from
 * memory; and the plan fuzzer's seeds, which must read.
 */
#include <dirent.h>
#include <stdlib.h>
#include <unistd.h>

#include "../../analysis/base/jget.h"
#include "../../analysis/policy.h"
#include "../../analysis/route.h"
#include "../../plan/arena.h"
#include "../../plan/plan.h"
#include "../../plan/planfile.h"
#include "../../plan/trace.h"
#include "unit.h"

static const char *const examples[] = {
	"examples/tiny.json", "examples/chain.json", "examples/diamond.json",
	"examples/residual.json", "examples/workspace.json", "examples/inplace-relu.json",
	"examples/alexnet.json", "examples/resnet50-b32.json",
};
enum { N_EXAMPLES = sizeof(examples) / sizeof(examples[0]) };

static char tmpdir[64];

/* A net, its JSON, its route and one fixed policy's simulated plan. */
struct fix {
	struct mp_net *net;
	json_t *json;
	struct mp_route r;
	struct mp_plan_req req;
	struct mp_plan p;
};

static int fix_load(struct fix *f, const char *path, enum mp_strategy st)
{
	struct mp_error err;
	json_error_t jerr;

	memset(f, 0, sizeof(*f));
	f->net = net_load_file(path, &err);
	f->json = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!f->net || !f->json || route_build(f->net, &f->r, &err) < 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return -1;
	}
	if (f->net->has_device)
		f->req.device = f->net->device;
	else
		device_default(&f->req.device);
	f->req.budget_bytes = 11ull << 30;
	f->req.ws_mode = MP_WS_NONE;
	policy_opts_default(&f->req.popts);
	plan_init(&f->p);
	f->p.planner = MP_PLANNER_TENSILE;
	policy_build(f->net, &f->r, st, &f->req.popts, &f->p.sched, NULL);
	if (sim_run(f->net, &f->req.device, &f->p.sched, &f->p.sim, &err) < 0) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return -1;
	}
	f->p.baseline_ms = f->p.sim.time_ms * 0.8;
	for (uint32_t t = 0; t < f->net->n_tensors; t++)
		f->p.baseline_peak += f->net->tensors[t].bytes;
	snprintf(f->p.note, sizeof(f->p.note), "test plan");
	plan_assign_arena(f->net, &f->p);
	plan_metrics(&f->p, f->req.budget_bytes);
	return 0;
}

static void fix_release(struct fix *f)
{
	plan_release(&f->p);
	route_release(&f->r);
	net_free(f->net);
	json_decref(f->json);
}

/* --- arena ----------------------------------------------------------------- */

/* Lifetime of allocation i as (time, action index) keys, computed directly
 * from the definition (not with arena.c's code). */
struct life {
	double t0, t1;
	uint32_t i0, i1;   /* i1 = UINT32_MAX: to the end */
	uint64_t bytes;
};

static int key_lt(double ta, uint32_t ia, double tb, uint32_t ib)
{
	return ta < tb || (ta == tb && ia < ib);
}

static struct life life_of(const struct mp_net *net, const struct mp_schedule *s, uint32_t i)
{
	const struct mp_action *a = &s->a[i];
	struct life l = { a->start_ms, 0, i, UINT32_MAX,
			  a->kind == MP_ACT_SWAP_IN ? net->tensors[a->tensor].bytes : a->bytes };

	for (uint32_t j = i + 1; j < s->n; j++)
		if (s->a[j].tensor == a->tensor &&
		    (s->a[j].kind == MP_ACT_FREE || s->a[j].kind == MP_ACT_SWAP_OUT)) {
			l.t1 = s->a[j].kind == MP_ACT_SWAP_OUT ? s->a[j].end_ms : s->a[j].start_ms;
			l.i1 = j;
			break;
		}
	return l;
}

static int lives_overlap(const struct life *a, const struct life *b)
{
	int a_before_b = a->i1 != UINT32_MAX && !key_lt(b->t0, b->i0, a->t1, a->i1);
	int b_before_a = b->i1 != UINT32_MAX && !key_lt(a->t0, a->i0, b->t1, b->i1);

	return !a_before_b && !b_before_a;
}

/* Every property of an assignment, by brute force.  Returns failures. */
static int arena_props(const struct mp_net *net, const struct mp_plan *p)
{
	const struct mp_schedule *s = &p->sched;
	struct life *l = calloc(s->n + 1, sizeof(*l));
	uint64_t high = 0;
	int bad = 0;

	for (uint32_t i = 0; i < s->n; i++) {
		int allocating = s->a[i].kind == MP_ACT_ALLOC || s->a[i].kind == MP_ACT_SWAP_IN;

		if (!allocating) {
			bad += p->offset[i] != UINT64_MAX;
			continue;
		}
		l[i] = life_of(net, s, i);
		bad += p->offset[i] % 256 != 0;
		if (l[i].bytes && p->offset[i] + l[i].bytes > high)
			high = p->offset[i] + l[i].bytes;
	}
	for (uint32_t i = 0; i < s->n; i++)
		for (uint32_t j = i + 1; j < s->n; j++) {
			if (p->offset[i] == UINT64_MAX || p->offset[j] == UINT64_MAX ||
			    !l[i].bytes || !l[j].bytes || !lives_overlap(&l[i], &l[j]))
				continue;
			if (p->offset[i] < p->offset[j] + l[j].bytes && p->offset[j] < p->offset[i] + l[i].bytes) {
				fprintf(stderr, "schedule[%u] and schedule[%u] share bytes while both live\n", i, j);
				bad++;
			}
		}
	bad += high != p->arena_bytes;
	bad += p->arena_bytes < p->max_live_bytes;
	bad += p->max_live_bytes != p->sim.peak_bytes;
	free(l);
	return bad;
}

/* A plan over a hand-built net of tensors only: actions with given times. */
static void push(struct mp_plan *p, enum mp_act_kind k, int32_t t, uint64_t bytes, double t0, double t1)
{
	sched_push(&p->sched, k, -1, t, bytes);
	p->sched.a[p->sched.n - 1].start_ms = t0;
	p->sched.a[p->sched.n - 1].end_ms = t1;
}

static void test_arena_by_hand(void)
{
	struct mp_tensor ts[7] = {
		{ "A", 1000, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
		{ "B", 600, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
		{ "C", 500, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
		{ "D", 300, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
		{ "E", 256, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
		{ "F", 256, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
		{ "G", 256, MP_TK_ACTIVATION, 0, -1, MP_DT_FLOAT32, false, 0 },
	};
	struct mp_net net = { .name = "hand", .n_tensors = 7, .tensors = ts };
	struct mp_plan p;
	struct mp_error err;

	/* A [0,2) B [1,3) C [2,4) D [3,5): frees come before allocs at equal
	 * times, so A and C, B and D may share.  By size: A at 0; B above A at
	 * 1024 (aligned); C in the gap [0, 1024) below B at 0; D above C at 512.
	 * Arena 1624; max live 1600 (A + B in [1, 2)). */
	plan_init(&p);
	push(&p, MP_ACT_ALLOC, 0, 1000, 0, 0);
	push(&p, MP_ACT_ALLOC, 1, 600, 1, 1);
	push(&p, MP_ACT_FREE, 0, 0, 2, 2);
	push(&p, MP_ACT_ALLOC, 2, 500, 2, 2);
	push(&p, MP_ACT_FREE, 1, 0, 3, 3);
	push(&p, MP_ACT_ALLOC, 3, 300, 3, 3);
	push(&p, MP_ACT_FREE, 2, 0, 4, 4);
	push(&p, MP_ACT_FREE, 3, 0, 5, 5);
	p.sim.peak_bytes = 1600;
	plan_assign_arena(&net, &p);
	CHECK_U64(p.offset[0], 0);
	CHECK_U64(p.offset[1], 1024);
	CHECK_U64(p.offset[3], 0);
	CHECK_U64(p.offset[5], 512);
	CHECK_U64(p.offset[2], UINT64_MAX);
	CHECK_U64(p.arena_bytes, 1624);
	CHECK_U64(p.max_live_bytes, 1600);
	CHECK(arena_props(&net, &p) == 0);
	CHECK(plan_check_arena(&net, &p, &err) == 0);
	/* a hand-made conflict is found and named */
	p.offset[5] = 256;
	CHECK(plan_check_arena(&net, &p, &err) < 0);
	CHECK_STR(err.msg, "schedule[5].offset: 'D' at [256, 556) overlaps 'C' (schedule[3]) at [0, 500) while both are live");
	p.offset[5] = 100;
	CHECK(plan_check_arena(&net, &p, &err) < 0);
	CHECK_STR(err.msg, "schedule[5].offset: 100 is not a multiple of 256");
	plan_release(&p);

	/* a swap-out releases its memory when the copy ends (t = 4), so F,
	 * allocated at t = 2, cannot reuse E's bytes, and G (t = 5) can */
	plan_init(&p);
	push(&p, MP_ACT_ALLOC, 4, 256, 0, 0);
	push(&p, MP_ACT_SWAP_OUT, 4, 0, 1, 4);
	push(&p, MP_ACT_ALLOC, 5, 256, 2, 2);
	push(&p, MP_ACT_FREE, 5, 0, 3, 3);
	push(&p, MP_ACT_ALLOC, 6, 256, 5, 5);
	p.sim.peak_bytes = 512;
	plan_assign_arena(&net, &p);
	CHECK_U64(p.offset[0], 0);
	CHECK_U64(p.offset[2], 256);
	CHECK_U64(p.offset[4], 0);
	CHECK_U64(p.arena_bytes, 512);
	CHECK(arena_props(&net, &p) == 0);
	plan_release(&p);
}

static void test_arena_examples(void)
{
	static const enum mp_strategy st[] = { MP_STRAT_BASELINE, MP_STRAT_LIVENESS, MP_STRAT_OFFLOAD,
		MP_STRAT_RECOMPUTE };

	printf("arena / max-live (liveness, offload, recompute):\n");
	for (int e = 0; e < N_EXAMPLES; e++) {
		printf("  %-28s", examples[e]);
		for (int k = 0; k < 4; k++) {
			struct fix f;
			struct mp_error err;

			if (fix_load(&f, examples[e], st[k]) < 0) {
				CHECK(!"example loads");
				continue;
			}
			CHECK(arena_props(f.net, &f.p) == 0);
			CHECK(plan_check_arena(f.net, &f.p, &err) == 0);
			if (st[k] == MP_STRAT_BASELINE)
				CHECK_U64(f.p.arena_bytes >= f.p.max_live_bytes, 1);
			else
				printf(" %.4f", (double)f.p.arena_bytes / (double)f.p.max_live_bytes);
			fix_release(&f);
		}
		printf("\n");
	}
}

/* --- plan file ------------------------------------------------------------- */

static char *path_in_tmp(const char *name)
{
	static char buf[128];

	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static int write_json(json_t *j, const char *path)
{
	return json_dump_file(j, path, JSON_INDENT(1));
}

static int same_action(const struct mp_schedule *a, const struct mp_schedule *b, uint32_t i)
{
	const struct mp_action *x = &a->a[i], *y = &b->a[i];

	if (x->kind != y->kind || x->op != y->op || x->tensor != y->tensor || x->algo != y->algo ||
	    x->micro != y->micro || x->start_ms != y->start_ms || x->end_ms != y->end_ms ||
	    x->resident_bytes != y->resident_bytes)
		return 0;
	if ((x->kind == MP_ACT_ALLOC || x->kind == MP_ACT_SWAP_IN) && x->bytes != y->bytes)
		return 0;
	for (uint32_t k = 0; x->micro > 1 && k < x->micro; k++)
		if (a->micro[x->micro_at + k].batch != b->micro[y->micro_at + k].batch ||
		    a->micro[x->micro_at + k].algo != b->micro[y->micro_at + k].algo)
			return 0;
	return 1;
}

/* Write f's plan, read it back, compare; 0 when all is the same. */
static int round_trip(struct fix *f, const char *name)
{
	struct mp_net *net2;
	struct mp_plan_req req2;
	struct mp_plan p2;
	struct mp_error err;
	json_t *j = plan_to_json(f->net, f->json, &f->req, &f->p), *j2;
	char *s1, *s2;
	int bad = 0;

	if (write_json(j, path_in_tmp(name)) < 0 ||
	    plan_read_file(path_in_tmp(name), &net2, &req2, &p2, &err) < 0) {
		fprintf(stderr, "%s: %s\n", name, err.msg);
		json_decref(j);
		return 1;
	}
	bad += p2.sched.n != f->p.sched.n;
	for (uint32_t i = 0; !bad && i < p2.sched.n; i++) {
		if (!same_action(&f->p.sched, &p2.sched, i) || p2.offset[i] != f->p.offset[i]) {
			fprintf(stderr, "%s: schedule[%u] differs after reading\n", name, i);
			bad++;
		}
	}
	bad += p2.planner != f->p.planner;
	bad += p2.sim.peak_bytes != f->p.sim.peak_bytes || p2.sim.time_ms != f->p.sim.time_ms ||
	       p2.sim.stall_ms != f->p.sim.stall_ms || p2.sim.peak_step != f->p.sim.peak_step;
	bad += p2.arena_bytes != f->p.arena_bytes || p2.max_live_bytes != f->p.max_live_bytes;
	bad += p2.baseline_ms != f->p.baseline_ms || p2.baseline_peak != f->p.baseline_peak;
	bad += p2.eor != f->p.eor || p2.overhead != f->p.overhead || p2.msr != f->p.msr ||
	       p2.cbr != f->p.cbr || p2.fits != f->p.fits || strcmp(p2.note, f->p.note) != 0;
	bad += req2.budget_bytes != f->req.budget_bytes || req2.ws_mode != f->req.ws_mode ||
	       req2.ws_limit_bytes != f->req.ws_limit_bytes ||
	       req2.popts.checkpoints != f->req.popts.checkpoints;
	bad += memcmp(&req2.device, &f->req.device, sizeof(req2.device)) != 0;
	/* written again: the same text */
	j2 = plan_to_json(net2, json_object_get(j, "net"), &req2, &p2);
	s1 = json_dumps(j, JSON_INDENT(1));
	s2 = json_dumps(j2, JSON_INDENT(1));
	if (strcmp(s1, s2)) {
		FILE *d1 = fopen("/tmp/rt1.json", "w"), *d2 = fopen("/tmp/rt2.json", "w");

		if (d1 && d2) {
			fputs(s1, d1);
			fputs(s2, d2);
		}
		if (d1)
			fclose(d1);
		if (d2)
			fclose(d2);
		fprintf(stderr, "%s: written again, the plan differs (/tmp/rt1.json, /tmp/rt2.json)\n", name);
		bad++;
	}
	free(s1);
	free(s2);
	json_decref(j);
	json_decref(j2);
	plan_release(&p2);
	net_free(net2);
	return bad;
}

/* tiny with conv1.fwd on winograd and conv1.bwd in two micro-batches. */
static void tiny_with_algos(struct fix *f)
{
	struct mp_schedule *s = &f->p.sched;
	struct mp_error err;
	int32_t fwd = net_find_op(f->net, "conv1.fwd"), bwd = net_find_op(f->net, "conv1.bwd");
	struct mp_micro m[2] = { { 16, 1 }, { 16, -1 } };

	for (uint32_t i = 0; i < s->n; i++) {
		struct mp_action *a = &s->a[i];

		if (a->kind != MP_ACT_COMPUTE || (a->op != fwd && a->op != bwd))
			continue;
		if (a->op == fwd)
			a->algo = 1;
		else
			sched_set_micro(s, i, m, 2);
		a = &s->a[i];
		/* the workspace allocation before it follows the algorithm */
		for (uint32_t j = i; j-- > 0;)
			if (s->a[j].kind == MP_ACT_ALLOC &&
			    s->a[j].tensor == f->net->ops[a->op].ws) {
				double ms;

				sched_action_cost(f->net, s, a, &ms, &s->a[j].bytes);
				break;
			}
	}
	sim_release(&f->p.sim);
	CHECK(sim_run(f->net, &f->req.device, s, &f->p.sim, &err) == 0);
	f->req.ws_mode = MP_WS_WR;
	f->req.ws_limit_bytes = 8u << 20;
	f->req.popts.checkpoints |= 1u << MP_L_POOL;
	plan_assign_arena(f->net, &f->p);
	plan_metrics(&f->p, f->req.budget_bytes);
}

static void test_round_trip(void)
{
	static const enum mp_strategy st[] = { MP_STRAT_LIVENESS, MP_STRAT_OFFLOAD, MP_STRAT_RECOMPUTE };
	struct fix f;

	for (int e = 0; e < N_EXAMPLES; e++)
		for (int k = 0; k < 3; k++) {
			char name[64];

			if (fix_load(&f, examples[e], st[k]) < 0) {
				CHECK(!"example loads");
				continue;
			}
			snprintf(name, sizeof(name), "rt-%d-%d.json", e, k);
			CHECK(round_trip(&f, name) == 0);
			fix_release(&f);
		}
	/* a plan for a GPU no backend runs on keeps saying so: the catalog's,
	 * and one outside the catalog, which only the file can tell */
	if (fix_load(&f, "examples/tiny.json", MP_STRAT_OFFLOAD) == 0) {
		json_t *j, *d = device_to_json(device_find("mi300x"));
		struct mp_error err;

		f.req.device = *device_find("mi300x");
		CHECK(round_trip(&f, "rt-mi300x.json") == 0);
		j = plan_to_json(f.net, f.json, &f.req, &f.p);
		CHECK(json_is_true(json_object_get(json_object_get(j, "device"), "no_verify")));
		json_decref(j);
		json_object_set_new(d, "name", json_string("my-amd"));
		CHECK(device_from_json(d, "device", &f.req.device, &err) == 0);
		CHECK(f.req.device.no_verify);
		CHECK(round_trip(&f, "rt-my-amd.json") == 0);
		json_decref(d);
		fix_release(&f);
	}
	/* algorithms, micro-batches, request fields */
	if (fix_load(&f, "examples/tiny.json", MP_STRAT_OFFLOAD) == 0) {
		tiny_with_algos(&f);
		CHECK(round_trip(&f, "rt-algos.json") == 0);
		{
			json_t *j = plan_to_json(f.net, f.json, &f.req, &f.p), *x;
			size_t i;
			int seen_algo = 0, seen_micro = 0;

			json_array_foreach(json_object_get(j, "schedule"), i, x) {
				if (json_object_get(x, "algo"))
					seen_algo += !strcmp(json_string_value(json_object_get(x, "algo")), "winograd");
				if (json_object_get(x, "micro"))
					seen_micro++;
			}
			CHECK(seen_algo == 1);
			CHECK(seen_micro == 1);
			CHECK_STR(json_string_value(json_object_get(j, "workspace_mode")), "wr");
			json_decref(j);
		}
		fix_release(&f);
	}
}

/* Plans the planners make (micro-batches, swaps, parameters kept on the
 * host across iterations) survive the file too. */
/* Persistent tensors first allocated and swapped back in to stay: the pairs
 * (first allocation, last swap-in) the arena must pin to one offset (the
 * steady state).  Counts them into *pairs, a last swap-in of one into
 * *last; returns the pairs at two offsets. */
static int unpinned(const struct mp_net *net, const struct mp_plan *p, int *pairs, uint32_t *last_in)
{
	const struct mp_schedule *s = &p->sched;
	int bad = 0;

	for (uint32_t t = 0; t < net->n_tensors; t++) {
		uint32_t first = UINT32_MAX, last = UINT32_MAX;
		bool live = false;

		if (!sched_persistent(&net->tensors[t]))
			continue;
		for (uint32_t i = 0; i < s->n; i++) {
			if (s->a[i].tensor != (int32_t)t || s->a[i].op >= 0)
				continue;
			if (s->a[i].kind == MP_ACT_ALLOC || s->a[i].kind == MP_ACT_SWAP_IN) {
				if (first == UINT32_MAX)
					first = i;
				last = i;
				live = true;
			} else if (s->a[i].kind == MP_ACT_FREE || s->a[i].kind == MP_ACT_SWAP_OUT) {
				live = false;
			}
		}
		if (first == UINT32_MAX || last == first || !live || s->a[first].kind != MP_ACT_ALLOC)
			continue;
		(*pairs)++;
		*last_in = last;
		bad += p->offset[last] != p->offset[first];
	}
	return bad;
}

static void test_round_trip_planners(void)
{
	static const char *const nets[] = { "examples/tiny.json", "examples/residual.json",
		"examples/alexnet.json" };
	static const enum mp_ws_mode modes[] = { MP_WS_DYNAMIC, MP_WS_WR, MP_WS_WD };
	int n = 0, micro = 0, swaps = 0, pairs = 0, refused = 0;
	uint32_t moved = 0;

	for (unsigned e = 0; e < sizeof(nets) / sizeof(nets[0]); e++) {
		struct fix f;
		uint64_t live;

		if (fix_load(&f, nets[e], MP_STRAT_LIVENESS) < 0) {
			CHECK(!"example loads");
			continue;
		}
		live = f.p.sim.peak_bytes;
		for (int pl = 0; pl < MP_PLANNER__COUNT; pl++)
			for (unsigned m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
				struct mp_error err;
				char name[64];
				int here;

				f.req.budget_bytes = live / 10 * 7;
				f.req.ws_mode = modes[m];
				if (plan_run(f.net, &f.r, (enum mp_planner)pl, &f.req, &f.p, &err) < 0) {
					fprintf(stderr, "%s: %s\n", nets[e], err.msg);
					CHECK(!"plan_run");
					continue;
				}
				for (uint32_t i = 0; i < f.p.sched.n; i++) {
					micro += f.p.sched.a[i].micro > 1;
					swaps += f.p.sched.a[i].kind == MP_ACT_SWAP_IN;
				}
				snprintf(name, sizeof(name), "rt-pl-%u-%d-%u.json", e, pl, m);
				CHECK(round_trip(&f, name) == 0);
				here = 0;
				CHECK(unpinned(f.net, &f.p, &here, &moved) == 0);
				pairs += here;
				if (here && !refused) {
					/* moved, the plan is refused */
					uint64_t keep = f.p.offset[moved];

					f.p.offset[moved] = f.p.arena_bytes + PLAN_ARENA_ALIGN;
					f.p.arena_bytes += PLAN_ARENA_ALIGN + f.net->tensors[f.p.sched.a[moved].tensor].bytes;
					CHECK(plan_check_arena(f.net, &f.p, &err) < 0);
					CHECK(strstr(err.msg, "ends the iteration at") != NULL);
					printf("  refused: %s\n", err.msg);
					f.p.offset[moved] = keep;
					refused = 1;
				}
				n++;
			}
		fix_release(&f);
	}
	printf("  %d persistent tensors swapped out and back in to stay, each where the next iteration finds it\n",
	       pairs);
	CHECK(pairs > 0);
	CHECK(refused);
	CHECK(n == sizeof(nets) / sizeof(nets[0]) * MP_PLANNER__COUNT * (sizeof(modes) / sizeof(modes[0])));
	CHECK(micro > 0);
	CHECK(swaps > 0);
}

/* --- trace ----------------------------------------------------------------- */

/* Check one plan's trace; returns failures.  *stall_us sums the stall
 * events' durations. */
static int trace_props(const struct fix *f, double *stall_us)
{
	json_t *t, *ev, *x;
	json_error_t jerr;
	size_t i;
	int threads = 0, counters = 0, on[4] = { 0 }, stalls = 0, bad = 0;
	uint64_t top = 0;
	char *s;

	/* through text, as a viewer reads it */
	s = json_dumps(t = plan_trace_json(f->net, &f->p), JSON_COMPACT);
	json_decref(t);
	t = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
	free(s);
	if (!t)
		return 1;
	*stall_us = 0;
	bad += !json_is_string(json_object_get(t, "displayTimeUnit")) ||
	       strcmp(json_string_value(json_object_get(t, "displayTimeUnit")), "ms");
	ev = json_object_get(t, "traceEvents");
	bad += !json_is_array(ev);
	json_array_foreach(ev, i, x) {
		const char *ph = json_string_value(json_object_get(x, "ph"));
		const char *name = json_string_value(json_object_get(x, "name"));
		json_t *args = json_object_get(x, "args");
		json_int_t tid = json_integer_value(json_object_get(x, "tid"));

		if (!ph || !name || json_integer_value(json_object_get(x, "pid")) != 1) {
			bad++;
			continue;
		}
		if (!strcmp(ph, "M") && !strcmp(name, "thread_name")) {
			const char *tn = json_string_value(json_object_get(args, "name"));

			threads += (tid == 1 && !strcmp(tn, "compute")) || (tid == 2 && !strcmp(tn, "host-to-device")) ||
				   (tid == 3 && !strcmp(tn, "device-to-host"));
		} else if (!strcmp(ph, "X")) {
			if (!json_is_number(json_object_get(x, "ts")) || !json_is_number(json_object_get(x, "dur")) ||
			    json_number_value(json_object_get(x, "dur")) < 0 || tid < 1 || tid > 3) {
				bad++;
				continue;
			}
			on[tid]++;
			if (!strncmp(name, "wait ", 5)) {
				stalls++;
				*stall_us += json_number_value(json_object_get(x, "dur"));
			}
			if (tid >= 2 && (!json_is_integer(json_object_get(args, "bytes")) ||
					 !json_is_string(json_object_get(args, "tensor"))))
				bad++;
			if (tid == 1 && !stalls && !json_is_boolean(json_object_get(args, "recompute")))
				bad++;
		} else if (!strcmp(ph, "C")) {
			json_t *b = json_object_get(args, "bytes");

			counters += !strcmp(name, "resident bytes") && json_is_integer(b);
			if (json_is_integer(b) && (uint64_t)json_integer_value(b) > top)
				top = (uint64_t)json_integer_value(b);
		}
	}
	bad += threads != 3;
	bad += counters == 0;
	bad += on[2] != (int)f->p.sim.n_swap_in || on[3] != (int)f->p.sim.n_swap_out;
	bad += on[1] - stalls != (int)(f->net->n_ops + f->p.sim.n_recompute);
	/* the counter never shows more than the peak (events at one instant
	 * show only the last value) */
	bad += top > f->p.sim.peak_bytes;
	json_decref(t);
	return bad;
}

static void test_trace(void)
{
	static const enum mp_strategy st[] = { MP_STRAT_LIVENESS, MP_STRAT_OFFLOAD, MP_STRAT_RECOMPUTE };
	int stalled = 0, swapped = 0;

	for (int e = 0; e < N_EXAMPLES; e++)
		for (int k = 0; k < 3; k++) {
			struct fix f;
			double stall_us = 0;

			if (fix_load(&f, examples[e], st[k]) < 0) {
				CHECK(!"example loads");
				continue;
			}
			CHECK(trace_props(&f, &stall_us) == 0);
			CHECK_NEAR(stall_us, f.p.sim.stall_ms * 1000.0, 1e-6 * (1 + stall_us));
			stalled += f.p.sim.stall_ms > 0;
			swapped += f.p.sim.n_swap_in > 0;
			fix_release(&f);
		}
	/* the examples exercise the copy tracks and the stall events */
	CHECK(swapped > 0);
	CHECK(stalled > 0);
}

/* --- the reader's refusals ------------------------------------------------ */

/* Write j to a file, read it, return the error message (or "ok"). */
static const char *read_back(json_t *j)
{
	static struct mp_error err;
	struct mp_net *net;
	struct mp_plan_req req;
	struct mp_plan p;

	write_json(j, path_in_tmp("bad.json"));
	if (plan_read_file(path_in_tmp("bad.json"), &net, &req, &p, &err) == 0) {
		plan_release(&p);
		net_free(net);
		return "ok";
	}
	CHECK(net == NULL);
	return err.msg;
}

/* plan_read_json on j, in memory: the message (or "ok"), j unchanged. */
static const char *read_mem(json_t *j)
{
	static struct mp_error err;
	json_t *before = json_deep_copy(j);
	struct mp_net *net;
	struct mp_plan_req req;
	struct mp_plan p;
	int rc = plan_read_json(j, &net, &req, &p, &err);

	CHECK(json_equal(before, j));
	json_decref(before);
	if (rc == 0) {
		plan_release(&p);
		net_free(net);
		return "ok";
	}
	CHECK(net == NULL);
	return err.msg;
}

static json_t *sched_of(json_t *j)
{
	return json_object_get(j, "schedule");
}

static const char *entry_name(json_t *e, const char *key)
{
	return json_string_value(json_object_get(e, key));
}

static void test_reader_errors(void)
{
	struct fix f;
	json_t *good, *j, *s;
	char want[512];
	size_t n, i;

	/* residual: the offload policy swaps there */
	if (fix_load(&f, "examples/residual.json", MP_STRAT_OFFLOAD) < 0) {
		CHECK(!"residual loads");
		return;
	}
	good = plan_to_json(f.net, f.json, &f.req, &f.p);
	CHECK_STR(read_back(good), "ok");
	/* in memory, the same reader: same verdicts, same messages */
	CHECK_STR(read_mem(good), "ok");
	j = json_deep_copy(good);
	json_object_set_new(j, "planner", json_string("magic"));
	CHECK_STR(read_mem(j), "planner: unknown planner 'magic'");
	json_decref(j);

	/* wrong format, a net given as a plan, not an object */
	j = json_deep_copy(good);
	json_object_set_new(j, "format", json_string("memplan-plan/2"));
	CHECK_STR(read_back(j), "format: expected \"memplan-plan/1\", got \"memplan-plan/2\"");
	json_decref(j);
	CHECK_STR(read_back(f.json), "format: this is a net, not a plan (memplan plan makes one)");
	j = json_array();
	CHECK_STR(read_back(j), "(top level): expected an object, got an array");
	json_decref(j);

	/* the digest */
	j = json_deep_copy(good);
	json_object_set_new(json_object_get(j, "net"), "name", json_string("tiny, edited"));
	CHECK_STR(read_back(j), "net_sha256: does not match the embedded net (edited by hand?)");
	json_decref(j);
	j = json_deep_copy(good);
	json_object_set_new(j, "net_sha256", json_string("abc"));
	CHECK_STR(read_back(j), "net_sha256: expected 64 hexadecimal digits");
	json_decref(j);

	/* unknown names and keys, wrong stream */
	j = json_deep_copy(good);
	s = sched_of(j);
	for (i = 0; i < json_array_size(s) && !json_object_get(json_array_get(s, i), "tensor"); i++)
		;
	json_object_set_new(json_array_get(s, i), "tensor", json_string("x"));
	snprintf(want, sizeof(want), "schedule[%zu].tensor: no tensor named 'x'", i);
	CHECK_STR(read_back(j), want);
	json_decref(j);
	j = json_deep_copy(good);
	json_object_set_new(json_array_get(sched_of(j), 0), "colour", json_string("red"));
	CHECK(strstr(read_back(j), "schedule[0].colour: unknown key") != NULL);
	json_decref(j);
	j = json_deep_copy(good);
	s = sched_of(j);
	for (i = 0; i < json_array_size(s) && strcmp(entry_name(json_array_get(s, i), "action"), "swap_in"); i++)
		;
	CHECK(i < json_array_size(s));
	json_object_set_new(json_array_get(s, i), "stream", json_string("compute"));
	snprintf(want, sizeof(want), "schedule[%zu].stream: expected \"h2d\" for a swap_in, got \"compute\"", i);
	CHECK_STR(read_back(j), want);
	json_decref(j);

	/* a free moved before the last use of its tensor */
	j = json_deep_copy(good);
	s = sched_of(j);
	n = json_array_size(s);
	{
		int done = 0;

		for (i = 0; i < n && !done; i++) {
			json_t *fr = json_array_get(s, i);
			const char *t = entry_name(fr, "tensor");
			int32_t tid;

			if (strcmp(entry_name(fr, "action"), "free") || (tid = net_find_tensor(f.net, t)) < 0 ||
			    f.net->tensors[tid].kind == MP_TK_WORKSPACE)
				continue;
			/* the compute right before it must read the tensor */
			for (size_t c = i; c-- > 0;) {
				json_t *ce = json_array_get(s, c);
				const char *act = entry_name(ce, "action");
				int32_t op;
				int reads = 0;

				if (strcmp(act, "compute"))
					continue;
				op = net_find_op(f.net, entry_name(ce, "op"));
				CHECK(op >= 0);
				if (op < 0)
					break;
				for (uint32_t k = 0; k < f.net->ops[op].n_in; k++)
					reads |= f.net->ops[op].in[k] == tid;
				if (!reads)
					break;
				json_incref(fr);
				json_array_remove(s, i);
				json_array_insert_new(s, c, fr);
				snprintf(want, sizeof(want), "schedule[%zu] compute '%s': reads '%s', which is not resident",
					 c + 1, f.net->ops[op].name, t);
				done = 1;
				break;
			}
		}
		CHECK(done);
		CHECK_STR(read_back(j), want);
	}
	json_decref(j);

	/* a swap-in removed: its wait now waits for the swap-out (legal), and
	 * the read after it finds the tensor on the host */
	j = json_deep_copy(good);
	s = sched_of(j);
	for (i = 0; i < json_array_size(s) && strcmp(entry_name(json_array_get(s, i), "action"), "swap_in"); i++)
		;
	CHECK(i < json_array_size(s));
	{
		char t[128];
		const char *got;

		snprintf(t, sizeof(t), "%s", entry_name(json_array_get(s, i), "tensor"));
		snprintf(want, sizeof(want), "reads '%s', which is swapped out", t);
		json_array_remove(s, i);
		got = read_back(j);
		CHECK(strstr(got, want) != NULL);
		if (!strstr(got, want))
			fprintf(stderr, "got '%s', want '...%s'\n", got, want);
	}
	json_decref(j);
	/* a wait on a tensor that is neither being copied nor resident */
	j = json_deep_copy(good);
	s = sched_of(j);
	for (i = 0; i < json_array_size(s) && strcmp(entry_name(json_array_get(s, i), "action"), "free"); i++)
		;
	CHECK(i < json_array_size(s));
	{
		char t[128];
		json_t *w;

		snprintf(t, sizeof(t), "%s", entry_name(json_array_get(s, i), "tensor"));
		w = json_deep_copy(json_array_get(s, i));

		json_object_set_new(w, "action", json_string("wait"));
		json_array_insert_new(s, i + 1, w);
		snprintf(want, sizeof(want), "schedule[%zu] wait '%s': nothing to wait for", i + 1, t);
		CHECK_STR(read_back(j), want);
	}
	json_decref(j);

	/* two allocations live at once given the same bytes */
	j = json_deep_copy(good);
	s = sched_of(j);
	{
		json_t *first = json_array_get(s, 0), *second = json_array_get(s, 1);
		json_int_t o = json_integer_value(json_object_get(first, "offset"));
		json_int_t b0 = json_integer_value(json_object_get(first, "bytes"));
		json_int_t b1 = json_integer_value(json_object_get(second, "bytes"));

		CHECK_STR(entry_name(first, "action"), "alloc");
		CHECK_STR(entry_name(second, "action"), "alloc");
		json_object_set_new(second, "offset", json_integer(o));
		snprintf(want, sizeof(want), "schedule[1].offset: '%s' at [%lld, %lld) overlaps '%s' (schedule[0]) "
			 "at [%lld, %lld) while both are live", entry_name(second, "tensor"), (long long)o,
			 (long long)(o + b1), entry_name(first, "tensor"), (long long)o, (long long)(o + b0));
		CHECK_STR(read_back(j), want);
	}
	json_decref(j);

	/* field types, with paths */
	j = json_deep_copy(good);
	json_object_set_new(json_object_get(j, "prediction"), "time_ms", json_string("fast"));
	CHECK_STR(read_back(j), "prediction.time_ms: expected a number, got a string");
	json_decref(j);
	j = json_deep_copy(good);
	json_object_del(j, "budget_bytes");
	CHECK_STR(read_back(j), "(top level): missing \"budget_bytes\"");
	json_decref(j);
	j = json_deep_copy(good);
	json_object_set_new(json_array_get(sched_of(j), 0), "offset", json_integer(-256));
	CHECK_STR(read_back(j), "schedule[0].offset: -256 is out of range [0, 1125899906842624]");
	json_decref(j);
	j = json_deep_copy(good);
	json_object_set_new(json_array_get(sched_of(j), 0), "action", json_string("copy"));
	CHECK_STR(read_back(j), "schedule[0].action: unknown action 'copy' (compute, recompute, alloc, free, "
		  "swap_out, swap_in, wait)");
	json_decref(j);
	j = json_deep_copy(good);
	json_object_set_new(j, "planner", json_string("magic"));
	CHECK_STR(read_back(j), "planner: unknown planner 'magic'");
	json_decref(j);
	/* the embedded net is checked by the net loader, under "net: " */
	j = json_deep_copy(good);
	json_object_set_new(json_object_get(j, "net"), "optimizer", json_string("lion"));
	{
		char hex_fix[65];
		json_t *net = json_object_get(j, "net");
		char *txt = json_dumps(net, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII);

		/* recompute the digest with the shell's sed and sha256sum: an
		 * independent check (whole reals written as integers: the chain's
		 * net has no other reals with a whole value, and no string that
		 * looks like one) */
		FILE *fp = fopen(path_in_tmp("net.txt"), "w");
		char cmd[256];

		fputs(txt, fp);
		fclose(fp);
		free(txt);
		snprintf(cmd, sizeof(cmd), "sed -E 's/([0-9])\\.0([],}])/\\1\\2/g' %s | tr -d '\\n' | sha256sum",
			 path_in_tmp("net.txt"));
		fp = popen(cmd, "r");
		CHECK(fp && fscanf(fp, "%64s", hex_fix) == 1);
		if (fp)
			pclose(fp);
		json_object_set_new(j, "net_sha256", json_string(hex_fix));
		CHECK_STR(read_back(j), "net: optimizer: unknown optimizer 'lion' (none, sgd, momentum, adam, adamw)");
		{
			char hex[65];

			CHECK(plan_net_sha256(net, hex) == 0);
			CHECK_STR(hex, hex_fix);
		}
	}
	json_decref(j);
	/* a file that is not there, and one that is not JSON */
	{
		struct mp_error err;
		struct mp_net *net;
		struct mp_plan_req req;
		struct mp_plan p;
		FILE *fp = fopen(path_in_tmp("broken.json"), "w");

		fputs("{\"format\": \"memplan-plan/1\",", fp);
		fclose(fp);
		CHECK(plan_read_file(path_in_tmp("none.json"), &net, &req, &p, &err) < 0);
		CHECK_STR(err.msg, "cannot open: No such file or directory");
		CHECK(plan_read_file(path_in_tmp("broken.json"), &net, &req, &p, &err) < 0);
		CHECK(strstr(err.msg, "invalid JSON") != NULL);
	}
	json_decref(good);
	fix_release(&f);
}

/* The plan fuzzer's seeds (tests/fuzz/plan-seeds) are plans the reader
 * accepts: a format change that left them behind would leave the fuzzer
 * mutating files refused at the first key. */
static void test_fuzz_seeds(void)
{
	DIR *d = opendir("tests/fuzz/plan-seeds");
	struct dirent *e;
	int n = 0;

	CHECK(d != NULL);
	while (d && (e = readdir(d))) {
		struct mp_error err;
		struct mp_net *net;
		struct mp_plan_req req;
		struct mp_plan p;
		char path[512];

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "tests/fuzz/plan-seeds/%s", e->d_name);
		if (plan_read_file(path, &net, &req, &p, &err) < 0) {
			fprintf(stderr, "  %s: %s\n", path, err.msg);
			CHECK(!"a fuzz seed reads");
			continue;
		}
		plan_release(&p);
		net_free(net);
		n++;
	}
	if (d)
		closedir(d);
	CHECK(n >= 5);
}

/* The net's digest by hand: keys sorted, 1.0 as 1, compact, ASCII only
 * (jansson escapes in capitals):
 *   printf %s '{"a":[1,"x\u00E9"],"b":1}' | sha256sum
 * The same inside a JSON arena (cmd_plan writes there), with the tree from
 * outside it. */
static void test_net_digest(void)
{
	const char *want = "36ea1033738f9b51d24a6cb269621ae58188dc1a168aab8a8bb4cf0dcc377f31";
	json_t *v = json_loads("{\"b\": 1.0, \"a\": [1, \"x\u00e9\"]}", 0, NULL), *t;
	struct mp_json_arena ja;
	char hex[65];

	CHECK(v != NULL);
	CHECK(plan_net_sha256(v, hex) == 0);
	CHECK_STR(hex, want);
	mp_json_arena_begin(&ja);
	memset(hex, 0, sizeof(hex));
	CHECK(plan_net_sha256(v, hex) == 0);
	CHECK_STR(hex, want);
	/* a tree made and dropped inside, holding the outside one */
	t = json_pack("{s:O, s:[i, s]}", "net", v, "x", 3, "y");
	CHECK(t && json_object_get(t, "net") == v && v->refcount == 2);
	json_decref(t);
	CHECK(v->refcount == 1);
	mp_json_arena_end(&ja);
	CHECK(plan_net_sha256(v, hex) == 0);
	CHECK_STR(hex, want);
	json_decref(v);
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/memplan-test-planfile-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	test_arena_by_hand();
	test_arena_examples();
	test_round_trip();
	test_round_trip_planners();
	test_trace();
	test_reader_errors();
	test_fuzz_seeds();
	test_net_digest();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return unit_report("test_planfile");
}
