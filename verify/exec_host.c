/*
 * Host backend of memplan verify (DESIGN.md "Verify"): a plan's Schedule run
 * for real on the host, with device memory played by a host arena, the two
 * copy engines by two threads, and compute by timed waits.  The executor and
 * its swap executor follow TENSILE III-D: compute runs the actions in order,
 * hands swaps to the copy threads, blocks on a swap-in only where the
 * schedule waits, and at the end of an iteration waits for every copy.  The
 * pool allocator is SuperNeurons 3.2.1's (pool.c).
 *
 * What is checked: every tensor an op reads is resident and holds exactly the
 * bytes it was produced with.  A compute writes each output with a pattern
 * seeded by (tensor, op) and keeps its hash; every read, every swap-out and
 * swap-in and every recompute hashes the bytes again and compares.  Freed,
 * swapped-out, unwritten or still-copying tensors are refused by state, an
 * allocation beyond the arena by bounds, and a tensor overwritten through an
 * overlapping offset by its hash (naming the overlapping allocation).
 *
 * Ordering, as sim_run models it: a copy starts after the compute issued
 * before it (and after its engine's previous copy); a swap-in starts after its
 * tensor's swap-out ended; a wait blocks compute until its swap-in ended.
 * Because the arena's offsets were assigned on simulated lifetimes, the
 * executor also orders reuse of memory the way a device would with events: a
 * swap-in does not write bytes that an allocation still holds (it waits for
 * their free or swap-out), and an allocation does not take bytes a swap-out is
 * still reading.  A plan whose reuse cannot be ordered (compute would wait for
 * a swap-in that waits for compute) is a violation, not a hang.
 *
 * Time: each engine keeps a timeline in model milliseconds anchored to the
 * real clock (real = start + model x time_scale).  An action starts on its
 * timeline when its engine and its dependencies are done, and lasts its
 * modelled time, or its real work (hashing, filling, copying) if that took
 * longer: an overrun; the thread then sleeps until the end.  A thread that
 * wakes late (timer overshoot, preemption, hand-off) catches up on the
 * following actions' sleeps instead of delaying them, so host jitter does not
 * add up over thousands of actions, while work slower than the model shows.
 * Without overruns the timelines are sim_run's, operation for operation.  The
 * iteration's wall time is measured on the real clock.  Memory events are
 * ordered on the timelines (as sim_run orders them) for the live peak.
 *
 * Cost per iteration: O(actions log actions) bookkeeping, O(bytes read and
 * written) hashing, O(live allocations) per swap-in and per allocation.
 */
#include "exec.h"
#include "pool.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* ---- hashing and patterns ---- */

#define FNV_OFFSET UINT64_C(0xcbf29ce484222325)
#define FNV_PRIME UINT64_C(0x100000001b3)

static uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/*
 * One pass over n bytes that hashes them, and optionally copies them from src
 * to dst or fills dst with a pattern (xorshift64*, four streams) as it goes:
 * FNV-1a over 64-bit words in four lanes (independent multiply chains, about
 * twice the speed of one), the tail into lane 0, a final mix with the length.
 * The three uses share this code so that they cannot disagree.
 */
enum { PASS_HASH, PASS_COPY, PASS_FILL };

static inline uint64_t xs_next(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * UINT64_C(0x2545f4914f6cdd1d);
}

static inline __attribute__((always_inline)) uint64_t
pass(uint8_t *dst, const uint8_t *src, uint64_t n, uint64_t seed, int mode)
{
	uint64_t l[4] = { FNV_OFFSET, FNV_OFFSET ^ 1, FNV_OFFSET ^ 2, FNV_OFFSET ^ 3 }, x[4], w[4], len = n, h;

	for (int k = 0; k < 4; k++)
		x[k] = mix64(seed + (uint64_t)k * UINT64_C(0x9e3779b97f4a7c15)) | 1;
	for (; n >= 32; n -= 32) {
		if (mode == PASS_FILL) {
			for (int k = 0; k < 4; k++)
				w[k] = xs_next(&x[k]);
		} else {
			memcpy(w, src, 32);
			src += 32;
		}
		if (mode != PASS_HASH) {
			memcpy(dst, w, 32);
			dst += 32;
		}
		for (int k = 0; k < 4; k++)
			l[k] = (l[k] ^ w[k]) * FNV_PRIME;
	}
	for (; n >= 8; n -= 8) {
		if (mode == PASS_FILL) {
			w[0] = xs_next(&x[0]);
		} else {
			memcpy(w, src, 8);
			src += 8;
		}
		if (mode != PASS_HASH) {
			memcpy(dst, w, 8);
			dst += 8;
		}
		l[0] = (l[0] ^ w[0]) * FNV_PRIME;
	}
	if (n) {
		uint8_t t[8];

		if (mode == PASS_FILL) {
			w[0] = xs_next(&x[0]);
			memcpy(t, w, 8);
		} else {
			memcpy(t, src, n);
		}
		if (mode != PASS_HASH)
			memcpy(dst, t, n);
		for (uint64_t k = 0; k < n; k++)
			l[0] = (l[0] ^ t[k]) * FNV_PRIME;
	}
	h = l[0];
	for (int k = 1; k < 4; k++)
		h = (h ^ mix64(l[k])) * FNV_PRIME;
	return mix64(h ^ len);
}

uint64_t exec_hash(const void *p, uint64_t n)
{
	return pass(NULL, p, n, 0, PASS_HASH);
}

/* Copy n bytes and return exec_hash of them. */
static uint64_t copy_hash(uint8_t *dst, const uint8_t *src, uint64_t n)
{
	return pass(dst, src, n, 0, PASS_COPY);
}

/* Fill n bytes at p with the pattern of seed; returns exec_hash of them. */
static uint64_t fill_pattern(uint8_t *p, uint64_t n, uint64_t seed)
{
	return pass(p, NULL, n, seed, PASS_FILL);
}

/* The pattern of tensor t as op wrote it (op -1: initial contents). */
static uint64_t pattern_seed(int32_t t, int32_t op)
{
	return ((uint64_t)(uint32_t)t << 32) ^ (uint32_t)op ^ UINT64_C(0x9e3779b97f4a7c15);
}

/* ---- clocks ---- */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Sleep to within SPIN_NS of t, then yield until t: clock_nanosleep alone
 * overshoots by 50-100 us on a loaded host. */
#define SPIN_NS 100000

static void sleep_until(int64_t t)
{
	int64_t left = t - now_ns();

	if (left > 2 * SPIN_NS) {
		int64_t u = t - SPIN_NS;
		struct timespec ts = { (time_t)(u / 1000000000), (long)(u % 1000000000) };

		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
			;
	}
	while (now_ns() < t)
		sched_yield();
}

/* ---- executor state ---- */

enum { LS_ABSENT, LS_ALLOC, LS_RES, LS_OUT, LS_IN };

/* A version of a tensor's bytes: its hash and the op that wrote it. */
struct ver {
	uint64_t sum;
	int32_t writer;            /* op; -1: initial contents */
	bool valid;                /* false: nothing written */
};

struct tens {
	/* the compute thread's, in program order */
	uint8_t ls;
	int32_t cur;               /* allocating action holding its device bytes, -1 */
	int32_t at_alloc, at_free, at_out, at_in;  /* latest such action, -1 */
	struct ver expect;         /* what its last compute wrote */
	bool carry;                /* persistent and resident at the end of the last iteration */
	uint64_t carry_off, carry_bytes;
	/* shared, under mu */
	uint8_t *host;             /* [bytes] host buffer of a swapped tensor, owned */
	struct ver host_ver;       /* what the host buffer holds */
};

/* One copy handed to an engine. */
struct job {
	uint32_t act;
	int32_t tensor;
	int32_t alloc;             /* swap_out: the allocation it releases; swap_in: its own */
	int32_t after;             /* swap_in: its tensor's swap-out, -1 */
	uint64_t off, bytes, held;
	double issue_t;            /* compute timeline when issued */
	struct ver want;           /* what the bytes must hash to */
	uint32_t dep_at, n_dep;    /* swap_in: allocations it must see released */
};

struct exec;

struct engine {
	pthread_t th;
	bool started, to_device;
	struct job *q;             /* [n], FIFO from head; owned */
	uint32_t n, head, cap;
	bool busy;
	double tend;               /* its timeline: end of its last copy */
	struct exec *X;
};

/* A memory event or a compute-end marker on the timelines (sim_run's). */
struct mev {
	double t;
	uint32_t seq;              /* action * 2 + sub */
	int64_t delta;
	int32_t step;              /* compute end: its step; else -1 */
};

struct exec {
	const struct mp_net *net;
	const struct mp_plan *p;
	const struct mp_schedule *s;
	const struct mp_device *dev;
	struct mp_exec_opts o;
	double ns_per_ms;          /* real ns per model ms */
	uint8_t *mem;              /* [mem_bytes] the device arena, owned */
	uint64_t mem_bytes;
	bool use_pool;
	struct mp_pool pool;
	struct tens *t;            /* [n_tensors], owned */
	int32_t *step_of;          /* [n_act] step of a compute action, else -1 */
	uint32_t *in_at, *out_at;  /* [n_ops] first record of each op's inputs, outputs */
	struct ver *in_ver, *out_ver; /* what each op read and wrote at its compute */
	uint8_t *computed;         /* [n_ops] */

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct engine eng[2];      /* 0: host to device, 1: device to host */
	bool stop, abort;
	bool failed;
	uint32_t fail_at;
	struct mp_error err;
	int64_t r0;                /* real ns of the iteration's start */
	double tc;                 /* compute timeline */

	/* per iteration, indexed by action */
	double *vs, *ve, *stall;   /* timelines */
	uint8_t *done;             /* copies finished */
	uint8_t *released;         /* allocations whose bytes are free again */
	uint8_t *out_pending;      /* allocations a queued swap-out will release */
	double *rel_t;             /* when they were released */
	uint64_t *place_off, *place_bytes;
	uint32_t *live_pos;        /* index in live[], UINT32_MAX if not live */
	uint32_t *live;            /* allocations holding device bytes */
	uint32_t n_live;
	uint32_t *dep;             /* swap-in dependencies (allocation indices) */
	uint32_t n_dep, cap_dep;
	struct mev *log;
	uint32_t n_log, cap_log;
	/* per iteration, totals */
	double stall_ms, alloc_wait_ms, overrun_ms, busy_ms[2];
	uint32_t overruns;
	double need_scale;         /* the largest real work / modelled time of an action */
	uint64_t swaps, hashed;    /* copy threads', under mu */
	uint64_t reads, recomputes, hashed_c; /* the compute thread's */
	uint64_t arena_high;
	uint32_t lag_from;         /* first d2h job that may end after the compute timeline */
};

static const char *act_label(const struct exec *X, uint32_t i, char *buf, size_t n)
{
	const struct mp_action *a = &X->s->a[i];

	if (a->op >= 0)
		snprintf(buf, n, "schedule[%u] %s '%s'", i, mp_act_name(a->kind), X->net->ops[a->op].name);
	else
		snprintf(buf, n, "schedule[%u] %s '%s'", i, mp_act_name(a->kind), X->net->tensors[a->tensor].name);
	return buf;
}

/* Record the first violation (mu held): "schedule[i] kind 'name': detail". */
static void fail_locked(struct exec *X, uint32_t i, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void fail_locked(struct exec *X, uint32_t i, const char *fmt, ...)
{
	char lab[320], detail[800];
	va_list ap;

	if (X->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	mp_error_set(&X->err, "%s: %s", act_label(X, i, lab, sizeof(lab)), detail);
	X->failed = true;
	X->fail_at = i;
	X->abort = true;
	pthread_cond_broadcast(&X->cv);
}

static const char *tname(const struct exec *X, int32_t t)
{
	return X->net->tensors[t].name;
}

/* "what 'conv.fwd' wrote" / "its initial contents" */
static const char *ver_what(const struct exec *X, const struct ver *v, char *buf, size_t n)
{
	if (v->writer < 0)
		snprintf(buf, n, "its initial contents");
	else
		snprintf(buf, n, "what '%s' wrote", X->net->ops[v->writer].name);
	return buf;
}

static int64_t real_at(const struct exec *X, double t_ms)
{
	return X->r0 + (int64_t)llround(t_ms * X->ns_per_ms);
}

/* mu held */
static void log_ev(struct exec *X, double t, uint32_t seq, int64_t delta, int32_t step)
{
	mp_grow((void **)&X->log, &X->cap_log, X->n_log + 1, sizeof(*X->log));
	X->log[X->n_log++] = (struct mev){ t, seq, delta, step };
}

/* mu held */
static void live_add(struct exec *X, uint32_t k)
{
	X->live_pos[k] = X->n_live;
	X->live[X->n_live++] = k;
}

/* mu held */
static void live_remove(struct exec *X, uint32_t k)
{
	uint32_t pos = X->live_pos[k], last = X->live[--X->n_live];

	MP_ASSERT(pos != UINT32_MAX);
	X->live[pos] = last;
	X->live_pos[last] = pos;
	X->live_pos[k] = UINT32_MAX;
}

static bool overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return an && bn && a < b + bn && b < a + an;
}

/* Release allocation k at model time t (mu held). */
static void release_locked(struct exec *X, uint32_t k, double t, uint32_t by)
{
	X->released[k] = 1;
	X->rel_t[k] = t;
	live_remove(X, k);
	if (X->use_pool)
		pool_free(&X->pool, X->place_off[k], X->place_bytes[k]);
	log_ev(X, t, 2 * by, -(int64_t)X->place_bytes[k], -1);
	pthread_cond_broadcast(&X->cv);
}

/* Add "; 'y' (schedule[k]) at [a, b) overlaps it" for the allocations that
 * overlap [off, off + n) other than self (mu held). */
static void culprit_locked(const struct exec *X, uint64_t off, uint64_t n, int32_t self, char *buf, size_t size)
{
	size_t used = 0;

	buf[0] = 0;
	if (X->use_pool)
		return;
	for (uint32_t q = 0; q < X->n_live && used + 1 < size; q++) {
		uint32_t k = X->live[q];

		if ((int32_t)k == self || !overlaps(X->place_off[k], X->place_bytes[k], off, n))
			continue;
		used += (size_t)snprintf(buf + used, size - used, "; '%s' (schedule[%u]) at [%llu, %llu) overlaps it",
					  tname(X, X->s->a[k].tensor), k, (unsigned long long)X->place_off[k],
					  (unsigned long long)(X->place_off[k] + X->place_bytes[k]));
		if (used >= size)
			break;
	}
}

/* ---- copy engines ---- */

static void *engine_main(void *arg)
{
	struct engine *E = arg;
	struct exec *X = E->X;
	const int dir = E->to_device ? 0 : 1;

	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&X->mu);
	for (;;) {
		struct job j;
		double S, dur, end;
		int64_t work_start, work_end;
		uint64_t h;
		char w1[200], w2[200];

		while (E->head == E->n && !X->stop)
			pthread_cond_wait(&X->cv, &X->mu);
		if (E->head == E->n)
			break;
		j = E->q[E->head];
		E->busy = true;
		S = fmax(E->tend, j.issue_t);
		if (E->to_device) {
			/* the bytes it writes must be free: wait for their free or
			 * swap-out (its own swap-out among them) */
			for (;;) {
				bool ready = true;

				for (uint32_t d = 0; d < j.n_dep; d++)
					if (!X->released[X->dep[j.dep_at + d]])
						ready = false;
				if (ready || X->abort)
					break;
				pthread_cond_wait(&X->cv, &X->mu);
			}
			for (uint32_t d = 0; d < j.n_dep && !X->abort; d++)
				S = fmax(S, X->rel_t[X->dep[j.dep_at + d]]);
			if (j.after >= 0 && X->done[j.after])
				S = fmax(S, X->ve[j.after]);
		}
		if (X->abort) {
			X->done[j.act] = 1;
			E->head++;
			E->busy = false;
			pthread_cond_broadcast(&X->cv);
			continue;
		}
		if (E->to_device)
			log_ev(X, S, 2 * j.act, (int64_t)j.held, -1);
		dur = device_copy_ms(X->dev, j.bytes, E->to_device);
		pthread_mutex_unlock(&X->mu);
		work_start = now_ns();

		if (E->to_device)
			h = copy_hash(X->mem + j.off, X->t[j.tensor].host, j.bytes);
		else
			h = copy_hash(X->t[j.tensor].host, X->mem + j.off, j.bytes);
		work_end = now_ns();
		end = S + fmax(dur, (double)(work_end - work_start) / X->ns_per_ms);
		sleep_until(real_at(X, end));

		pthread_mutex_lock(&X->mu);
		if (end > S + dur) {
			X->overruns++;
			X->overrun_ms += (end - S - dur) * X->o.time_scale;
		}
		if (dur > 0)
			X->need_scale = fmax(X->need_scale, (double)(work_end - work_start) / 1e6 / dur);
		X->hashed += j.bytes;
		X->swaps++;
		if (j.want.valid && h != j.want.sum) {
			if (E->to_device)
				fail_locked(X, j.act, "the copy does not hold %s (checksum %016llx, expected %016llx)",
					    ver_what(X, &j.want, w1, sizeof(w1)), (unsigned long long)h,
					    (unsigned long long)j.want.sum);
			else
				fail_locked(X, j.act, "'%s' does not hold %s (checksum %016llx, expected %016llx)",
					    tname(X, j.tensor), ver_what(X, &j.want, w2, sizeof(w2)),
					    (unsigned long long)h, (unsigned long long)j.want.sum);
		}
		if (!E->to_device) {
			X->t[j.tensor].host_ver = (struct ver){ h, j.want.writer, j.want.valid };
			release_locked(X, (uint32_t)j.alloc, end, j.act);
		}
		X->vs[j.act] = S;
		X->ve[j.act] = end;
		X->busy_ms[dir] += (end - S) * X->o.time_scale;
		X->done[j.act] = 1;
		E->tend = end;
		E->head++;
		E->busy = false;
		pthread_cond_broadcast(&X->cv);
	}
	pthread_mutex_unlock(&X->mu);
	return NULL;
}

/* mu held */
static void enqueue(struct exec *X, struct engine *E, const struct job *j)
{
	mp_grow((void **)&E->q, &E->cap, E->n + 1, sizeof(*E->q));
	E->q[E->n++] = *j;
	pthread_cond_broadcast(&X->cv);
}

/*
 * Would compute wait forever?  A queued swap-in must see released every
 * allocation holding bytes it writes; one that no queued swap-out releases
 * waits for a later compute-side free.  If compute now blocks on that
 * swap-in (a wait at action `at` for the swap-in `upto`, or the end of the
 * iteration when upto is UINT32_MAX), the free never comes.  Records the
 * violation and returns true.  mu held.
 */
static bool would_deadlock(struct exec *X, uint32_t at, uint32_t upto)
{
	struct engine *E = &X->eng[0];

	for (uint32_t q = E->head; q < E->n; q++) {
		const struct job *j = &E->q[q];

		for (uint32_t d = 0; d < j->n_dep; d++) {
			uint32_t k = X->dep[j->dep_at + d];

			if (X->released[k] || X->out_pending[k])
				continue;
			if (upto == UINT32_MAX)
				fail_locked(X, j->act, "copies into [%llu, %llu), which '%s' (schedule[%u]) still holds "
					    "at the end of the iteration",
					    (unsigned long long)j->off, (unsigned long long)(j->off + j->held),
					    tname(X, X->s->a[k].tensor), k);
			else
				fail_locked(X, at, "its swap-in (schedule[%u]) copies '%s' into [%llu, %llu), which "
					    "'%s' (schedule[%u]) still holds, and compute would free it only after this wait",
					    j->act, tname(X, j->tensor), (unsigned long long)j->off,
					    (unsigned long long)(j->off + j->held), tname(X, X->s->a[k].tensor), k);
			return true;
		}
		if (j->act == upto)
			break;
	}
	return false;
}

/* ---- compute-side actions ---- */

/* Take bytes for allocation i at its plan offset or from the pool; with the
 * pool, wait for swap-outs in flight to give memory back when none is free.
 * mu held.  0, or -1 after a violation. */
static int place(struct exec *X, uint32_t i, uint64_t bytes)
{
	uint64_t off = 0, end;
	char why[200];

	if (X->use_pool) {
		struct engine *D = &X->eng[1];
		double t0 = X->tc;

		while ((off = pool_alloc(&X->pool, bytes)) == UINT64_MAX) {
			uint32_t act;

			if (X->abort)
				return -1;
			if (D->head == D->n) {
				fail_locked(X, i, "%s", pool_refusal(&X->pool, bytes, why, sizeof(why)));
				return -1;
			}
			act = D->q[D->head].act;
			while (!X->done[act] && !X->abort)
				pthread_cond_wait(&X->cv, &X->mu);
			X->tc = fmax(X->tc, X->ve[act]);
		}
		X->alloc_wait_ms += (X->tc - t0) * X->o.time_scale;
	} else {
		off = X->p->offset ? X->p->offset[i] : UINT64_MAX;
		if (off == UINT64_MAX) {
			fail_locked(X, i, "has no offset in the arena");
			return -1;
		}
		if (mp_add_u64(off, bytes, &end) < 0 || end > X->mem_bytes) {
			fail_locked(X, i, "[%llu, %llu) lies beyond the arena (%llu bytes)", (unsigned long long)off, (unsigned long long)(off + bytes),
				    (unsigned long long)X->mem_bytes);
			return -1;
		}
		if (end > X->arena_high)
			X->arena_high = end;
	}
	X->place_off[i] = off;
	X->place_bytes[i] = bytes;
	X->released[i] = 0;
	live_add(X, i);
	return 0;
}

/* Arena: bytes a swap-out is still reading are not free yet.  Wait for the
 * swap-outs overlapping [off, off + n) and start no earlier than they end on
 * their timeline.  d2h copies end in queue order, so those ending after the
 * compute timeline are a suffix of the queue.  mu held. */
static void wait_swap_outs(struct exec *X, uint64_t off, uint64_t n)
{
	struct engine *D = &X->eng[1];
	double t0 = X->tc;

	for (;;) {
		bool busy = false;

		while (X->lag_from < D->n && X->done[D->q[X->lag_from].act] && X->ve[D->q[X->lag_from].act] <= X->tc)
			X->lag_from++;
		for (uint32_t q = X->lag_from; q < D->n; q++) {
			const struct job *j = &D->q[q];

			if (!overlaps(j->off, j->held, off, n))
				continue;
			if (!X->done[j->act])
				busy = true;
			else if (X->ve[j->act] > X->tc)
				X->tc = X->ve[j->act];
		}
		if (!busy || X->abort)
			break;
		pthread_cond_wait(&X->cv, &X->mu);
	}
	X->alloc_wait_ms += (X->tc - t0) * X->o.time_scale;
}

/* alloc: compute-side, at the compute timeline.  mu held. */
static int do_alloc(struct exec *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	int32_t t = a->tensor;
	const struct mp_tensor *tt = &X->net->tensors[t];
	struct tens *T = &X->t[t];

	if (T->ls != LS_ABSENT) {
		fail_locked(X, i, T->ls == LS_OUT ? "already allocated, and on the host (swap it in)" : "already allocated");
		return -1;
	}
	if (a->bytes < tt->bytes && tt->kind != MP_TK_WORKSPACE) {
		fail_locked(X, i, "reserves %llu bytes for a tensor of %llu", (unsigned long long)a->bytes,
			    (unsigned long long)tt->bytes);
		return -1;
	}
	if (place(X, i, a->bytes) < 0)
		return -1;
	if (!X->use_pool)
		wait_swap_outs(X, X->place_off[i], a->bytes);
	if (X->abort)
		return -1;
	log_ev(X, X->tc, 2 * i, (int64_t)a->bytes, -1);
	T->ls = LS_ALLOC;
	T->cur = (int32_t)i;
	T->at_alloc = (int32_t)i;
	X->vs[i] = X->ve[i] = X->tc;
	if (sched_persistent(tt)) {
		/* resident from the start: weights stay on the device between
		 * iterations, so a persistent tensor found where the last
		 * iteration left it keeps its bytes; else it gets its initial ones */
		if (!(T->carry && T->carry_off == X->place_off[i] && T->carry_bytes == a->bytes && T->expect.valid)) {
			uint64_t h = fill_pattern(X->mem + X->place_off[i], tt->bytes, pattern_seed(t, -1));

			T->expect = (struct ver){ h, -1, true };
			X->hashed_c += tt->bytes;
		}
		T->ls = LS_RES;
	}
	T->carry = false;
	return 0;
}

static int do_free(struct exec *X, uint32_t i)
{
	struct tens *T = &X->t[X->s->a[i].tensor];

	switch (T->ls) {
	case LS_ALLOC:
	case LS_RES:
		break;
	case LS_IN:
		fail_locked(X, i, "not resident (its swap-in at schedule[%d] was never waited for)", T->at_in);
		return -1;
	case LS_OUT:
		fail_locked(X, i, "not resident (swapped out at schedule[%d])", T->at_out);
		return -1;
	default:
		if (T->at_free >= 0)
			fail_locked(X, i, "not resident (already freed at schedule[%d])", T->at_free);
		else
			fail_locked(X, i, "not resident (never allocated)");
		return -1;
	}
	release_locked(X, (uint32_t)T->cur, X->tc, i);
	T->ls = LS_ABSENT;
	T->cur = -1;
	T->at_free = (int32_t)i;
	X->vs[i] = X->ve[i] = X->tc;
	return 0;
}

static int do_swap_out(struct exec *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	int32_t t = a->tensor;
	struct tens *T = &X->t[t];
	struct job j;

	if (T->ls != LS_ALLOC && T->ls != LS_RES) {
		fail_locked(X, i, "not resident%s", T->ls == LS_IN ? " (its swap-in was never waited for)" :
			    T->ls == LS_OUT ? " (already swapped out)" : "");
		return -1;
	}
	memset(&j, 0, sizeof(j));
	j.act = i;
	j.tensor = t;
	j.alloc = T->cur;
	j.off = X->place_off[T->cur];
	j.held = X->place_bytes[T->cur];
	j.bytes = X->net->tensors[t].bytes < j.held ? X->net->tensors[t].bytes : j.held;
	j.issue_t = X->tc;
	j.want = T->ls == LS_RES ? T->expect : (struct ver){ 0, -1, false };
	X->out_pending[T->cur] = 1;
	enqueue(X, &X->eng[1], &j);
	T->ls = LS_OUT;
	T->at_out = (int32_t)i;
	T->cur = -1;
	return 0;
}

static int do_swap_in(struct exec *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	int32_t t = a->tensor;
	struct tens *T = &X->t[t];
	uint64_t bytes = X->net->tensors[t].bytes;
	struct job j;

	memset(&j, 0, sizeof(j));
	if (T->ls == LS_OUT) {
		j.want = T->expect;
	} else if (T->ls == LS_ABSENT && T->at_out < 0 && T->at_free < 0 && T->host && T->host_ver.valid &&
		   sched_persistent(&X->net->tensors[t])) {
		/* TENSILE: a parameter or optimizer state that starts the
		 * iteration on the host */
		T->expect = T->host_ver;
		j.want = T->host_ver;
	} else if (T->ls == LS_ABSENT) {
		if (T->at_free >= 0)
			fail_locked(X, i, "was never swapped out (freed at schedule[%d])", T->at_free);
		else
			fail_locked(X, i, "was never swapped out");
		return -1;
	} else {
		fail_locked(X, i, "is already on the device");
		return -1;
	}
	j.act = i;
	j.tensor = t;
	j.alloc = (int32_t)i;
	j.after = T->at_out;
	j.bytes = j.held = bytes;
	j.dep_at = X->n_dep;
	/* it waits for its own swap-out (the host copy) and, in the arena, for
	 * the allocations holding the bytes it writes, queued swap-ins included,
	 * to be released ... */
	if (place(X, i, bytes) < 0)
		return -1;
	j.off = X->place_off[i];
	for (uint32_t q = 0; q < X->n_live; q++) {
		uint32_t k = X->live[q];

		if (k == i)
			continue;
		if ((X->out_pending[k] && X->s->a[k].tensor == t) ||
		    (!X->use_pool && overlaps(X->place_off[k], X->place_bytes[k], j.off, bytes))) {
			mp_grow((void **)&X->dep, &X->cap_dep, X->n_dep + 1, sizeof(*X->dep));
			X->dep[X->n_dep++] = k;
		}
	}
	/* ... and for those compute allocates after this issue and the plan's
	 * simulation placed (and ended) in these bytes before the copy starts:
	 * a copy waiting for its engine starts late, and the arena reuses the
	 * bytes meanwhile.  Compute-side actions are in time order. */
	for (uint32_t k = i + 1; !X->use_pool && X->p->offset && k < X->s->n; k++) {
		const struct mp_action *b = &X->s->a[k];

		if (b->kind == MP_ACT_SWAP_IN || b->kind == MP_ACT_SWAP_OUT)
			continue;
		if (b->start_ms >= a->start_ms)
			break;
		if (b->kind == MP_ACT_ALLOC && X->p->offset[k] != UINT64_MAX &&
		    overlaps(X->p->offset[k], b->bytes, j.off, bytes)) {
			mp_grow((void **)&X->dep, &X->cap_dep, X->n_dep + 1, sizeof(*X->dep));
			X->dep[X->n_dep++] = k;
		}
	}
	j.n_dep = X->n_dep - j.dep_at;
	j.issue_t = X->tc;
	enqueue(X, &X->eng[0], &j);
	T->ls = LS_IN;
	T->cur = (int32_t)i;
	T->at_in = (int32_t)i;
	return 0;
}

static int do_wait(struct exec *X, uint32_t i)
{
	struct tens *T = &X->t[X->s->a[i].tensor];
	double t0 = X->tc;
	uint32_t copy;

	if (T->ls == LS_RES || T->ls == LS_ALLOC) {
		X->vs[i] = X->ve[i] = X->tc;
		log_ev(X, X->tc, 2 * i, 0, -1);
		return 0;
	}
	/* a swapped-out tensor: for its swap-out's copy, whose end frees the
	 * memory; else for its swap-in's */
	if (T->ls == LS_OUT && T->at_out >= 0) {
		copy = (uint32_t)T->at_out;
	} else if (T->ls == LS_IN) {
		copy = (uint32_t)T->at_in;
		if (!X->done[copy] && would_deadlock(X, i, copy))
			return -1;
	} else {
		fail_locked(X, i, "nothing to wait for");
		return -1;
	}
	while (!X->done[copy] && !X->abort)
		pthread_cond_wait(&X->cv, &X->mu);
	if (X->abort)
		return -1;
	X->tc = fmax(X->tc, X->ve[copy]);
	X->stall[i] = (X->tc - t0) * X->o.time_scale;
	X->stall_ms += X->stall[i];
	if (T->ls == LS_IN)
		T->ls = T->expect.valid ? LS_RES : LS_ALLOC;
	X->vs[i] = X->ve[i] = X->tc;
	log_ev(X, X->tc, 2 * i, 0, -1);
	return 0;
}

/* Is x readable by action i?  mu held. */
static int check_readable(struct exec *X, uint32_t i, int32_t x)
{
	const struct tens *T = &X->t[x];

	switch (T->ls) {
	case LS_RES:
		return 0;
	case LS_ALLOC:
		fail_locked(X, i, "reads '%s', which nothing has written since its allocation at schedule[%d]",
			    tname(X, x), T->at_alloc);
		return -1;
	case LS_IN:
		fail_locked(X, i, "reads '%s' while its swap-in (schedule[%d]) may still be copying: no wait before the read",
			    tname(X, x), T->at_in);
		return -1;
	case LS_OUT:
		fail_locked(X, i, "reads '%s', which was swapped out at schedule[%d] and not swapped back in",
			    tname(X, x), T->at_out);
		return -1;
	default:
		if (T->at_free >= 0)
			fail_locked(X, i, "reads '%s', which was freed at schedule[%d]", tname(X, x), T->at_free);
		else
			fail_locked(X, i, "reads '%s', which is not allocated", tname(X, x));
		return -1;
	}
}

/* compute or recompute.  Entered and left with mu held. */
static int do_compute(struct exec *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	const int32_t o = a->op;
	const struct mp_op *op = &X->net->ops[o];
	const bool re = a->kind == MP_ACT_RECOMPUTE;
	const bool first = !X->computed[o];
	double ms, start, end;
	uint64_t ws = 0, wsoff = 0;
	int64_t work_start, work_end;
	struct ver *inv = &X->in_ver[X->in_at[o]], *outv = &X->out_ver[X->out_at[o]];
	char w1[200], extra[600];

	if (!re && !first) {
		fail_locked(X, i, "op computed twice (use recompute)");
		return -1;
	}
	if (re && !op->recomputable) {
		fail_locked(X, i, "op cannot be recomputed");
		return -1;
	}
	for (uint32_t k = 0; k < op->n_in; k++)
		if (check_readable(X, i, op->in[k]) < 0)
			return -1;
	for (uint32_t k = 0; k < op->n_out; k++) {
		uint8_t ls = X->t[op->out[k]].ls;

		if (ls != LS_ALLOC && ls != LS_RES) {
			fail_locked(X, i, "writes '%s', which is not %s", tname(X, op->out[k]),
				    ls == LS_IN ? "resident yet (no wait for its swap-in)" : "allocated");
			return -1;
		}
	}
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		int32_t x = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

		if (X->place_bytes[X->t[x].cur] < X->net->tensors[x].bytes) {
			fail_locked(X, i, "'%s' has %llu bytes allocated, less than its %llu", tname(X, x),
				    (unsigned long long)X->place_bytes[X->t[x].cur],
				    (unsigned long long)X->net->tensors[x].bytes);
			return -1;
		}
	}
	sched_action_cost(X->net, X->s, a, &ms, &ws);
	if (ws > 0) {
		const struct tens *W = op->ws >= 0 ? &X->t[op->ws] : NULL;

		if (!W || (W->ls != LS_ALLOC && W->ls != LS_RES) || X->place_bytes[W->cur] < ws) {
			fail_locked(X, i, "its workspace '%s' is not allocated", op->ws >= 0 ? tname(X, op->ws) : "(none)");
			return -1;
		}
		wsoff = X->place_off[W->cur];
	}
	start = X->tc;
	log_ev(X, start, 2 * i, 0, -1);
	pthread_mutex_unlock(&X->mu);
	work_start = now_ns();

	/* read every input: its bytes must be what the program wrote last (a
	 * recompute: what the op read the first time) */
	for (uint32_t k = 0; k < op->n_in; k++) {
		int32_t x = op->in[k];
		const struct tens *T = &X->t[x];
		struct ver want = re && !first ? inv[k] : T->expect;
		uint64_t off = X->place_off[T->cur], n = X->net->tensors[x].bytes, h;

		if (!re)
			inv[k] = want;
		if (!want.valid)
			continue;
		h = exec_hash(X->mem + off, n);
		X->hashed_c += n;
		X->reads++;
		if (h != want.sum) {
			pthread_mutex_lock(&X->mu);
			culprit_locked(X, off, n, T->cur, extra, sizeof(extra));
			fail_locked(X, i, "'%s' does not hold %s (checksum %016llx, expected %016llx)%s", tname(X, x),
				    ver_what(X, &want, w1, sizeof(w1)), (unsigned long long)h,
				    (unsigned long long)want.sum, extra);
			return -1;
		}
	}
	/* write every output with its pattern; a recompute must rebuild what
	 * the first run wrote.  A gradient another op wrote this iteration is
	 * added to (memplan-net(5)): its bytes are read first, as sim_run
	 * requires them there. */
	for (uint32_t k = 0; k < op->n_out; k++) {
		int32_t x = op->out[k];
		struct tens *T = &X->t[x];
		uint64_t off = X->place_off[T->cur], n = X->net->tensors[x].bytes, h;

		if (!re && X->net->tensors[x].kind == MP_TK_GRADIENT && T->expect.valid && T->expect.writer != o) {
			h = exec_hash(X->mem + off, n);
			X->hashed_c += n;
			X->reads++;
			if (h != T->expect.sum) {
				pthread_mutex_lock(&X->mu);
				culprit_locked(X, off, n, T->cur, extra, sizeof(extra));
				fail_locked(X, i, "adds to '%s', which does not hold %s (checksum %016llx, expected %016llx)%s",
					    tname(X, x), ver_what(X, &T->expect, w1, sizeof(w1)), (unsigned long long)h,
					    (unsigned long long)T->expect.sum, extra);
				return -1;
			}
		}
		h = fill_pattern(X->mem + off, n, pattern_seed(x, o));
		X->hashed_c += n;
		if (re) {
			uint64_t again = exec_hash(X->mem + off, n);

			X->hashed_c += n;
			X->recomputes++;
			if (again != h || (!first && outv[k].valid && outv[k].sum != h)) {
				pthread_mutex_lock(&X->mu);
				culprit_locked(X, off, n, T->cur, extra, sizeof(extra));
				fail_locked(X, i, "rebuilt '%s' does not hold what '%s' wrote (checksum %016llx, expected %016llx)%s",
					    tname(X, x), op->name, (unsigned long long)again,
					    (unsigned long long)(first ? h : outv[k].sum), extra);
				return -1;
			}
		} else {
			T->expect = (struct ver){ h, o, true };
			outv[k] = T->expect;
		}
		T->ls = LS_RES;
	}
	if (ws > 0)
		fill_pattern(X->mem + wsoff, ws, pattern_seed(op->ws, o));
	X->computed[o] = 1;
	work_end = now_ns();
	end = start + fmax(ms, (double)(work_end - work_start) / X->ns_per_ms);
	sleep_until(real_at(X, end));
	pthread_mutex_lock(&X->mu);
	if (ms > 0)
		X->need_scale = fmax(X->need_scale, (double)(work_end - work_start) / 1e6 / ms);
	if (end > start + ms) {
		X->overruns++;
		X->overrun_ms += (end - start - ms) * X->o.time_scale;
	}
	X->tc = end;
	X->vs[i] = start;
	X->ve[i] = end;
	log_ev(X, end, 2 * i + 1, 0, re ? -1 : X->step_of[i]);
	return 0;
}

/* ---- iterations ---- */

static int mev_cmp(const void *pa, const void *pb)
{
	const struct mev *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

struct iter_rec {
	double wall_ms, timeline_ms, stall_ms, alloc_wait_ms, overrun_ms, busy_ms[2], need_scale;
	uint32_t overruns;
	uint64_t peak;
	uint32_t peak_action;
	struct mp_exec_act *act;   /* [n_act] */
	uint64_t *step_bytes;      /* [n_steps] */
};

static void iteration_reset(struct exec *X)
{
	uint32_t n = X->s->n;

	X->n_log = 0;
	X->n_dep = 0;
	X->n_live = 0;
	X->tc = 0;
	X->stall_ms = X->alloc_wait_ms = X->overrun_ms = X->busy_ms[0] = X->busy_ms[1] = 0;
	X->overruns = 0;
	X->need_scale = 0;
	X->reads = X->swaps = X->recomputes = X->hashed = X->hashed_c = 0;
	X->lag_from = 0;
	memset(X->vs, 0, n * sizeof(*X->vs));
	memset(X->ve, 0, n * sizeof(*X->ve));
	memset(X->stall, 0, n * sizeof(*X->stall));
	memset(X->done, 0, n);
	memset(X->released, 0, n);
	memset(X->out_pending, 0, n);
	memset(X->rel_t, 0, n * sizeof(*X->rel_t));
	for (uint32_t i = 0; i < n; i++)
		X->live_pos[i] = UINT32_MAX;
	memset(X->computed, 0, X->net->n_ops);
	for (int e = 0; e < 2; e++) {
		X->eng[e].n = X->eng[e].head = 0;
		X->eng[e].tend = 0;
	}
	for (uint32_t t = 0; t < X->net->n_tensors; t++) {
		struct tens *T = &X->t[t];

		T->ls = LS_ABSENT;
		T->cur = T->at_alloc = T->at_free = T->at_out = T->at_in = -1;
		if (!T->carry)
			T->expect = (struct ver){ 0, -1, false };
	}
	if (X->use_pool)
		pool_reset(&X->pool);
}

static int run_iteration(struct exec *X, struct iter_rec *rec)
{
	const struct mp_schedule *s = X->s;
	int64_t r_end;
	int rc = 0;

	pthread_mutex_lock(&X->mu);
	iteration_reset(X);
	X->r0 = now_ns();
	for (uint32_t i = 0; i < s->n && !X->abort; i++) {
		switch (s->a[i].kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE:
			rc = do_compute(X, i);
			break;
		case MP_ACT_ALLOC:
			rc = do_alloc(X, i);
			break;
		case MP_ACT_FREE:
			rc = do_free(X, i);
			break;
		case MP_ACT_SWAP_OUT:
			rc = do_swap_out(X, i);
			break;
		case MP_ACT_SWAP_IN:
			rc = do_swap_in(X, i);
			break;
		case MP_ACT_WAIT:
			rc = do_wait(X, i);
			break;
		}
		if (rc < 0)
			break;
	}
	/* the end of an iteration waits for every copy (TENSILE III-D) */
	if (!X->abort)
		would_deadlock(X, s->n ? s->n - 1 : 0, UINT32_MAX);
	while (X->eng[0].head < X->eng[0].n || X->eng[1].head < X->eng[1].n || X->eng[0].busy || X->eng[1].busy)
		pthread_cond_wait(&X->cv, &X->mu);
	r_end = now_ns();
	if (X->failed) {
		pthread_mutex_unlock(&X->mu);
		return -1;
	}
	/* persistent tensors resident now keep their bytes into the next one */
	for (uint32_t t = 0; t < X->net->n_tensors; t++) {
		struct tens *T = &X->t[t];

		T->carry = T->ls == LS_RES && T->cur >= 0 && sched_persistent(&X->net->tensors[t]);
		if (T->carry) {
			T->carry_off = X->place_off[T->cur];
			T->carry_bytes = X->place_bytes[T->cur];
		}
	}
	if (rec) {
		int64_t res = 0;
		uint32_t cur = 0, n_steps = X->p->sim.n_steps;
		bool cur_seen = false;

		rec->wall_ms = (double)(r_end - X->r0) / 1e6;
		rec->timeline_ms = X->tc;
		for (int e = 0; e < 2; e++)
			rec->timeline_ms = fmax(rec->timeline_ms, X->eng[e].tend);
		rec->timeline_ms *= X->o.time_scale;
		rec->stall_ms = X->stall_ms;
		rec->alloc_wait_ms = X->alloc_wait_ms;
		rec->overrun_ms = X->overrun_ms;
		rec->overruns = X->overruns;
		rec->need_scale = X->need_scale;
		rec->busy_ms[0] = X->busy_ms[0];
		rec->busy_ms[1] = X->busy_ms[1];
		for (uint32_t i = 0; i < s->n; i++) {
			rec->act[i].start_ms = X->vs[i] * X->o.time_scale;
			rec->act[i].end_ms = X->ve[i] * X->o.time_scale;
			rec->act[i].stall_ms = X->stall[i];
			rec->act[i].resident_bytes = 0;
		}
		/* replay the memory events in timeline order, as sim_run does */
		qsort(X->log, X->n_log, sizeof(*X->log), mev_cmp);
		rec->peak = 0;
		rec->peak_action = 0;
		memset(rec->step_bytes, 0, (n_steps ? n_steps : 1) * sizeof(*rec->step_bytes));
		for (uint32_t k = 0; k < X->n_log; k++) {
			const struct mev *e = &X->log[k];

			res += e->delta;
			MP_ASSERT(res >= 0);
			rec->act[e->seq / 2].resident_bytes = (uint64_t)res;
			if (n_steps && (!cur_seen || (uint64_t)res > rec->step_bytes[cur])) {
				rec->step_bytes[cur] = (uint64_t)res;
				cur_seen = true;
			}
			if ((uint64_t)res > rec->peak) {
				rec->peak = (uint64_t)res;
				rec->peak_action = e->seq / 2;
			}
			if (e->step >= 0 && cur + 1 < n_steps) {
				cur++;
				cur_seen = false;
			}
		}
	}
	pthread_mutex_unlock(&X->mu);
	return 0;
}

/* ---- setup ---- */

const char *mp_exec_alloc_name(enum mp_exec_alloc a)
{
	static const char *const n[] = { "arena", "pool", "async" };

	return a <= MP_EXEC_ASYNC ? n[a] : "?";
}

int mp_exec_alloc_parse(const char *s)
{
	for (int a = MP_EXEC_ARENA; a <= MP_EXEC_ASYNC; a++)
		if (!strcmp(s, mp_exec_alloc_name((enum mp_exec_alloc)a)))
			return a;
	return -1;
}

const char *mp_exec_compute_name(enum mp_exec_compute c)
{
	return c == MP_EXEC_REAL ? "real" : c == MP_EXEC_TIMED ? "timed" : "?";
}

int mp_exec_compute_parse(const char *s)
{
	return !strcmp(s, "real") ? MP_EXEC_REAL : !strcmp(s, "timed") ? MP_EXEC_TIMED : -1;
}

void exec_opts_default(struct mp_exec_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->alloc = MP_EXEC_ARENA;
	o->iters = 5;
	o->warmup = 1;
	o->time_scale = 1.0;
}

void exec_result_release(struct mp_exec_result *r)
{
	free(r->iter_ms);
	free(r->act);
	free(r->step_bytes);
	memset(r, 0, sizeof(*r));
	r->failed_action = UINT32_MAX;
}


static void exec_free(struct exec *X)
{
	if (X->t)
		for (uint32_t t = 0; t < X->net->n_tensors; t++)
			free(X->t[t].host);
	free(X->t);
	if (X->mem)
		munmap(X->mem, X->mem_bytes ? X->mem_bytes : 1);
	pool_release(&X->pool);
	free(X->step_of);
	free(X->in_at);
	free(X->out_at);
	free(X->in_ver);
	free(X->out_ver);
	free(X->computed);
	for (int e = 0; e < 2; e++)
		free(X->eng[e].q);
	free(X->vs);
	free(X->ve);
	free(X->stall);
	free(X->done);
	free(X->released);
	free(X->out_pending);
	free(X->rel_t);
	free(X->place_off);
	free(X->place_bytes);
	free(X->live_pos);
	free(X->live);
	free(X->dep);
	free(X->log);
}

int exec_host_run(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
		  const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err)
{
	const struct mp_schedule *s = &p->sched;
	uint32_t n = s->n, n1 = n ? n : 1, n_steps = p->sim.n_steps;
	struct exec X;
	struct iter_rec *recs = NULL;
	uint64_t host_bytes = 0, total;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	int threads = 0, rc = -1, slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
	uint32_t bad;
	uint8_t *need = NULL;
	char b1[32], b2[32], b3[32], b4[32];

	memset(out, 0, sizeof(*out));
	out->failed_action = UINT32_MAX;
	if (o->alloc == MP_EXEC_ASYNC) {
		mp_error_set(err, "--alloc async is cudaMallocAsync, a CUDA allocator: the host backend has arena and pool");
		return -1;
	}
	if (!(o->time_scale > 0) || !isfinite(o->time_scale) || o->iters < 1) {
		mp_error_set(err, "internal: bad executor options");
		return -1;
	}
	if (exec_check_shape(net, s, &bad, err) < 0) {
		out->failed_action = bad;
		return -1;
	}
	memset(&X, 0, sizeof(X));
	X.net = net;
	X.p = p;
	X.s = s;
	X.dev = &req->device;
	X.o = *o;
	X.ns_per_ms = o->time_scale * 1e6;
	X.use_pool = o->alloc == MP_EXEC_POOL;
	if (X.use_pool) {
		X.mem_bytes = exec_pool_bytes(req, p, o);
		pool_init(&X.pool, X.mem_bytes);
	} else {
		X.mem_bytes = p->arena_bytes;
	}
	/* host buffers for swapped tensors */
	X.t = mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*X.t));
	need = mp_xcalloc(net->n_tensors ? net->n_tensors : 1, 1);
	for (uint32_t i = 0; i < n; i++)
		if ((s->a[i].kind == MP_ACT_SWAP_OUT || s->a[i].kind == MP_ACT_SWAP_IN) && !need[s->a[i].tensor]) {
			need[s->a[i].tensor] = 1;
			host_bytes += net->tensors[s->a[i].tensor].bytes;
		}
	/* what can be touched: the arena, or the pool up to twice the arena */
	total = host_bytes + (X.use_pool && X.mem_bytes / 2 > p->arena_bytes ? 2 * p->arena_bytes : X.mem_bytes);
	if (pages > 0 && page > 0 && total > (uint64_t)pages / 10 * 8 * (uint64_t)page) {
		mp_error_set(err, "the host backend needs %s of host memory (arena %s, swap buffers %s); this host has %s",
			     mp_fmt_bytes(total, b1, sizeof(b1)), mp_fmt_bytes(X.mem_bytes, b2, sizeof(b2)),
			     mp_fmt_bytes(host_bytes, b3, sizeof(b3)),
			     mp_fmt_bytes((uint64_t)pages * (uint64_t)page, b4, sizeof(b4)));
		goto out;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (need[t] && !(X.t[t].host = malloc(net->tensors[t].bytes ? net->tensors[t].bytes : 1))) {
			mp_error_set(err, "cannot allocate host buffers (%s): %s", mp_fmt_bytes(host_bytes, b1, sizeof(b1)),
				     strerror(errno));
			goto out;
		}
	/* pages are committed as they are touched: a pool as large as the
	 * budget costs only its high-water mark */
	X.mem = mmap(NULL, X.mem_bytes ? X.mem_bytes : 1, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (X.mem == MAP_FAILED) {
		X.mem = NULL;
		mp_error_set(err, "cannot map a host arena of %s: %s", mp_fmt_bytes(X.mem_bytes, b1, sizeof(b1)),
			     strerror(errno));
		goto out;
	}
	{
		/* first swap-related action of each tensor: a swap-in means it
		 * starts the iteration on the host with its initial contents */
		uint8_t *seen = mp_xcalloc(net->n_tensors ? net->n_tensors : 1, 1);

		for (uint32_t i = 0; i < n; i++) {
			const struct mp_action *a = &s->a[i];
			int32_t t = a->tensor;

			if (a->kind != MP_ACT_ALLOC && a->kind != MP_ACT_SWAP_IN && a->kind != MP_ACT_SWAP_OUT)
				continue;
			if (!seen[t] && a->kind == MP_ACT_SWAP_IN && sched_persistent(&net->tensors[t])) {
				uint64_t h = fill_pattern(X.t[t].host, net->tensors[t].bytes, pattern_seed(t, -1));

				X.t[t].host_ver = (struct ver){ h, -1, true };
			}
			seen[t] = 1;
		}
		free(seen);
	}
	X.step_of = mp_xmalloc(n1 * sizeof(*X.step_of));
	{
		int32_t step = 0;

		for (uint32_t i = 0; i < n; i++)
			X.step_of[i] = s->a[i].kind == MP_ACT_COMPUTE ? step++ : -1;
	}
	X.in_at = mp_xcalloc(net->n_ops + 1, sizeof(*X.in_at));
	X.out_at = mp_xcalloc(net->n_ops + 1, sizeof(*X.out_at));
	{
		uint32_t ni = 0, no = 0;

		for (uint32_t k = 0; k < net->n_ops; k++) {
			X.in_at[k] = ni;
			X.out_at[k] = no;
			ni += net->ops[k].n_in;
			no += net->ops[k].n_out;
		}
		X.in_ver = mp_xcalloc(ni + 1, sizeof(*X.in_ver));
		X.out_ver = mp_xcalloc(no + 1, sizeof(*X.out_ver));
	}
	X.computed = mp_xcalloc(net->n_ops + 1, 1);
	X.vs = mp_xcalloc(n1, sizeof(*X.vs));
	X.ve = mp_xcalloc(n1, sizeof(*X.ve));
	X.stall = mp_xcalloc(n1, sizeof(*X.stall));
	X.done = mp_xcalloc(n1, 1);
	X.released = mp_xcalloc(n1, 1);
	X.out_pending = mp_xcalloc(n1, 1);
	X.rel_t = mp_xcalloc(n1, sizeof(*X.rel_t));
	X.place_off = mp_xcalloc(n1, sizeof(*X.place_off));
	X.place_bytes = mp_xcalloc(n1, sizeof(*X.place_bytes));
	X.live_pos = mp_xmalloc(n1 * sizeof(*X.live_pos));
	X.live = mp_xmalloc(n1 * sizeof(*X.live));
	recs = mp_xcalloc(o->iters, sizeof(*recs));
	for (uint32_t k = 0; k < o->iters; k++) {
		recs[k].act = mp_xcalloc(n1, sizeof(*recs[k].act));
		recs[k].step_bytes = mp_xcalloc(n_steps ? n_steps : 1, sizeof(*recs[k].step_bytes));
	}

	pthread_mutex_init(&X.mu, NULL);
	pthread_cond_init(&X.cv, NULL);
	for (int e = 0; e < 2; e++) {
		X.eng[e].to_device = e == 0;
		X.eng[e].X = &X;
		if ((errno = pthread_create(&X.eng[e].th, NULL, engine_main, &X.eng[e])) != 0) {
			mp_error_set(err, "cannot start a copy-engine thread: %s", strerror(errno));
			goto stop;
		}
		X.eng[e].started = true;
		threads++;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	for (uint32_t it = 0; it < o->warmup + o->iters; it++) {
		struct iter_rec *rec = it >= o->warmup ? &recs[it - o->warmup] : NULL;

		if (run_iteration(&X, rec) < 0) {
			*err = X.err;
			out->failed_action = X.fail_at;
			goto stop;
		}
		if (it == o->warmup) {
			/* per-iteration counts are the same every iteration */
			out->reads_checked = X.reads;
			out->swaps_checked = X.swaps;
			out->recomputes_checked = X.recomputes;
			out->bytes_hashed = X.hashed + X.hashed_c;
		}
	}
	/* the median iteration */
	{
		double *w = mp_xmalloc(o->iters * sizeof(*w));
		uint32_t med = 0;

		for (uint32_t k = 0; k < o->iters; k++)
			w[k] = recs[k].wall_ms;
		out->time_ms = mp_median(w, o->iters); /* w is sorted now */
		for (uint32_t k = 0; k < o->iters; k++)
			if (recs[k].wall_ms == w[(o->iters - 1) / 2])
				med = k;
		free(w);
		out->alloc = o->alloc;
		out->time_scale = o->time_scale;
		out->iters = o->iters;
		out->warmup = o->warmup;
		out->iter_ms = mp_xmalloc(o->iters * sizeof(*out->iter_ms));
		for (uint32_t k = 0; k < o->iters; k++) {
			out->iter_ms[k] = recs[k].wall_ms;
			if (recs[k].peak > out->live_peak_max_bytes)
				out->live_peak_max_bytes = recs[k].peak;
		}
		out->live_peak_bytes = recs[med].peak;
		out->live_peak_action = recs[med].peak_action;
		out->timeline_ms = recs[med].timeline_ms;
		out->stall_ms = recs[med].stall_ms;
		out->alloc_wait_ms = recs[med].alloc_wait_ms;
		out->overruns = recs[med].overruns;
		out->overrun_ms = recs[med].overrun_ms;
		out->work_scale = recs[med].need_scale;
		out->h2d_busy_ms = recs[med].busy_ms[0];
		out->d2h_busy_ms = recs[med].busy_ms[1];
		out->mem_bytes = X.mem_bytes;
		out->arena_high_bytes = X.use_pool ? 0 : X.arena_high;
		out->pool_high_bytes = X.use_pool ? X.pool.high_blocks * POOL_BLOCK_BYTES : 0;
		out->peak_bytes = X.use_pool ? out->pool_high_bytes : out->live_peak_bytes;
		for (uint32_t i = 0; i < n; i++) {
			const struct mp_action *a = &s->a[i];

			if (a->kind == MP_ACT_SWAP_IN) {
				out->h2d_bytes += net->tensors[a->tensor].bytes;
				out->n_h2d++;
			} else if (a->kind == MP_ACT_SWAP_OUT) {
				out->d2h_bytes += net->tensors[a->tensor].bytes;
				out->n_d2h++;
			}
		}
		out->n_act = n;
		out->act = recs[med].act;
		recs[med].act = NULL;
		out->n_steps = n_steps;
		out->step_bytes = recs[med].step_bytes;
		recs[med].step_bytes = NULL;
	}
	rc = 0;
stop:
	pthread_mutex_lock(&X.mu);
	X.stop = true;
	pthread_cond_broadcast(&X.cv);
	pthread_mutex_unlock(&X.mu);
	for (int e = 0; e < threads; e++)
		pthread_join(X.eng[e].th, NULL);
	pthread_cond_destroy(&X.cv);
	pthread_mutex_destroy(&X.mu);
	if (slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0UL, 0UL, 0UL);
out:
	if (recs)
		for (uint32_t k = 0; k < o->iters; k++) {
			free(recs[k].act);
			free(recs[k].step_bytes);
		}
	free(recs);
	free(need);
	exec_free(&X);
	if (rc < 0) {
		uint32_t f = out->failed_action;

		exec_result_release(out);
		out->failed_action = f;
	}
	return rc;
}
