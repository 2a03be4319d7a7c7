/*
 * Unit tests of the four fixed strategies (analysis/policy.c) and the route
 * (analysis/route.c) on the hand-made examples: chain, diamond, residual,
 * inplace-relu and workspace (examples/NAME.json).  Every expected number was
 * added up by hand from the lowering rules of memplan-net(5); the arithmetic
 * is in the comments.  Then properties on every examples/NAME.json: baseline >=
 * liveness >= offload >= recompute >= l_peak, simulated time >= the sum of
 * the op times, no step above the peak.
 *
 * Conventions of the comments:
 *  - P is what is resident for the whole iteration: parameters and optimizer
 *    state.  Parameter gradients live from their backward op to their update
 *    (to the end of the iteration with no optimizer).
 *  - "step k" is 1-based, as `memplan analyze --steps` prints it; a step's
 *    bytes are the most resident while its op (and any recomputation before
 *    it) runs, its own outputs and workspace included.
 *  - Times in ms; the examples' toy link moves 10^4 bytes per ms each way
 *    with 0.1 ms latency: a copy of B bytes takes 0.1 + B / 10^4 ms.
 *
 * Tests run from the repository root (make does); MEMPLAN_SRCDIR overrides.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "../../analysis/analyze.h"
#include "unit.h"

static const char *srcdir(void)
{
	const char *s = getenv("MEMPLAN_SRCDIR");

	return s && *s ? s : ".";
}

/* One example, each strategy built and simulated on its own so that one
 * failing strategy does not hide the others' numbers. */
struct run {
	const char *name;
	struct mp_net *net;
	struct mp_route route;
	struct mp_layer_min lmin;
	struct mp_device dev;
	int routed;
	int ok[MP_STRAT__COUNT];
	struct mp_schedule sched[MP_STRAT__COUNT];
	struct mp_sim sim[MP_STRAT__COUNT];
	struct mp_recompute_info info[MP_STRAT__COUNT];
};

enum { BASE = MP_STRAT_BASELINE, LIVE = MP_STRAT_LIVENESS, OFFL = MP_STRAT_OFFLOAD,
       RECO = MP_STRAT_RECOMPUTE };

static int run_load(struct run *R, const char *name)
{
	struct mp_policy_opts opts;
	struct mp_error err = { "" };
	char path[1024];

	memset(R, 0, sizeof(*R));
	R->name = name;
	snprintf(path, sizeof(path), "%s/examples/%s.json", srcdir(), name);
	R->net = net_load_file(path, &err);
	if (!R->net) {
		fprintf(stderr, "%s: %s\n", path, err.msg);
		return -1;
	}
	if (R->net->has_device)
		R->dev = R->net->device;
	else
		device_default(&R->dev);
	if (route_build(R->net, &R->route, &err) < 0) {
		fprintf(stderr, "%s: route: %s\n", path, err.msg);
		return -1;
	}
	R->routed = 1;
	policy_layer_min(R->net, &R->route, &R->lmin);
	policy_opts_default(&opts);
	for (int s = 0; s < MP_STRAT__COUNT; s++) {
		sched_init(&R->sched[s]);
		policy_build(R->net, &R->route, (enum mp_strategy)s, &opts, &R->sched[s], &R->info[s]);
		if (sim_run(R->net, &R->dev, &R->sched[s], &R->sim[s], &err) == 0)
			R->ok[s] = 1;
		else
			fprintf(stderr, "%s: %s: %s\n", name, mp_strategy_name((enum mp_strategy)s), err.msg);
	}
	return 0;
}

static void run_free(struct run *R)
{
	for (int s = 0; s < MP_STRAT__COUNT; s++) {
		sched_release(&R->sched[s]);
		if (R->ok[s])
			sim_release(&R->sim[s]);
	}
	if (R->routed)
		route_release(&R->route);
	net_free(R->net);
}

static const char *peak_op(const struct run *R, int s)
{
	const struct mp_sim *m = &R->sim[s];

	return m->n_steps ? R->net->ops[m->steps[m->peak_step].op].name : "(none)";
}

/* A strategy that failed to simulate fails the check that wanted its numbers. */
static int simulated(const struct run *R, int s, int line)
{
	if (R->ok[s]) {
		unit_pass++;
		return 1;
	}
	unit_fail++;
	fprintf(stderr, "%s:%d: %s: the %s schedule did not simulate\n", __FILE__, line,
		R->name, mp_strategy_name((enum mp_strategy)s));
	return 0;
}

/* Checks as macros, so a failure names the line of the expectation. */
#define PEAK(R, s, e_bytes, e_step, e_op) do { \
	if (!simulated(R, s, __LINE__)) break; \
	CHECK_U64((R)->sim[s].peak_bytes, e_bytes); \
	CHECK_U64((R)->sim[s].peak_step + 1, e_step); \
	CHECK_STR(peak_op(R, s), e_op); \
} while (0)

#define STEP(R, s, e_step, e_bytes) do { \
	if (!simulated(R, s, __LINE__)) break; \
	if ((e_step) > (R)->sim[s].n_steps) { CHECK(!"no such step"); break; } \
	CHECK_U64((R)->sim[s].steps[(e_step) - 1].bytes, e_bytes); \
} while (0)

#define TIME(R, s, e_ms) do { \
	if (simulated(R, s, __LINE__)) CHECK_NEAR((R)->sim[s].time_ms, e_ms, 1e-9); \
} while (0)

#define STALL(R, s, e_ms) do { \
	if (simulated(R, s, __LINE__)) CHECK_NEAR((R)->sim[s].stall_ms, e_ms, 1e-9); \
} while (0)

#define LMIN(R, e_bytes, e_step, e_op) do { \
	CHECK_U64((R)->lmin.bytes, e_bytes); \
	CHECK_U64((R)->lmin.step + 1, e_step); \
	CHECK_STR((R)->lmin.op >= 0 ? (R)->net->ops[(R)->lmin.op].name : "(none)", e_op); \
} while (0)

static uint64_t tensor_bytes(const struct run *R, const char *name)
{
	int32_t t = net_find_tensor(R->net, name);

	return t >= 0 ? R->net->tensors[t].bytes : UINT64_MAX;
}

/*
 * chain: data -> conv -> relu -> pool (max) -> fc -> loss, momentum.
 *
 * Tensors (bytes):
 *   data.out 1000 (input)  conv.out 4000  relu.out 4000  pool.out 1000
 *   fc.out 100  loss.out 8
 *   conv.param0 300, conv.param1 20, fc.param0 800, fc.param1 10   (1130)
 *   each parameter's .grad (1130) and momentum .m (1130)
 *   gradients: conv.dout 4000, relu.dout 4000, pool.dout 1000, fc.dout 100
 *   (data needs no gradient; loss ends the forward pass: no loss.dout)
 *   baseline = 10108 + 1130 * 3 + 9100 = 22598
 * Route: 1 data.fwd 2 conv.fwd 3 relu.fwd 4 pool.fwd 5 fc.fwd 6 loss.fwd
 *        7 loss.bwd 8 fc.bwd 9 pool.bwd 10 relu.bwd 11 conv.bwd
 *        12 conv.update 13 fc.update
 * Backward reads: loss.bwd fc.out; fc.bwd pool.out, fc.param0, fc.dout;
 *   pool.bwd relu.out, pool.out, pool.dout; relu.bwd relu.out, relu.dout;
 *   conv.bwd data.out, conv.param0, conv.dout.
 * Liveness, P = 2260:
 *   1  P + data 1000                                        = 3260
 *   2  + conv.out 4000                                      = 7260
 *   3  + relu.out 4000 = 11260; conv.out's last reader: freed -> 7260
 *   4  + pool.out 1000                                      = 8260
 *   5  + fc.out 100                                         = 8360
 *   6  + loss.out 8 = 8368 (read by nobody: freed)          -> 8360
 *   7  + fc.dout 100 = 8460; fc.out freed                   -> 8360
 *   8  + pool.dout 1000 + fc grads 810 = 10170; fc.dout freed -> 10070
 *   9  + relu.dout 4000 = 14070; pool.out, pool.dout freed -> 12070
 *   10 + conv.dout 4000 = 16070 (the peak); relu.out, relu.dout freed -> 8070
 *   11 + conv grads 320 = 8390; data.out, conv.dout freed -> 3390
 *   12 3390; conv grads freed -> 3070      13 3070; fc grads freed -> 2260
 * l_peak: relu.bwd alone reads relu.out + relu.dout and writes conv.dout
 *   = 12000 (step 10); the next largest, pool.bwd, reads 4000+1000+1000 and
 *   writes 4000: 10000.
 * Time: 0.1+1+0.2+0.3+0.5+0.1 + 0.1+1+0.4+0.2+2 + 0.05+0.05 = 6.0
 * Offload: conv.out is a checkpoint but no backward op reads it (relu saves
 *   its output), so nothing is swapped: the liveness curve.
 * Recompute: dropped = tensors saved for backward whose forward writer is
 *   cheap and whose inputs stay resident anyway: pool.out (from relu.out,
 *   saved) and fc.out (from pool.out, dropped, and parameters).  relu.out is
 *   kept: rebuilding it needs conv.out, otherwise dead after step 3.  One
 *   segment (conv..loss): 1100 dropped + 12000 > l_peak 12000, so memory-
 *   centric: before loss.bwd re-run pool.fwd, fc.fwd; before fc.bwd
 *   pool.fwd; before pool.bwd pool.fwd: 4 extra ops, 0.3*3 + 0.5 = 1.4 ms,
 *   time 7.4.  Steps:
 *   6  after fc.fwd pool.out is freed (8360 - 1000 = 7360) + loss.out = 7368
 *   7  7260 + pool.out 1000 + fc.out 100 = 8360 (then loss.bwd at 7460)
 *   8  + pool.out = 8360; + pool.dout 1000 + fc grads 810 = 10170
 *   9  9070 + pool.out 1000 + relu.dout 4000 = 14070
 *   10 16070 as in liveness: the peak does not move.
 */
static void test_chain(void)
{
	struct run R;

	if (run_load(&R, "chain") < 0) {
		CHECK(!"chain.json loads and routes");
		run_free(&R);
		return;
	}
	CHECK_U64(R.route.n, 13);
	CHECK_U64(net_bytes_of_kind(R.net, MP_TK_ACTIVATION), 10108 - 1000);
	CHECK_U64(net_bytes_of_kind(R.net, MP_TK_GRADIENT), 9100);
	CHECK_U64(net_bytes_of_kind(R.net, MP_TK_OPT_STATE), 1130);
	CHECK(net_find_tensor(R.net, "data.dout") < 0);
	CHECK(net_find_tensor(R.net, "loss.dout") < 0);

	PEAK(&R, BASE, 22598, 1, "data.fwd");
	STEP(&R, BASE, 13, 22598);

	PEAK(&R, LIVE, 16070, 10, "relu.bwd");
	STEP(&R, LIVE, 1, 3260);
	STEP(&R, LIVE, 3, 11260);
	STEP(&R, LIVE, 4, 8260);
	STEP(&R, LIVE, 6, 8368);
	STEP(&R, LIVE, 7, 8460);
	STEP(&R, LIVE, 8, 10170);
	STEP(&R, LIVE, 9, 14070);
	/* the frees that close the previous step are not counted one by one:
	 * only what the step itself runs with (regression guard) */
	STEP(&R, LIVE, 11, 8390);
	TIME(&R, LIVE, 6.0);

	PEAK(&R, OFFL, 16070, 10, "relu.bwd");
	STEP(&R, OFFL, 4, 8260);
	if (simulated(&R, OFFL, __LINE__))
		CHECK_U64(R.sim[OFFL].d2h_bytes, 0);
	TIME(&R, OFFL, 6.0);

	PEAK(&R, RECO, 16070, 10, "relu.bwd");
	STEP(&R, RECO, 6, 7368);
	STEP(&R, RECO, 7, 8360);
	STEP(&R, RECO, 8, 10170);
	STEP(&R, RECO, 9, 14070);
	CHECK_U64(R.info[RECO].extra_ops, 4);
	CHECK_U64(R.info[RECO].segments_memory, 1);
	CHECK_U64(R.info[RECO].segments_speed, 0);
	TIME(&R, RECO, 7.4);
	STALL(&R, RECO, 0.0);

	LMIN(&R, 12000, 10, "relu.bwd");
	run_free(&R);
}

/*
 * diamond: data -> stem (conv) -> { a1 (conv) -> a2 (relu) ; b1 (max-pool) }
 *          -> join (concat) -> head (fc) -> loss, sgd (no state).
 *
 * Tensors: data.out 1000, stem.out 2000, a1.out 1000, a2.out 1000,
 *   b1.out 500, join.out 1500, head.out 100, loss.out 8  (7108)
 *   params stem 200, a1 100, head 300 + 10 (610) and their grads (610)
 *   gradients stem 2000 (a1.bwd and b1.bwd both add into it), a1 1000,
 *   a2 1000, b1 500, join 1500, head 100 (6100)
 *   baseline = 7108 + 610 + 610 + 6100 = 14428
 * Route (Alg. 1): the file lists b1 before a2, but the walk goes depth first
 *   down branch a and waits at the join:
 *   1 data 2 stem 3 a1 4 a2 5 b1 6 join 7 head 8 loss (.fwd)
 *   9 loss 10 head 11 join 12 b1 13 a2 14 a1 15 stem (.bwd)
 *   16 stem 17 a1 18 head (.update)
 * Liveness, P = 610:
 *   1 1610  2 +2000 = 3610  3 +1000 = 4610
 *   4 + a2.out 1000 = 5610; a1.out freed (a2 saves its output) -> 4610
 *   5 + b1.out 500 = 5110     6 + join.out 1500 = 6610
 *   7 + head.out 100 = 6710   8 + loss.out 8 = 6718 -> 6710
 *   9 + head.dout 100 = 6810; head.out freed -> 6710
 *   10 + join.dout 1500 + head grads 310 = 8520; join.out, head.dout freed -> 6920
 *   11 + a2.dout 1000 + b1.dout 500 = 8420; join.dout freed -> 6920
 *   12 + stem.dout 2000 = 8920 (peak, first reached here); b1.out, b1.dout freed -> 7920
 *   13 + a1.dout 1000 = 8920; a2.out, a2.dout freed -> 6920
 *   14 + a1 grad 100 = 7020; stem.out, a1.dout freed -> 4020
 *   15 + stem grad 200 = 4220
 * l_peak: a1.bwd reads stem.out 2000 + a1.param0 100 + a1.dout 1000, writes
 *   stem.dout 2000 + grad 100 = 5200 (step 14); b1.bwd is 3000 + 2000.
 * Time: forward 0.1+1+0.8+0.2+0.3+0.1+0.5+0.1 = 3.1, backward
 *   0.1+1+0.1+0.4+0.2+1.6+2 = 5.4, updates 0.15: 8.65.
 * Offload: stem.out (checkpoint) leaves after b1.fwd (t 2.4), its copy
 *   0.1 + 2000/10^4 = 0.3 ms ends at 2.7, during head.fwd (2.5-3.0); it
 *   comes back at the first backward step (no checkpoint backward comes
 *   before b1.bwd), 3.1-3.4, long before b1.bwd at 4.3: no stall, 8.65.
 *   a1.out is read by no backward op: not swapped.  Steps:
 *   7 head.fwd (2.5-3.0): 6610 + head.out 100 = 6710 at 2.5, stem.out
 *     still resident; 4710 once its copy ends at 2.7: the step is 6710
 *   8 loss.fwd: 6710 - 2000 + 8 = 4718
 *   peak 8920 at step 12 as in liveness (stem.out is back by then).
 * Recompute: dropped b1.out (from stem.out, saved), join.out (from a2.out,
 *   saved, and b1.out, dropped), head.out (from join.out); a2.out is kept
 *   (its rebuild needs a1.out, dead after a2.fwd).  Segment a1..loss:
 *   2100 + 5200 > 5200: memory-centric.  Before loss.bwd re-run b1, join,
 *   head; before head.bwd b1, join; before b1.bwd b1: 6 extra ops
 *   (0.3*3 + 0.1*2 + 0.5 = 1.6 ms).  stem.out is now read in backward at
 *   the first re-run b1.fwd, so its swap-in (3.1-3.4) is waited for at
 *   once: 0.3 ms stall; time 8.65 + 1.6 + 0.3 = 10.55.  Steps:
 *   7 head.fwd: b1.out freed after join -> 6110, + head.out = 6210, then
 *     stem.out leaves at 2.7
 *   8 loss.fwd: join.out freed -> 2710, + loss.out = 2718
 *   9 loss.bwd: 2610 + stem.out back 2000 + b1 500 + join 1500 = 6610
 *   10 head.bwd: 4710 + b1.out 500 + join.out 1500 = 6710; b1.out freed
 *      (6210); + join.dout 1500 + head grads 310 = 8020
 *   11 join.bwd: 6420 + 1000 + 500 = 7920
 *   12 b1.bwd: 6420 + b1.out 500 + stem.dout 2000 = 8920 (peak, as liveness)
 */
static void test_diamond(void)
{
	struct run R;

	if (run_load(&R, "diamond") < 0) {
		CHECK(!"diamond.json loads and routes");
		run_free(&R);
		return;
	}
	PEAK(&R, BASE, 14428, 1, "data.fwd");

	PEAK(&R, LIVE, 8920, 12, "b1.bwd");
	STEP(&R, LIVE, 1, 1610);
	STEP(&R, LIVE, 4, 5610);
	STEP(&R, LIVE, 5, 5110);
	STEP(&R, LIVE, 6, 6610);
	STEP(&R, LIVE, 8, 6718);
	STEP(&R, LIVE, 9, 6810);
	STEP(&R, LIVE, 10, 8520);
	STEP(&R, LIVE, 11, 8420);
	STEP(&R, LIVE, 13, 8920);
	/* the frees that close the previous step are not counted one by one:
	 * only what the step itself runs with (regression guard) */
	STEP(&R, LIVE, 14, 7020);
	TIME(&R, LIVE, 8.65);

	PEAK(&R, OFFL, 8920, 12, "b1.bwd");
	STEP(&R, OFFL, 7, 6710);
	STEP(&R, OFFL, 8, 4718);
	if (simulated(&R, OFFL, __LINE__)) {
		CHECK_U64(R.sim[OFFL].d2h_bytes, 2000);
		CHECK_U64(R.sim[OFFL].h2d_bytes, 2000);
	}
	STALL(&R, OFFL, 0.0);
	TIME(&R, OFFL, 8.65);

	PEAK(&R, RECO, 8920, 12, "b1.bwd");
	STEP(&R, RECO, 7, 6210);
	STEP(&R, RECO, 8, 2718);
	STEP(&R, RECO, 9, 6610);
	STEP(&R, RECO, 10, 8020);
	STEP(&R, RECO, 11, 7920);
	CHECK_U64(R.info[RECO].extra_ops, 6);
	CHECK_U64(R.info[RECO].segments_memory, 1);
	STALL(&R, RECO, 0.3);
	TIME(&R, RECO, 10.55);

	LMIN(&R, 5200, 14, "a1.bwd");
	run_free(&R);
}

/*
 * residual: data [2,3,10,10] -> stem conv [2,4,10,10] -> conv1 1x1 [2,16,..]
 *   -> bn1 -> relu1 -> conv2 3x3 [2,4,..] -> bn2; add(bn2, stem) -> relu2
 *   -> loss [2]; float32, no optimizer.
 *
 * Bytes: a 3-channel map 2400, 4-channel 3200, 16-channel 12800, loss 8.
 *   params: stem 4*3*3*3*4 = 432 + 16; conv1 16*4*4 = 256; bn1 64 + 64;
 *   conv2 4*16*9*4 = 2304; bn2 16 + 16: P = 3168; grads the same 3168.
 *   bn statistics: 2 float32 per channel: bn1.stats 128, bn2.stats 32.
 *   activations 2400+3200+12800*3+128+3200*4+32+8 = 56968
 *   gradients stem 3200, conv1/bn1/relu1 12800 each, conv2, bn2, add,
 *   relu2 3200 each: 54400.   baseline = 56968 + 54400 + 2 * 3168 = 117704
 * Route: 1 data 2 stem 3 conv1 4 bn1 5 relu1 6 conv2 7 bn2 8 add 9 relu2
 *   10 loss (.fwd); 11 loss 12 relu2 13 add 14 bn2 15 conv2 16 relu1 17 bn1
 *   18 conv1 19 stem (.bwd); stem's backward waits for both add and conv1.
 * Liveness, P = 3168, parameter gradients kept to the end:
 *   1 5568  2 8768  3 +12800 = 21568  4 + bn1.out 12800 + stats 128 = 34496
 *   5 + relu1.out 12800 = 47296; bn1.out freed (bn1 saves its input) -> 34496
 *   6 37696  7 + 3232 = 40928  8 + add.out = 44128 -> bn2.out freed 40928
 *   9 + relu2.out = 44128 -> add.out freed 40928   10 + 8 = 40936
 *   11 40928 + relu2.dout = 44128    12 + add.dout = 47328 -> 40928
 *   13 + bn2.dout + stem.dout = 47328 -> 44128
 *   14 + conv2.dout 3200 + grads 32 = 47360 -> conv2.out, bn2.stats,
 *      bn2.dout freed: 40928
 *   15 + relu1.dout 12800 + grad 2304 = 56032 -> 52832
 *   16 + bn1.dout 12800 = 65632 (peak) -> relu1.out, relu1.dout freed 40032
 *   17 + conv1.dout 12800 + grads 128 = 52960 -> 27232
 *   18 + grad 256 = 27488 -> 11488     19 + grads 448 = 11936
 * l_peak: bn1.bwd reads conv1.out 12800 + params 128 + stats 128 + bn1.dout
 *   12800, writes conv1.dout 12800 + grads 128: 38784 (step 17).
 * Time: forward 0.1+0.5+0.4+0.2+0.1+0.6+0.1+0.05*3 = 2.15, backward
 *   0.05*3+0.2+1.2+0.1+0.3+0.8+1.0 = 3.75: 5.9.
 * Offload: checkpoints stem, conv1, conv2.  Out: conv1.out after bn1.fwd
 *   (1.2, copy 0.1 + 1.28 = 1.38: ends 2.58), conv2.out after bn2.fwd
 *   (d2h busy until 2.58, copy 0.42: ends 3.0), stem.out after add.fwd
 *   (3.0-3.42).  In: conv2.out at the first backward step (2.15), but it
 *   reaches the host only at 3.0: 3.0-3.42; bn2.bwd waits from 2.3 to 3.42
 *   (1.12 stall).  stem.out and conv1.out come back at conv2.bwd (3.62),
 *   one checkpoint ahead: 3.62-4.04 and 4.04-5.42; bn1.bwd waits from 5.02
 *   to 5.42 (0.5).  Time 5.9 + 1.62 = 7.52.  Steps:
 *   14 bn2.bwd: after add.bwd 44128 (conv1.out, conv2.out and stem.out
 *      still count until their copies end at 2.58, 3.0 and 3.42): 44128
 *   16 65632 as in liveness: the prefetch brings everything back first.
 * Recompute: nothing is dropped.  bn1.stats and bn2.stats are saved, but
 *   rebuilding them re-runs bn1.fwd / bn2.fwd whole, materialising bn1.out
 *   (12800) / bn2.out (3200), neither saved: more than they rebuild (128,
 *   32), so they are kept; relu1.out and relu2.out are kept (their rebuild
 *   needs bn1.out / add.out, dead after forward).  The schedule is offload's:
 *   peak 65632 at step 16, time 7.52, no extra ops, no segments.  (Until the
 *   rule on what a rebuild materialises, the statistics were dropped and
 *   rebuilt at the cost of bn1.out: a net with a dead-end batch norm,
 *   tests/data/recompute-above-offload.json, then peaked above offload.)
 */
static void test_residual(void)
{
	struct run R;

	if (run_load(&R, "residual") < 0) {
		CHECK(!"residual.json loads and routes");
		run_free(&R);
		return;
	}
	CHECK_U64(tensor_bytes(&R, "bn1.stats"), 128);
	CHECK_U64(tensor_bytes(&R, "bn2.stats"), 32);
	CHECK_U64(tensor_bytes(&R, "conv2.param0"), 2304);
	if (R.route.n == 19) {
		CHECK_STR(R.net->ops[R.route.op[12]].name, "add.bwd");
		CHECK_STR(R.net->ops[R.route.op[18]].name, "stem.bwd");
	}
	PEAK(&R, BASE, 117704, 1, "data.fwd");

	PEAK(&R, LIVE, 65632, 16, "relu1.bwd");
	STEP(&R, LIVE, 4, 34496);
	STEP(&R, LIVE, 5, 47296);
	STEP(&R, LIVE, 10, 40936);
	STEP(&R, LIVE, 14, 47360);
	STEP(&R, LIVE, 15, 56032);
	STEP(&R, LIVE, 17, 52960);
	/* the frees that close the previous step are not counted one by one:
	 * only what the step itself runs with (regression guard) */
	STEP(&R, LIVE, 18, 27488);
	TIME(&R, LIVE, 5.9);

	PEAK(&R, OFFL, 65632, 16, "relu1.bwd");
	STEP(&R, OFFL, 14, 44128);
	if (simulated(&R, OFFL, __LINE__))
		CHECK_U64(R.sim[OFFL].d2h_bytes, 3200 + 12800 + 3200);
	STALL(&R, OFFL, 1.62);
	TIME(&R, OFFL, 7.52);

	PEAK(&R, RECO, 65632, 16, "relu1.bwd");
	STEP(&R, RECO, 14, 44128);
	CHECK_U64(R.info[RECO].extra_ops, 0);
	CHECK_U64(R.info[RECO].segments_speed, 0);
	CHECK_U64(R.info[RECO].segments_memory, 0);
	STALL(&R, RECO, 1.62);
	TIME(&R, RECO, 7.52);

	LMIN(&R, 38784, 17, "bn1.bwd");
	run_free(&R);
}

/*
 * inplace-relu: data -> conv -> relu (in place) -> fc -> loss, sgd.
 *
 * relu writes conv's tensor: there is no relu.out, and relu.fwd allocates
 * nothing; relu's backward (reads its output) and fc's (reads its input)
 * both read conv.out.  relu keeps its own gradient buffer relu.dout.
 * Tensors: data.out 1000, conv.out 4000, fc.out 100, loss.out 8; params
 *   1130 and grads 1130; gradients conv 4000, relu 4000, fc 100.
 *   baseline = 5108 + 2260 + 8100 = 15468
 * Route: 1 data 2 conv 3 relu 4 fc 5 loss (.fwd) 6 loss 7 fc 8 relu 9 conv
 *   (.bwd) 10 conv 11 fc (.update)
 * Liveness, P = 1130:
 *   1 2130  2 6130  3 6130 (in place)  4 6230  5 6238 -> 6230
 *   6 + fc.dout = 6330 -> fc.out freed 6230
 *   7 + relu.dout 4000 + fc grads 810 = 11040 -> fc.dout freed 10940
 *   8 + conv.dout 4000 = 14940 (peak) -> conv.out, relu.dout freed 6940
 *   9 + conv grads 320 = 7260
 * l_peak: relu.bwd: conv.out + relu.dout + conv.dout = 12000 (step 8).
 * Time: 0.1+1+0.2+0.5+0.1 + 0.1+1+0.2+2 + 0.1 = 5.3.
 * Offload: conv.out leaves after fc.fwd (1.8; copy 0.5 to 2.3) and, with no
 *   checkpoint backward before fc.bwd, is fetched at loss.bwd (issued at
 *   1.9, starts when on the host at 2.3, ends 2.8); fc.bwd waits from 2.0:
 *   0.8 stall, time 6.1.  Step 6 (loss.bwd, 1.9-2.0) still holds conv.out:
 *   6330.  Peak 14940 at step 8, as liveness.
 * Recompute: fc.out dropped (from conv.out, saved): fc.fwd re-run before
 *   loss.bwd (0.5), which now reads conv.out: swap-in waited for at once,
 *   1.9 -> 2.8: 0.9 stall; time 5.3 + 0.5 + 0.9 = 6.7.  Peak 14940, step 8.
 */
static void test_inplace(void)
{
	struct run R;
	int32_t conv = -1, relu = -1;

	if (run_load(&R, "inplace-relu") < 0) {
		CHECK(!"inplace-relu.json loads and routes");
		run_free(&R);
		return;
	}
	for (uint32_t i = 0; i < R.net->n_layers; i++) {
		if (!strcmp(R.net->layers[i].name, "conv"))
			conv = (int32_t)i;
		if (!strcmp(R.net->layers[i].name, "relu"))
			relu = (int32_t)i;
	}
	CHECK(conv >= 0 && relu >= 0);
	if (conv >= 0 && relu >= 0)
		CHECK(R.net->layers[relu].out == R.net->layers[conv].out);
	CHECK(net_find_tensor(R.net, "relu.out") < 0);
	CHECK_U64(tensor_bytes(&R, "relu.dout"), 4000);

	PEAK(&R, BASE, 15468, 1, "data.fwd");

	PEAK(&R, LIVE, 14940, 8, "relu.bwd");
	STEP(&R, LIVE, 2, 6130);
	STEP(&R, LIVE, 3, 6130);
	STEP(&R, LIVE, 4, 6230);
	STEP(&R, LIVE, 7, 11040);
	/* the frees that close the previous step are not counted one by one:
	 * only what the step itself runs with (regression guard) */
	STEP(&R, LIVE, 9, 7260);
	TIME(&R, LIVE, 5.3);

	PEAK(&R, OFFL, 14940, 8, "relu.bwd");
	STEP(&R, OFFL, 6, 6330);
	if (simulated(&R, OFFL, __LINE__))
		CHECK_U64(R.sim[OFFL].d2h_bytes, 4000);
	STALL(&R, OFFL, 0.8);
	TIME(&R, OFFL, 6.1);

	PEAK(&R, RECO, 14940, 8, "relu.bwd");
	CHECK_U64(R.info[RECO].extra_ops, 1);
	STALL(&R, RECO, 0.9);
	TIME(&R, RECO, 6.7);

	LMIN(&R, 12000, 8, "relu.bwd");
	run_free(&R);
}

/*
 * workspace: data -> conv -> relu -> fc -> loss, adam.  conv has no layer
 * time, so its first algorithm, fft (8000 B of workspace, 0.5 / 1.0 ms), is
 * the default; implicit_gemm needs none, winograd 2000.
 *
 * Tensors: data.out 1000, conv.out 4000, relu.out 4000, fc.out 100,
 *   loss.out 8; params 1130, grads 1130, adam .m and .v 2260; gradients
 *   conv, relu 4000 each, fc 100; workspace conv.fwd.ws and conv.bwd.ws
 *   8000 each.  baseline = 9108 + 1130 + 1130 + 2260 + 8100 + 16000 = 37728
 * Liveness, P = 1130 + 2260 = 3390; workspace only while its op runs:
 *   1 4390
 *   2 + conv.out 4000 + workspace 8000 = 16390 -> workspace freed 8390
 *   3 + relu.out = 12390 -> conv.out freed 8390   4 8490   5 8498
 *   6 8590   7 + relu.dout + 810 = 13300 -> 13200
 *   8 + conv.dout = 17200 -> relu.out, relu.dout freed 9200
 *   9 + conv grads 320 + workspace 8000 = 17520 (peak)
 *   10 workspace, data.out, conv.dout freed: 4520
 * l_peak counts the smallest workspace (implicit_gemm's 0): conv.bwd alone
 *   is 1000+300+4000+320 = 5620 (13620 with fft's), so relu.bwd's 12000
 *   (step 8) is l_peak.
 * Time: 0.1+0.5+0.2+0.5+0.1 + 0.1+1+0.2+1 + 0 (conv has no update time) +
 *   0.05 = 3.75.  Offload: conv.out is read by no backward op: nothing moves.
 * Recompute: fc.out dropped (relu.out is kept: its rebuild needs conv.out);
 *   fc.fwd re-run before loss.bwd: + 0.5 ms, time 4.25; step 6: 8390 +
 *   fc.out 100 + fc.dout 100 = 8590; peak 17520 at step 9.
 */
static void test_workspace(void)
{
	struct run R;

	if (run_load(&R, "workspace") < 0) {
		CHECK(!"workspace.json loads and routes");
		run_free(&R);
		return;
	}
	CHECK_U64(tensor_bytes(&R, "conv.fwd.ws"), 8000);
	CHECK_U64(tensor_bytes(&R, "conv.bwd.ws"), 8000);
	CHECK_U64(net_bytes_of_kind(R.net, MP_TK_WORKSPACE), 16000);

	PEAK(&R, BASE, 37728, 1, "data.fwd");

	PEAK(&R, LIVE, 17520, 9, "conv.bwd");
	STEP(&R, LIVE, 1, 4390);
	STEP(&R, LIVE, 2, 16390);
	STEP(&R, LIVE, 3, 12390);
	STEP(&R, LIVE, 7, 13300);
	STEP(&R, LIVE, 8, 17200);
	/* the frees that close the previous step are not counted one by one:
	 * only what the step itself runs with (regression guard) */
	STEP(&R, LIVE, 10, 4520);
	TIME(&R, LIVE, 3.75);

	PEAK(&R, OFFL, 17520, 9, "conv.bwd");
	TIME(&R, OFFL, 3.75);

	PEAK(&R, RECO, 17520, 9, "conv.bwd");
	STEP(&R, RECO, 6, 8590);
	CHECK_U64(R.info[RECO].extra_ops, 1);
	TIME(&R, RECO, 4.25);

	LMIN(&R, 12000, 8, "relu.bwd");
	run_free(&R);
}

/* ---- route ------------------------------------------------------------ */

static const char *const diamond_route[] = {
	"data.fwd", "stem.fwd", "a1.fwd", "a2.fwd", "b1.fwd", "join.fwd", "head.fwd", "loss.fwd",
	"loss.bwd", "head.bwd", "join.bwd", "b1.bwd", "a2.bwd", "a1.bwd", "stem.bwd",
	"stem.update", "a1.update", "head.update",
};

/*
 * The diamond's route is SuperNeurons Alg. 1: depth first from data, down
 * branch a (a1 comes first in the file), waiting at join until b1 is done;
 * backward in reverse forward order (join's backward feeds b1 then a2,
 * stem's waits for both a1 and b1); updates in forward order.  Loading and
 * routing again gives the same order.
 */
static void test_route_diamond(void)
{
	char path[1024];
	struct mp_error err = { "" };
	struct mp_net *n1, *n2;
	struct mp_route r1, r2;
	uint32_t n = sizeof(diamond_route) / sizeof(diamond_route[0]);

	snprintf(path, sizeof(path), "%s/examples/diamond.json", srcdir());
	n1 = net_load_file(path, &err);
	n2 = net_load_file(path, &err);
	CHECK(n1 && n2);
	if (!n1 || !n2) {
		net_free(n1);
		net_free(n2);
		return;
	}
	CHECK(route_build(n1, &r1, &err) == 0);
	CHECK(route_build(n2, &r2, &err) == 0);
	CHECK_U64(r1.n, n);
	CHECK_U64(r1.n_fwd, 8);
	CHECK_U64(r1.n_bwd, 7);
	CHECK_U64(r1.n_opt, 3);
	for (uint32_t i = 0; i < n && i < r1.n; i++)
		CHECK_STR(n1->ops[r1.op[i]].name, diamond_route[i]);
	/* deterministic: a second load and route agree step by step, and
	 * routing the same net twice too */
	CHECK_U64(r2.n, r1.n);
	for (uint32_t i = 0; i < r1.n && i < r2.n; i++)
		CHECK_STR(n2->ops[r2.op[i]].name, n1->ops[r1.op[i]].name);
	route_release(&r2);
	CHECK(route_build(n1, &r2, &err) == 0);
	for (uint32_t i = 0; i < r1.n && i < r2.n; i++)
		CHECK_U64(r2.op[i], r1.op[i]);
	/* pos is the inverse of op */
	for (uint32_t i = 0; i < r1.n; i++)
		CHECK_U64(r1.pos[r1.op[i]], i);
	route_release(&r1);
	route_release(&r2);
	net_free(n1);
	net_free(n2);
}

static struct mp_net *load_text(const char *text, struct mp_error *err)
{
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);
	struct mp_net *net;

	if (!root) {
		snprintf(err->msg, sizeof(err->msg), "test bug: %s", jerr.text);
		return NULL;
	}
	net = net_load_json(root, err);
	json_decref(root);
	return net;
}

/*
 * A cycle among layers is refused when loading, naming a layer on it and
 * the input that closes it; a cycle among explicit ops is refused by the
 * route, naming an op on it.
 */
static void test_route_cycle(void)
{
	static const char layers[] =
		"{\"format\": \"memplan-net/1\", \"name\": \"cycle\", \"layers\": ["
		" {\"name\": \"data\", \"type\": \"data\", \"bytes\": 100},"
		" {\"name\": \"x\", \"type\": \"fc\", \"inputs\": [\"y\"], \"bytes\": 100, \"param_bytes\": 10},"
		" {\"name\": \"y\", \"type\": \"relu\", \"inputs\": [\"x\"], \"bytes\": 100},"
		" {\"name\": \"z\", \"type\": \"loss\", \"inputs\": [\"data\"], \"bytes\": 8}]}";
	static const char ops[] =
		"{\"format\": \"memplan-net/1\", \"name\": \"opcycle\","
		" \"tensors\": [{\"name\": \"t0\", \"bytes\": 10}, {\"name\": \"t1\", \"bytes\": 10},"
		"               {\"name\": \"t2\", \"bytes\": 10}],"
		" \"ops\": [{\"name\": \"z\", \"outputs\": [\"t0\"]},"
		"         {\"name\": \"A\", \"inputs\": [\"t2\"], \"outputs\": [\"t1\"]},"
		"         {\"name\": \"B\", \"inputs\": [\"t1\"], \"outputs\": [\"t2\"]}]}";
	struct mp_error err = { "" };
	struct mp_net *net;
	struct mp_route r;

	net = load_text(layers, &err);
	CHECK(net == NULL);
	CHECK_STR(err.msg, "layers[1].inputs[0]: cycle: 'x' depends on itself through 'y'");
	net_free(net);

	err.msg[0] = 0;
	net = load_text(ops, &err);
	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "op cycle net: %s\n", err.msg);
		return;
	}
	CHECK(route_build(net, &r, &err) < 0);
	CHECK_STR(err.msg, "ops[2].inputs[0]: cycle: op 'B' depends on itself through 'A'");
	net_free(net);
}

/* ---- properties on every example --------------------------------------- */

static void prop(int ok, const char *file, const char *what)
{
	if (ok) {
		unit_pass++;
	} else {
		unit_fail++;
		fprintf(stderr, "examples/%s: %s\n", file, what);
	}
}

/*
 * On every examples/NAME.json: baseline >= liveness >= offload >= recompute >=
 * l_peak; each strategy's simulated time >= the sum of its compute and
 * recompute times >= the sum of the net's op times (each op at least once,
 * default implementation); no step above the peak and the peak is a step's.
 */
static int test_properties_in(const char *sub)
{
	char dir[1024];
	struct dirent **names = NULL;
	int n, files = 0;

	snprintf(dir, sizeof(dir), "%s/%s", srcdir(), sub);
	n = scandir(dir, &names, NULL, alphasort);
	CHECK(n > 0);
	for (int i = 0; i < n; i++) {
		const char *f = names[i]->d_name;
		size_t len = strlen(f);
		char path[2048], what[1200];
		struct mp_error err = { "" };
		struct mp_policy_opts opts;
		struct mp_analysis A;
		struct mp_net *net;
		uint64_t peak[MP_STRAT__COUNT] = { 0 };
		double op_ms = 0;

		if (len < 6 || strcmp(f + len - 5, ".json"))
			continue;
		files++;
		snprintf(path, sizeof(path), "%s/%s", dir, f);
		net = net_load_file(path, &err);
		if (!net) {
			snprintf(what, sizeof(what), "does not load: %s", err.msg);
			prop(0, f, what);
			continue;
		}
		policy_opts_default(&opts);
		if (analysis_run(net, NULL, (1u << MP_STRAT__COUNT) - 1, &opts, &A, &err) < 0) {
			snprintf(what, sizeof(what), "analysis fails: %s", err.msg);
			prop(0, f, what);
			net_free(net);
			continue;
		}
		for (uint32_t o = 0; o < net->n_ops; o++)
			op_ms += net->ops[o].ms;
		prop(A.n == MP_STRAT__COUNT, f, "all four strategies ran");
		for (uint32_t k = 0; k < A.n; k++) {
			const struct mp_strategy_result *r = &A.r[k];
			const struct mp_sim *s = &r->sim;
			const char *sn = mp_strategy_name(r->strategy);
			uint64_t top = 0;
			int over = 0;

			peak[r->strategy] = s->peak_bytes;
			for (uint32_t j = 0; j < s->n_steps; j++) {
				over |= s->steps[j].bytes > s->peak_bytes;
				if (s->steps[j].bytes > top)
					top = s->steps[j].bytes;
			}
			snprintf(what, sizeof(what), "%s: a step above the peak %" PRIu64, sn, s->peak_bytes);
			prop(!over, f, what);
			snprintf(what, sizeof(what), "%s: the peak %" PRIu64 " is no step's maximum (%" PRIu64 ")",
				 sn, s->peak_bytes, top);
			prop(top == s->peak_bytes, f, what);
			snprintf(what, sizeof(what), "%s: time %.6f ms < compute %.6f + recompute %.6f ms",
				 sn, s->time_ms, s->compute_ms, s->recompute_ms);
			prop(s->time_ms + 1e-9 * (1 + s->time_ms) >= s->compute_ms + s->recompute_ms, f, what);
			snprintf(what, sizeof(what), "%s: time %.6f ms < the sum of op times %.6f ms",
				 sn, s->time_ms, op_ms);
			prop(s->time_ms + 1e-9 * (1 + op_ms) >= op_ms, f, what);
			snprintf(what, sizeof(what), "%s: %u steps, not one per op (%u)", sn, s->n_steps, net->n_ops);
			prop(s->n_steps == net->n_ops, f, what);
		}
		snprintf(what, sizeof(what), "baseline %" PRIu64 " < liveness %" PRIu64,
			 peak[MP_STRAT_BASELINE], peak[MP_STRAT_LIVENESS]);
		prop(peak[MP_STRAT_BASELINE] >= peak[MP_STRAT_LIVENESS], f, what);
		snprintf(what, sizeof(what), "liveness %" PRIu64 " < offload %" PRIu64,
			 peak[MP_STRAT_LIVENESS], peak[MP_STRAT_OFFLOAD]);
		prop(peak[MP_STRAT_LIVENESS] >= peak[MP_STRAT_OFFLOAD], f, what);
		snprintf(what, sizeof(what), "offload %" PRIu64 " < recompute %" PRIu64,
			 peak[MP_STRAT_OFFLOAD], peak[MP_STRAT_RECOMPUTE]);
		prop(peak[MP_STRAT_OFFLOAD] >= peak[MP_STRAT_RECOMPUTE], f, what);
		snprintf(what, sizeof(what), "recompute %" PRIu64 " < l_peak %" PRIu64,
			 peak[MP_STRAT_RECOMPUTE], A.lmin.bytes);
		prop(peak[MP_STRAT_RECOMPUTE] >= A.lmin.bytes, f, what);
		analysis_release(&A);
		net_free(net);
	}
	for (int i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return files;
}

static void test_properties(void)
{
	/* tiny, chain, diamond, residual, inplace-relu, workspace, alexnet */
	CHECK(test_properties_in("examples") >= 7);
	/* nets that once broke a property (the fuzzer's among them) */
	CHECK(test_properties_in("tests/data") >= 2);
}

int main(void)
{
	test_chain();
	test_diamond();
	test_residual();
	test_inplace();
	test_workspace();
	test_route_diamond();
	test_route_cycle();
	test_properties();
	return unit_report("test_policies");
}
