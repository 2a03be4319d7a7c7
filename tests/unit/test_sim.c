/*
 * Unit tests of the simulator (analysis/sim.c, DESIGN.md "Simulator") on
 * hand-built schedules over a hand-built net: a swap-out frees its memory only
 * when the copy ends (latency + bytes / bandwidth), a wait stalls compute by
 * exactly the part of the swap-in that compute did not cover, workspace
 * follows the algorithm, and broken schedules (a read of a freed tensor, a
 * swap-in never waited for, an op computed twice) are rejected with a message
 * naming the action and the tensor.  Every expected number is worked out by
 * hand in the comments.
 */
#include <stdlib.h>
#include <string.h>

#include "../../analysis/net/net.h"
#include "../../analysis/sched.h"
#include "../../analysis/sim.h"
#include "unit.h"

/*
 * The net: six explicit ops in a line, with one long-lived tensor a that s
 * reads again at the end (the tensor the tests move to the host and back).
 *
 *   p: -> a (4000 B)             1.0 ms
 *   q: a -> b (1000 B)           2.0 ms
 *   r1: b -> c1 (100 B)          0.3 ms
 *   r2: c1 -> c2 (200 B)         0.3 ms
 *   r3: c2 -> c3 (300 B)         0.3 ms
 *   s: a, c3 -> d (10 B)         0.5 ms
 */
static const char line_json[] =
	"{\"format\": \"memplan-net/1\", \"name\": \"simline\","
	" \"tensors\": ["
	"  {\"name\": \"a\", \"bytes\": 4000}, {\"name\": \"b\", \"bytes\": 1000},"
	"  {\"name\": \"c1\", \"bytes\": 100}, {\"name\": \"c2\", \"bytes\": 200},"
	"  {\"name\": \"c3\", \"bytes\": 300}, {\"name\": \"d\", \"bytes\": 10}],"
	" \"ops\": ["
	"  {\"name\": \"p\", \"outputs\": [\"a\"], \"time\": 1.0},"
	"  {\"name\": \"q\", \"inputs\": [\"a\"], \"outputs\": [\"b\"], \"time\": 2.0},"
	"  {\"name\": \"r1\", \"inputs\": [\"b\"], \"outputs\": [\"c1\"], \"time\": 0.3},"
	"  {\"name\": \"r2\", \"inputs\": [\"c1\"], \"outputs\": [\"c2\"], \"time\": 0.3},"
	"  {\"name\": \"r3\", \"inputs\": [\"c2\"], \"outputs\": [\"c3\"], \"time\": 0.3},"
	"  {\"name\": \"s\", \"inputs\": [\"a\", \"c3\"], \"outputs\": [\"d\"], \"time\": 0.5}]}";

/*
 * One op with a default workspace of 5000 B and two alternatives: "fast"
 * (8000 B, 0.4 ms) and "gemm" (no workspace, 2.0 ms).  x is an input that
 * exists before the iteration.
 */
static const char ws_json[] =
	"{\"format\": \"memplan-net/1\", \"name\": \"simws\","
	" \"tensors\": [{\"name\": \"x\", \"kind\": \"input\", \"bytes\": 100},"
	"               {\"name\": \"y\", \"bytes\": 1000}],"
	" \"ops\": [{\"name\": \"conv\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"time\": 1.0,"
	"           \"workspace\": 5000,"
	"           \"algos\": [{\"name\": \"fast\", \"workspace\": 8000, \"time\": 0.4},"
	"                       {\"name\": \"gemm\", \"workspace\": 0, \"time\": 2.0}]}]}";

static struct mp_net *load(const char *text)
{
	struct mp_error err = { "" };
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);
	struct mp_net *net;

	if (!root) {
		fprintf(stderr, "inline JSON: %s (line %d)\n", jerr.text, jerr.line);
		return NULL;
	}
	net = net_load_json(root, &err);
	json_decref(root);
	if (!net)
		fprintf(stderr, "inline net: %s\n", err.msg);
	return net;
}

/*
 * The toy link of the examples: 0.01 GB/s = 10^4 bytes per ms each way and
 * 100 us latency, so moving a (4000 B) takes 0.1 + 4000 / 10^4 = 0.5 ms.
 */
static void toy_link(struct mp_device *d)
{
	memset(d, 0, sizeof(*d));
	snprintf(d->name, sizeof(d->name), "toy-link");
	d->memory_bytes = 1 << 20;
	d->h2d_gbps = 0.01;
	d->d2h_gbps = 0.01;
	d->latency_us = 100;
}

/*
 * Build a schedule from lines "verb name": alloc, free, swap_out, swap_in and
 * wait name a tensor, compute and recompute an op ("compute conv@1" picks
 * algorithm 1).  alloc reserves the tensor's bytes unless "alloc t=BYTES".
 * "close" ends the iteration as the schedulers do (sched_close): a free of
 * everything not persistent still on the device.
 */
static int build(const struct mp_net *net, struct mp_schedule *s, const char *const *lines)
{
	sched_init(s);
	for (; *lines; lines++) {
		char verb[32], name[64];
		int32_t id;
		unsigned long long bytes = 0;
		const char *eq, *at;

		if (!strcmp(*lines, "close")) {
			sched_close(net, s);
			continue;
		}
		if (sscanf(*lines, "%31s %63s", verb, name) != 2)
			return -1;
		eq = strchr(name, '=');
		at = strchr(name, '@');
		if (eq) {
			bytes = strtoull(eq + 1, NULL, 10);
			name[eq - name] = 0;
		}
		if (at)
			name[at - name] = 0;
		if (!strcmp(verb, "compute") || !strcmp(verb, "recompute")) {
			if ((id = net_find_op(net, name)) < 0)
				return -1;
			sched_push(s, verb[0] == 'c' ? MP_ACT_COMPUTE : MP_ACT_RECOMPUTE, id, -1, 0);
			if (at)
				s->a[s->n - 1].algo = atoi(at + 1);
			continue;
		}
		if ((id = net_find_tensor(net, name)) < 0)
			return -1;
		if (!strcmp(verb, "alloc"))
			sched_push(s, MP_ACT_ALLOC, -1, id, eq ? bytes : net->tensors[id].bytes);
		else if (!strcmp(verb, "free"))
			sched_push(s, MP_ACT_FREE, -1, id, 0);
		else if (!strcmp(verb, "swap_out"))
			sched_push(s, MP_ACT_SWAP_OUT, -1, id, 0);
		else if (!strcmp(verb, "swap_in"))
			sched_push(s, MP_ACT_SWAP_IN, -1, id, net->tensors[id].bytes);
		else if (!strcmp(verb, "wait"))
			sched_push(s, MP_ACT_WAIT, -1, id, 0);
		else
			return -1;
	}
	return 0;
}

/* Simulate lines; 0 or -1 with *err; *sim filled on success. */
static int simulate(const struct mp_net *net, const char *const *lines, struct mp_schedule *s,
		    struct mp_sim *sim, struct mp_error *err)
{
	struct mp_device dev;

	toy_link(&dev);
	memset(sim, 0, sizeof(*sim));
	err->msg[0] = 0;
	if (build(net, s, lines) < 0) {
		snprintf(err->msg, sizeof(err->msg), "test bug: bad schedule line");
		return -1;
	}
	return sim_run(net, &dev, s, sim, err);
}

/*
 * a leaves for the host after q (its last read before s) and comes back
 * while r3 runs.  Times (ms):
 *   p 0-1, q 1-3;
 *   swap_out a issued at 3.0 (compute time; a ready since 1.0, d2h idle),
 *     copy 0.1 + 4000/10^4 = 0.5, so it ends at 3.5: a's 4000 B are released
 *     at 3.5, not at 3.0;
 *   r1 3.0-3.3, r2 3.3-3.6;
 *   swap_in a issued at 3.6 (on the host since 3.5), copy 0.5: 3.6-4.1;
 *   r3 3.6-3.9; wait a at 3.9: the copy covers 0.3 ms of compute and the
 *     uncovered 4.1 - 3.9 = 0.2 ms is the stall;
 *   s 4.1-4.6.  Time 4.6 = compute 1+2+0.3*3+0.5 = 4.4 plus the 0.2 stall.
 * Resident bytes (steps are the six computes):
 *   p: a 4000
 *   q: + b 1000 = 5000
 *   r1: + c1 100 = 5100
 *   r2: free b -> 4100, alloc c2 -> 4300; a released at 3.5 -> 300.  The
 *       step's maximum is 4300: a still counts during r2 until its copy ends
 *   r3: free c1 -> 200; swap_in +4000 at 3.6 -> 4200; alloc c3 -> 4500
 *   s: free c2 -> 4300; alloc d -> 4310
 */
static void test_swap_timing(const struct mp_net *net)
{
	static const char *const lines[] = {
		"alloc a", "compute p", "alloc b", "compute q",
		"swap_out a",                           /* [4] */
		"alloc c1", "compute r1", "free b", "alloc c2", "compute r2", "free c1",
		"swap_in a",                            /* [11] */
		"alloc c3", "compute r3", "free c2",
		"wait a",                               /* [15] */
		"alloc d", "compute s",                 /* [17] */
		"free a", "free c3", "free d", NULL };
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(simulate(net, lines, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "swap timing: %s\n", err.msg);
	if (sim.n_steps != 6) {
		CHECK(sim.n_steps == 6);
		goto out;
	}
	/* the swap-out: 3.0 to 3.0 + 0.1 + 4000 / 10^4 = 3.5 */
	CHECK_NEAR(s.a[4].start_ms, 3.0, 1e-9);
	CHECK_NEAR(s.a[4].end_ms, 3.5, 1e-9);
	/* resident after its release at 3.5: a + c1 + c2 - a = 300 (c2 was
	 * allocated at 3.3, so the release came after it, i.e. at the copy's end) */
	CHECK_U64(s.a[4].resident_bytes, 300);
	CHECK_U64(sim.steps[3].bytes, 4300);   /* r2: a still resident */
	CHECK_U64(sim.steps[0].bytes, 4000);
	CHECK_U64(sim.steps[1].bytes, 5000);
	CHECK_U64(sim.steps[2].bytes, 5100);
	CHECK_U64(sim.steps[4].bytes, 4500);
	CHECK_U64(sim.steps[5].bytes, 4310);
	CHECK_U64(sim.peak_bytes, 5100);
	CHECK_U64(sim.peak_step, 2);
	/* the swap-in: issued at 3.6, a on the host since 3.5: 3.6 to 4.1 */
	CHECK_NEAR(s.a[11].start_ms, 3.6, 1e-9);
	CHECK_NEAR(s.a[11].end_ms, 4.1, 1e-9);
	/* the wait stalls compute by the uncovered 4.1 - 3.9 = 0.2 ms */
	CHECK_NEAR(sim.stall_ms, 0.2, 1e-9);
	CHECK_NEAR(s.a[15].end_ms, 4.1, 1e-9);
	CHECK_NEAR(s.a[17].start_ms, 4.1, 1e-9);
	CHECK_NEAR(s.a[17].end_ms, 4.6, 1e-9);
	CHECK_NEAR(sim.compute_ms, 4.4, 1e-9);
	CHECK_NEAR(sim.time_ms, 4.6, 1e-9);
	CHECK_U64(sim.d2h_bytes, 4000);
	CHECK_U64(sim.h2d_bytes, 4000);
	CHECK_U64(sim.n_swap_out, 1);
	CHECK_U64(sim.n_swap_in, 1);
out:
	sim_release(&sim);
	sched_release(&s);
}

/*
 * The same, but the swap-in is issued only after r3 and waited for at once:
 * nothing covers it, so the stall is the whole copy, 0.1 + 0.4 = 0.5 ms:
 * swap_in 3.9-4.4, s 4.4-4.9, time 4.4 + 0.5 = 4.9.
 */
static void test_swap_uncovered(const struct mp_net *net)
{
	static const char *const lines[] = {
		"alloc a", "compute p", "alloc b", "compute q", "swap_out a",
		"alloc c1", "compute r1", "free b", "alloc c2", "compute r2", "free c1",
		"alloc c3", "compute r3", "free c2",
		"swap_in a",                            /* [14] */
		"wait a", "alloc d", "compute s",        /* s at [17] */
		"free a", "free c3", "free d", NULL };
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(simulate(net, lines, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "uncovered swap: %s\n", err.msg);
	if (sim.n_steps == 6) {
		CHECK_NEAR(s.a[14].start_ms, 3.9, 1e-9);
		CHECK_NEAR(s.a[14].end_ms, 4.4, 1e-9);
		CHECK_NEAR(sim.stall_ms, 0.5, 1e-9);
		CHECK_NEAR(s.a[17].start_ms, 4.4, 1e-9);
		CHECK_NEAR(sim.time_ms, 4.9, 1e-9);
		/* r3's step: a left at 3.5, during r2, so r3 runs without it:
		 * c2 200 + c3 300 = 500; s's step: a 4000 + c3 + d 10 = 4310 */
		CHECK_U64(sim.steps[4].bytes, 500);
		CHECK_U64(sim.steps[5].bytes, 4310);
	} else {
		CHECK(sim.n_steps == 6);
	}
	sim_release(&sim);
	sched_release(&s);
}

/* Schedules the simulator must refuse, each with the message it must give. */
/* A wait on a swapped-out tensor: compute stalls until the swap-out's copy
 * ends, and the memory is free for what comes after.  As test_swap_timing,
 * with "wait a" right after the swap-out:
 *   swap_out a 3.0 to 3.5; compute stalls 0.5 ms: r1 3.5-3.8, r2 3.8-4.1;
 *   swap_in a issued at 4.1 (a on the host since 3.5): 4.1 to 4.6; r3
 *   4.1-4.4; the second wait stalls 0.2 ms; s 4.6-5.1.
 * r1's step no longer holds a: b 1000 + c1 100 = 1100 (5100 without the
 * wait); the peak is q's a + b = 5000. */
static void test_swap_out_wait(const struct mp_net *net)
{
	static const char *const lines[] = {
		"alloc a", "compute p", "alloc b", "compute q",
		"swap_out a", "wait a",                 /* [4], [5] */
		"alloc c1", "compute r1",               /* r1 at [7] */
		"free b", "alloc c2", "compute r2", "free c1",
		"swap_in a",                            /* [12] */
		"alloc c3", "compute r3", "free c2",
		"wait a",                               /* [16] */
		"alloc d", "compute s",                 /* s at [18] */
		"free a", "free c3", "free d", NULL };
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(simulate(net, lines, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "swap-out wait: %s\n", err.msg);
	if (sim.n_steps != 6) {
		CHECK(sim.n_steps == 6);
		goto out;
	}
	CHECK_NEAR(s.a[4].end_ms, 3.5, 1e-9);
	CHECK_NEAR(s.a[5].end_ms, 3.5, 1e-9);
	CHECK_NEAR(s.a[7].start_ms, 3.5, 1e-9);
	CHECK_NEAR(s.a[12].start_ms, 4.1, 1e-9);
	CHECK_NEAR(s.a[12].end_ms, 4.6, 1e-9);
	CHECK_NEAR(s.a[18].start_ms, 4.6, 1e-9);
	CHECK_NEAR(sim.stall_ms, 0.7, 1e-9);
	CHECK_NEAR(sim.time_ms, 5.1, 1e-9);
	CHECK_U64(sim.steps[2].bytes, 1100);
	CHECK_U64(sim.peak_bytes, 5000);
	CHECK_U64(sim.peak_step, 1);
out:
	sim_release(&sim);
	sched_release(&s);
}

static void test_rejects(const struct mp_net *net)
{
	/* a is freed after q, then s reads it */
	static const char *const freed[] = {
		"alloc a", "compute p", "alloc b", "compute q", "free a",
		"alloc c1", "compute r1", "alloc c2", "compute r2", "alloc c3", "compute r3",
		"alloc d", "compute s", NULL };
	/* a's swap-in is never waited for before s reads it */
	static const char *const nowait[] = {
		"alloc a", "compute p", "alloc b", "compute q", "swap_out a",
		"alloc c1", "compute r1", "alloc c2", "compute r2", "alloc c3", "compute r3",
		"swap_in a", "alloc d", "compute s", NULL };
	/* ... nor before it is freed */
	static const char *const nowait_free[] = {
		"alloc a", "compute p", "alloc b", "compute q", "swap_out a",
		"alloc c1", "compute r1", "alloc c2", "compute r2", "alloc c3", "compute r3",
		"swap_in a", "free a", NULL };
	/* p computed twice */
	static const char *const twice[] = {
		"alloc a", "compute p", "compute p", NULL };
	/* an op never computed */
	static const char *const missing[] = {
		"alloc a", "compute p", "alloc b", "compute q", NULL };
	/* swapping in what never left, or what is on the device */
	static const char *const never_out[] = {
		"alloc a", "compute p", "swap_in b", NULL };
	static const char *const on_device[] = {
		"alloc a", "compute p", "swap_in a", NULL };
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(simulate(net, freed, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[12] compute 's': reads 'a', which is not resident");
	sched_release(&s);

	CHECK(simulate(net, nowait, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[13] compute 's': reads 'a', which is still being swapped in (no wait)");
	sched_release(&s);

	CHECK(simulate(net, nowait_free, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[12] free 'a': not resident (its swap-in was never waited for)");
	sched_release(&s);

	CHECK(simulate(net, twice, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[2] compute 'p': op computed twice (use recompute)");
	sched_release(&s);

	CHECK(simulate(net, missing, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule: op 'r1' is never computed");
	sched_release(&s);

	CHECK(simulate(net, never_out, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[2] swap_in 'b': was never swapped out");
	sched_release(&s);

	CHECK(simulate(net, on_device, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[2] swap_in 'a': is already on the device");
	sched_release(&s);

	{
		/* the steady state: d kept to the end leaks on every iteration,
		 * and so does c3 left on the host */
		static const char *const kept[] = {
			"alloc a", "compute p", "alloc b", "compute q", "alloc c1", "compute r1", "free b",
			"alloc c2", "compute r2", "free c1", "alloc c3", "compute r3", "free c2",
			"alloc d", "compute s", "free a", "free c3", NULL };
		static const char *const on_host[] = {
			"alloc a", "compute p", "alloc b", "compute q", "alloc c1", "compute r1", "free b",
			"alloc c2", "compute r2", "free c1", "alloc c3", "compute r3", "free c2",
			"alloc d", "compute s", "free a", "swap_out c3", "free d", NULL };

		CHECK(simulate(net, kept, &s, &sim, &err) < 0);
		CHECK_STR(err.msg, "schedule[13] alloc 'd': still on the device at the end of the iteration, and the next "
			  "one makes it again: a leak on every iteration (free it after its last reader)");
		sched_release(&s);
		CHECK(simulate(net, on_host, &s, &sim, &err) < 0);
		CHECK_STR(err.msg, "schedule[16] swap_out 'c3': swapped out and never back in: its host copy outlives it "
			  "at the end of the iteration, and the next one makes it again: a leak on every iteration (free "
			  "it instead of swapping it out)");
		sched_release(&s);
	}

	{
		/* a freed tensor allocated again and read before anything writes
		 * it: resident, but it holds nothing (what an in-place re-run on a
		 * fresh buffer did) */
		static const char *const unwritten_b[] = {
			"alloc a", "compute p", "alloc b", "compute q", "free b", "alloc b", "alloc c1",
			"compute r1", "close", NULL };

		CHECK(simulate(net, unwritten_b, &s, &sim, &err) < 0);
		CHECK_STR(err.msg, "schedule[7] compute 'r1': reads 'b', which nothing has written since its allocation");
		sched_release(&s);
	}
}

/*
 * Re-running a forward op is a recompute, not a second compute: p runs again
 * after q (1.0 ms more), which is no step of its own; 5.4 = 4.4 + 1.0.
 */
static void test_recompute_ok(const struct mp_net *net)
{
	static const char *const lines[] = {
		"alloc a", "compute p", "alloc b", "compute q", "recompute p",
		"alloc c1", "compute r1", "alloc c2", "compute r2", "alloc c3", "compute r3",
		"alloc d", "compute s", "close", NULL };
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(simulate(net, lines, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "recompute: %s\n", err.msg);
	CHECK_U64(sim.n_steps, 6);
	CHECK_U64(sim.n_recompute, 1);
	CHECK_NEAR(sim.recompute_ms, 1.0, 1e-9);
	CHECK_NEAR(sim.compute_ms, 4.4, 1e-9);
	CHECK_NEAR(sim.time_ms, 5.4, 1e-9);
	/* no frees at all: the last step holds everything, 4000+1000+100+200+300+10 */
	CHECK_U64(sim.peak_bytes, 5610);
	CHECK_U64(sim.peak_step, 5);
	sim_release(&sim);
	sched_release(&s);
}

/*
 * A step's memory is the most resident while it runs; the frees that follow
 * the previous op happen at one instant, so the value cannot depend on the
 * order in which two of them are listed.  Before r3: a 4000, b 1000, c1 100,
 * c2 200 = 5300 (r2's step, the peak).  Then b and c1 are freed (4200) and c3
 * allocated: r3's step is 4000 + 200 + 300 = 4500, whichever goes first.
 */
static void test_free_order(const struct mp_net *net)
{
	static const char *const b_first[] = {
		"alloc a", "compute p", "alloc b", "compute q", "alloc c1", "compute r1",
		"alloc c2", "compute r2", "free b", "free c1", "alloc c3", "compute r3",
		"alloc d", "compute s", "close", NULL };
	static const char *const c1_first[] = {
		"alloc a", "compute p", "alloc b", "compute q", "alloc c1", "compute r1",
		"alloc c2", "compute r2", "free c1", "free b", "alloc c3", "compute r3",
		"alloc d", "compute s", "close", NULL };
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(simulate(net, b_first, &s, &sim, &err) == 0);
	if (sim.n_steps == 6) {
		CHECK_U64(sim.steps[3].bytes, 5300);
		CHECK_U64(sim.steps[4].bytes, 4500);
		CHECK_U64(sim.peak_bytes, 5300);
		CHECK_U64(sim.peak_step, 3);
	}
	sim_release(&sim);
	sched_release(&s);

	CHECK(simulate(net, c1_first, &s, &sim, &err) == 0);
	if (sim.n_steps == 6)
		/* the frees that close the previous step are not counted one by one:
	 * only what the step itself runs with (regression guard) */
		CHECK_U64(sim.steps[4].bytes, 4500);
	sim_release(&sim);
	sched_release(&s);
}

/*
 * Workspace follows the algorithm the compute action names, and the step
 * counts it: x 100 + y 1000 + workspace.
 *   default (5000 B, 1.0 ms): 6100
 *   fast    (8000 B, 0.4 ms): 9100
 *   gemm    (no workspace, 2.0 ms): 1100
 * and fast with only the default's 5000 B reserved is refused.
 */
static void test_workspace(void)
{
	static const char *const dflt[] = {
		"alloc x", "alloc y", "alloc conv.ws", "compute conv", "free conv.ws", "close", NULL };
	static const char *const fast[] = {
		"alloc x", "alloc y", "alloc conv.ws=8000", "compute conv@0", "free conv.ws", "close", NULL };
	static const char *const gemm[] = {
		"alloc x", "alloc y", "compute conv@1", "close", NULL };
	static const char *const short_ws[] = {
		"alloc x", "alloc y", "alloc conv.ws", "compute conv@0", "close", NULL };
	struct mp_net *net = load(ws_json);
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(net != NULL);
	if (!net)
		return;
	CHECK(simulate(net, dflt, &s, &sim, &err) == 0);
	CHECK_U64(sim.peak_bytes, 6100);
	CHECK_NEAR(sim.time_ms, 1.0, 1e-9);
	sim_release(&sim);
	sched_release(&s);

	CHECK(simulate(net, fast, &s, &sim, &err) == 0);
	CHECK_U64(sim.peak_bytes, 9100);
	CHECK_NEAR(sim.time_ms, 0.4, 1e-9);
	sim_release(&sim);
	sched_release(&s);

	CHECK(simulate(net, gemm, &s, &sim, &err) == 0);
	CHECK_U64(sim.peak_bytes, 1100);
	CHECK_NEAR(sim.time_ms, 2.0, 1e-9);
	sim_release(&sim);
	sched_release(&s);

	CHECK(simulate(net, short_ws, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[3] compute 'conv': its workspace 'conv.ws' is not allocated");
	sched_release(&s);
	net_free(net);
}

/*
 * Versions.  p writes a, u updates it in place (a relu after a batch norm),
 * v reads it; g1 and g2 both write the gradient gr, which adds up (two
 * layers reading one tensor), and h reads the sum.
 */
static const char ver_json[] =
	"{\"format\": \"memplan-net/1\", \"name\": \"simver\","
	" \"tensors\": [{\"name\": \"x\", \"kind\": \"input\", \"bytes\": 100},"
	"  {\"name\": \"a\", \"bytes\": 100}, {\"name\": \"b\", \"bytes\": 100},"
	"  {\"name\": \"gr\", \"kind\": \"gradient\", \"bytes\": 100}, {\"name\": \"d\", \"bytes\": 10}],"
	" \"ops\": ["
	"  {\"name\": \"p\", \"inputs\": [\"x\"], \"outputs\": [\"a\"], \"time\": 1.0},"
	"  {\"name\": \"u\", \"inputs\": [\"a\"], \"outputs\": [\"a\"], \"time\": 1.0},"
	"  {\"name\": \"v\", \"inputs\": [\"a\"], \"outputs\": [\"b\"], \"time\": 1.0},"
	"  {\"name\": \"g1\", \"phase\": \"backward\", \"inputs\": [\"b\"], \"outputs\": [\"gr\"], \"time\": 1.0},"
	"  {\"name\": \"g2\", \"phase\": \"backward\", \"inputs\": [\"x\"], \"outputs\": [\"gr\"], \"time\": 1.0},"
	"  {\"name\": \"h\", \"phase\": \"backward\", \"inputs\": [\"gr\"], \"outputs\": [\"d\"], \"time\": 1.0}]}";

static void test_versions(void)
{
	/* rebuilding a from p alone gives p's version, not u's: v must be
	 * refused when it re-runs, and accepted once u re-runs too */
	static const char *const stale[] = {
		"alloc x", "alloc a", "compute p", "compute u", "alloc b", "compute v", "free a",
		"alloc a", "recompute p", "recompute v", "close", NULL };
	static const char *const rebuilt[] = {
		"alloc x", "alloc a", "compute p", "compute u", "alloc b", "compute v", "free a",
		"alloc a", "recompute p", "recompute u", "recompute v",
		"alloc gr", "compute g1", "compute g2", "alloc d", "compute h", "close", NULL };
	/* g2 adds to what g1 wrote: freeing it between loses g1's part; a
	 * swap-out and back keeps it */
	static const char *const lost[] = {
		"alloc x", "alloc a", "compute p", "compute u", "alloc b", "compute v",
		"alloc gr", "compute g1", "free gr", "alloc gr", "compute g2", "close", NULL };
	static const char *const kept[] = {
		"alloc x", "alloc a", "compute p", "compute u", "alloc b", "compute v",
		"alloc gr", "compute g1", "swap_out gr", "swap_in gr", "wait gr", "compute g2",
		"alloc d", "compute h", "close", NULL };
	struct mp_net *net = load(ver_json);
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	CHECK(net != NULL);
	if (!net)
		return;
	CHECK(simulate(net, stale, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[9] recompute 'v': reads 'a' as 'p' left it, not as 'u' did");
	sched_release(&s);
	CHECK(simulate(net, rebuilt, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "versions: %s\n", err.msg);
	CHECK_U64(sim.n_recompute, 3);
	sim_release(&sim);
	sched_release(&s);
	CHECK(simulate(net, lost, &s, &sim, &err) < 0);
	CHECK_STR(err.msg, "schedule[10] compute 'g2': adds to 'gr', whose sum so far ('g1' wrote it) was freed since");
	sched_release(&s);
	CHECK(simulate(net, kept, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "versions: %s\n", err.msg);
	sim_release(&sim);
	sched_release(&s);
	net_free(net);
}

/*
 * An iteration ends when its last copy does (memplan-plan(5)): a tensor that
 * lives on the host between iterations (x, read by both ops, written by
 * none: persistent) comes in first and leaves after the last op.  Toy link:
 *   swap_in x 0.0-0.5 (0.1 + 4000 / 10^4); wait x stalls compute 0.5 ms;
 *   f 0.5-1.5, g 1.5-2.0; swap_out x issued at 2.0: 2.0-2.5.
 * Time 2.5 = compute 1.5 + stall 0.5 + the 0.5 ms tail after g; without the
 * swap-out (x kept on the device), no tail.
 */
static void test_tail(void)
{
	static const char json[] =
		"{\"format\": \"memplan-net/1\", \"name\": \"simtail\","
		" \"tensors\": [{\"name\": \"x\", \"kind\": \"input\", \"bytes\": 4000},"
		"  {\"name\": \"y\", \"bytes\": 100}, {\"name\": \"z\", \"bytes\": 10}],"
		" \"ops\": [{\"name\": \"f\", \"inputs\": [\"x\"], \"outputs\": [\"y\"], \"time\": 1.0},"
		"  {\"name\": \"g\", \"inputs\": [\"x\", \"y\"], \"outputs\": [\"z\"], \"time\": 0.5}]}";
	static const char *const host[] = {
		"swap_in x", "wait x", "alloc y", "compute f", "alloc z", "compute g",
		"free y", "swap_out x", "free z", NULL };
	static const char *const kept[] = {
		"alloc x", "alloc y", "compute f", "alloc z", "compute g", "free y", "free z", NULL };
	struct mp_net *net = load(json);
	struct mp_schedule s;
	struct mp_sim sim;
	struct mp_error err;

	if (!net) {
		CHECK(net != NULL);
		return;
	}
	CHECK(simulate(net, host, &s, &sim, &err) == 0);
	if (err.msg[0])
		fprintf(stderr, "tail: %s\n", err.msg);
	CHECK_NEAR(s.a[7].start_ms, 2.0, 1e-9);
	CHECK_NEAR(s.a[7].end_ms, 2.5, 1e-9);
	CHECK_NEAR(sim.stall_ms, 0.5, 1e-9);
	CHECK_NEAR(sim.time_ms, 2.5, 1e-9);
	CHECK_NEAR(sim.tail_ms, 0.5, 1e-9);
	sim_release(&sim);
	sched_release(&s);
	CHECK(simulate(net, kept, &s, &sim, &err) == 0);
	CHECK_NEAR(sim.time_ms, 1.5, 1e-9);
	CHECK_NEAR(sim.tail_ms, 0.0, 1e-12);
	sim_release(&sim);
	sched_release(&s);
	net_free(net);
}

/* sched_copy: the actions in the order given (or as they are) and the
 * micro-batch lists, in arrays of the copy's own. */
static void test_sched_copy(void)
{
	static const uint32_t ord[] = { 2, 0, 1 };
	struct mp_schedule s, c;

	sched_init(&s);
	sched_push(&s, MP_ACT_ALLOC, -1, 4, 100);
	sched_push(&s, MP_ACT_COMPUTE, 7, -1, 0);
	sched_push(&s, MP_ACT_FREE, -1, 4, 0);
	s.micro = malloc(2 * sizeof(*s.micro));
	s.micro[0] = (struct mp_micro){ 16, 1 };
	s.micro[1] = (struct mp_micro){ 8, -1 };
	s.n_micro = s.cap_micro = 2;
	s.a[1].micro = 2;
	s.a[1].micro_at = 0;
	sched_copy(&c, &s, ord);
	CHECK(c.n == 3 && c.cap == 3 && c.n_micro == 2 && c.a != s.a && c.micro != s.micro);
	CHECK(c.a[0].kind == MP_ACT_FREE && c.a[1].kind == MP_ACT_ALLOC && c.a[1].bytes == 100);
	CHECK(c.a[2].kind == MP_ACT_COMPUTE && c.a[2].op == 7 && c.a[2].micro == 2);
	CHECK(c.micro[0].batch == 16 && c.micro[0].algo == 1 && c.micro[1].batch == 8);
	c.a[1].bytes = 5;
	c.micro[0].batch = 3;
	CHECK(s.a[0].bytes == 100 && s.micro[0].batch == 16);
	sched_release(&c);
	sched_copy(&c, &s, NULL);
	CHECK(c.n == 3 && c.a[0].kind == MP_ACT_ALLOC && c.a[2].kind == MP_ACT_FREE && c.micro[1].batch == 8);
	sched_release(&c);
	sched_release(&s);
	/* (an empty schedule: no action, no list, its arrays allocated all the
	 * same) */
	sched_copy(&c, &s, NULL);
	CHECK(c.n == 0 && c.n_micro == 0 && c.a != NULL && c.micro != NULL);
	sched_release(&c);
}

int main(void)
{
	struct mp_net *net = load(line_json);

	CHECK(net != NULL);
	if (net) {
		test_swap_timing(net);
		test_swap_uncovered(net);
		test_swap_out_wait(net);
		test_rejects(net);
		test_recompute_ok(net);
		test_free_order(net);
		net_free(net);
	}
	test_workspace();
	test_versions();
	test_tail();
	test_sched_copy();
	return unit_report("test_sim");
}
