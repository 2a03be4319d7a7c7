/*
 * Host backend of memplan verify (backend.h): device memory is a host arena
 * (or the pool's range), the two copy engines are two threads, and compute
 * is a timed wait.  The replay engine (replay.c) issues the schedule; this
 * file runs it.
 *
 * Time: each engine keeps a timeline in model milliseconds.  On the virtual
 * clock (the default) an action lasts exactly its modelled time there and
 * nothing sleeps: the threads still do the real work (a copy thread marks a
 * copy ended only after moving its bytes, and compute blocks on that), but
 * the timelines, so the order of memory events and the peak, are sim_run's
 * however fast or slow the host is.  On the wall clock (--clock wall) the
 * timelines are anchored to the real clock (real = start + model x
 * time_scale).  An action starts on its
 * timeline when its engine and what it starts after are done (sim_run's
 * rules, on measured times) and lasts its modelled time, or its real work
 * (hashing, filling, copying) if that took longer: an overrun; the thread
 * then sleeps until the end.  A thread that wakes late (timer overshoot,
 * preemption, hand-off) catches up on the following actions' sleeps instead
 * of delaying them, so host jitter does not add up over thousands of
 * actions, while work slower than the model shows.  Without overruns the
 * timelines are sim_run's, operation for operation.  The iteration's wall
 * time is measured on the real clock.
 *
 * Checksums: exec_hash, taken as bytes are written, copied or read (one pass
 * that copies or fills and hashes), into host slots.
 *
 * Locking: the compute thread holds mu while the engine issues, and lets it
 * go while an op works and while it waits; a copy thread holds it to take a
 * job and to record its end.
 */
#include "backend.h"

#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

/* ---- hashing and patterns ---- */

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
	uint64_t l[4] = { MP_FNV_OFFSET, MP_FNV_OFFSET ^ 1, MP_FNV_OFFSET ^ 2, MP_FNV_OFFSET ^ 3 }, x[4], w[4], len = n, h;

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
			l[k] = (l[k] ^ w[k]) * MP_FNV_PRIME;
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
		l[0] = (l[0] ^ w[0]) * MP_FNV_PRIME;
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
			l[0] = (l[0] ^ t[k]) * MP_FNV_PRIME;
	}
	h = l[0];
	for (int k = 1; k < 4; k++)
		h = (h ^ mix64(l[k])) * MP_FNV_PRIME;
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

/* ---- state ---- */

/* One copy handed to an engine. */
struct job {
	uint32_t act;
	int32_t tensor;
	uint64_t off, bytes;
	uint32_t after_at, n_after;  /* H->after[]: actions it starts after */
	int32_t slot;
};

struct host;

struct engine {
	pthread_t th;
	bool to_device;
	struct job *q;             /* [n], FIFO from head; owned */
	uint32_t n, head, cap;
	bool busy;
	double tend;               /* its timeline: end of its last copy */
	struct host *H;
};

struct host {
	struct replay *R;
	double ns_per_ms;          /* real ns per model ms */
	double scale;
	bool virt;                 /* --clock virtual: model time only, no sleeping */
	uint8_t *mem;              /* [R->mem_bytes] the device arena, owned */
	uint64_t *slots;           /* [n_slots] checksums */
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool sync;                 /* mu and cv initialised */
	struct engine eng[2];      /* 0: host to device, 1: device to host */
	int threads;
	bool stop, abort;
	int slack;                 /* the caller's timer slack */
	int64_t r0, r_end;         /* real ns of the iteration's start and end */
	double tc;                 /* compute timeline */
	double op_start;           /* the op now working: its start on tc */
	int64_t work_start;        /* and the real ns its work began */
	bool in_op;                /* between op_begin and op_end: mu not held */
	/* per iteration, indexed by action */
	double *vs, *ve, *stall, *mark;
	uint8_t *done;             /* ended on its engine */
	uint32_t *after;           /* copies' after lists */
	uint32_t n_after, cap_after;
	/* per iteration, totals */
	double stall_ms, alloc_wait_ms, overrun_ms, busy_ms[2], need_scale;
	uint32_t overruns;
};

static struct host *H_of(const struct replay *R)
{
	return R->ctx;
}

static int64_t real_at(const struct host *H, double t_ms)
{
	return H->r0 + (int64_t)llround(t_ms * H->ns_per_ms);
}

/* ---- copy engines ---- */

static void *engine_main(void *arg)
{
	struct engine *E = arg;
	struct host *H = E->H;
	const int dir = E->to_device ? 0 : 1;

	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	pthread_mutex_lock(&H->mu);
	for (;;) {
		struct job j;
		double S, dur, end;
		int64_t work_start, work_end;
		uint64_t h;
		uint8_t *host;

		while (E->head == E->n && !H->stop)
			pthread_cond_wait(&H->cv, &H->mu);
		if (E->head == E->n)
			break;
		j = E->q[E->head];
		E->busy = true;
		S = fmax(E->tend, H->mark[j.act]);
		for (;;) {
			bool ready = true;

			for (uint32_t d = 0; d < j.n_after; d++)
				if (!H->done[H->after[j.after_at + d]])
					ready = false;
			if (ready)
				break;
			pthread_cond_wait(&H->cv, &H->mu);
		}
		for (uint32_t d = 0; d < j.n_after; d++)
			S = fmax(S, H->ve[H->after[j.after_at + d]]);
		dur = device_copy_ms(&H->R->req->device, j.bytes, E->to_device);
		host = H->R->t[j.tensor].host;
		pthread_mutex_unlock(&H->mu);

		work_start = now_ns();
		if (E->to_device)
			h = copy_hash(H->mem + j.off, host, j.bytes);
		else
			h = copy_hash(host, H->mem + j.off, j.bytes);
		if (j.slot >= 0)
			H->slots[j.slot] = h;
		work_end = now_ns();
		end = S + (H->virt ? dur : fmax(dur, (double)(work_end - work_start) / H->ns_per_ms));
		if (!H->abort && !H->virt)
			sleep_until(real_at(H, end));

		pthread_mutex_lock(&H->mu);
		if (end > S + dur) {
			H->overruns++;
			H->overrun_ms += (end - S - dur) * H->scale;
		}
		if (dur > 0)
			H->need_scale = fmax(H->need_scale, (double)(work_end - work_start) / 1e6 / dur);
		H->vs[j.act] = S;
		H->ve[j.act] = end;
		H->busy_ms[dir] += (end - S) * H->scale;
		H->done[j.act] = 1;
		E->tend = end;
		E->head++;
		E->busy = false;
		pthread_cond_broadcast(&H->cv);
	}
	pthread_mutex_unlock(&H->mu);
	return NULL;
}

/* mu held */
static int enqueue(struct host *H, struct engine *E, const struct rp_copy *c)
{
	struct job j = { c->act, c->tensor, c->off, c->bytes, H->n_after, c->n_after, c->slot };

	mp_grow((void **)&H->after, &H->cap_after, H->n_after + c->n_after + 1, sizeof(*H->after));
	for (uint32_t d = 0; d < c->n_after; d++)
		H->after[H->n_after++] = c->after[d];
	mp_grow((void **)&E->q, &E->cap, E->n + 1, sizeof(*E->q));
	E->q[E->n++] = j;
	pthread_cond_broadcast(&H->cv);
	return 0;
}

/* Compute waits for action k's end (mu held); its timeline moves there. */
static double wait_for(struct host *H, int32_t k)
{
	double t0 = H->tc;

	while (!H->done[k])
		pthread_cond_wait(&H->cv, &H->mu);
	H->tc = fmax(H->tc, H->ve[k]);
	return (H->tc - t0) * H->scale;
}

static void instant(struct host *H, uint32_t i)
{
	H->vs[i] = H->ve[i] = H->tc;
	H->done[i] = 1;
}

/* ---- the primitives ---- */

static int h_alloc(struct replay *R, uint32_t i, int32_t after)
{
	struct host *H = H_of(R);

	if (after >= 0)
		H->alloc_wait_ms += wait_for(H, after);
	instant(H, i);
	return 0;
}

static int h_free(struct replay *R, uint32_t i)
{
	instant(H_of(R), i);
	return 0;
}

static int h_mark(struct replay *R, uint32_t i)
{
	struct host *H = H_of(R);

	H->mark[i] = H->tc;
	return 0;
}

static int h_copy_out(struct replay *R, const struct rp_copy *c)
{
	struct host *H = H_of(R);

	return enqueue(H, &H->eng[1], c);
}

static int h_copy_in(struct replay *R, const struct rp_copy *c)
{
	struct host *H = H_of(R);

	return enqueue(H, &H->eng[0], c);
}

static int h_wait(struct replay *R, uint32_t i, int32_t copy)
{
	struct host *H = H_of(R);

	if (copy >= 0) {
		H->stall[i] = wait_for(H, copy);
		H->stall_ms += H->stall[i];
	}
	instant(H, i);
	return 0;
}

static int h_op_begin(struct replay *R, uint32_t i)
{
	struct host *H = H_of(R);

	(void)i;
	H->op_start = H->tc;
	H->in_op = true;
	pthread_mutex_unlock(&H->mu);
	H->work_start = now_ns();
	return 0;
}

static int h_hash(struct replay *R, uint32_t i, int engine, uint64_t off, uint64_t n, int32_t slot)
{
	struct host *H = H_of(R);

	(void)i;
	(void)engine;
	H->slots[slot] = exec_hash(H->mem + off, n);
	return 0;
}

static int h_fill(struct replay *R, uint32_t i, uint64_t off, uint64_t n, uint64_t seed, int32_t slot)
{
	struct host *H = H_of(R);
	uint64_t h = fill_pattern(H->mem + off, n, seed);

	(void)i;
	if (slot >= 0)
		H->slots[slot] = h;
	return 0;
}

static int h_op_end(struct replay *R, uint32_t i, double ms)
{
	struct host *H = H_of(R);
	const int64_t work_end = now_ns();
	const double start = H->op_start,
		     end = start + (H->virt ? ms : fmax(ms, (double)(work_end - H->work_start) / H->ns_per_ms));

	if (!H->virt)
		sleep_until(real_at(H, end));
	pthread_mutex_lock(&H->mu);
	H->in_op = false;
	if (ms > 0)
		H->need_scale = fmax(H->need_scale, (double)(work_end - H->work_start) / 1e6 / ms);
	if (end > start + ms) {
		H->overruns++;
		H->overrun_ms += (end - start - ms) * H->scale;
	}
	H->tc = end;
	H->vs[i] = start;
	H->ve[i] = end;
	H->done[i] = 1;
	return 0;
}

static uint64_t h_host_fill(struct replay *R, uint8_t *p, uint64_t n, uint64_t seed)
{
	(void)R;
	return fill_pattern(p, n, seed);
}

static uint64_t h_slot_sum(const struct replay *R, int32_t slot, uint64_t bytes)
{
	(void)bytes;
	return H_of(R)->slots[slot];
}

/* ---- iterations ---- */

static int h_iter_begin(struct replay *R, bool measured)
{
	struct host *H = H_of(R);
	const uint32_t n = R->s->n;

	(void)measured;
	pthread_mutex_lock(&H->mu);
	H->tc = 0;
	H->n_after = 0;
	H->abort = false;
	H->stall_ms = H->alloc_wait_ms = H->overrun_ms = H->busy_ms[0] = H->busy_ms[1] = 0;
	H->overruns = 0;
	H->need_scale = 0;
	memset(H->vs, 0, n * sizeof(*H->vs));
	memset(H->ve, 0, n * sizeof(*H->ve));
	memset(H->stall, 0, n * sizeof(*H->stall));
	memset(H->mark, 0, n * sizeof(*H->mark));
	memset(H->done, 0, n);
	for (int e = 0; e < 2; e++) {
		H->eng[e].n = H->eng[e].head = 0;
		H->eng[e].tend = 0;
	}
	H->r0 = now_ns();
	return 0;
}

/* Every copy ends (after a violation without sleeping out their time). */
static int h_iter_end(struct replay *R)
{
	struct host *H = H_of(R);

	if (H->in_op) { /* an op that failed between op_begin and op_end */
		pthread_mutex_lock(&H->mu);
		H->in_op = false;
	}
	H->abort = R->failed || R->dev_failed;
	while (H->eng[0].head < H->eng[0].n || H->eng[1].head < H->eng[1].n || H->eng[0].busy || H->eng[1].busy)
		pthread_cond_wait(&H->cv, &H->mu);
	H->r_end = now_ns();
	pthread_mutex_unlock(&H->mu);
	return 0;
}

static int h_measure(struct replay *R, struct rp_iter *rec)
{
	const struct host *H = H_of(R);

	if (!rec)
		return 0;
	rec->wall_ms = (double)(H->r_end - H->r0) / 1e6;
	rec->timeline_ms = H->tc;
	for (int e = 0; e < 2; e++)
		rec->timeline_ms = fmax(rec->timeline_ms, H->eng[e].tend);
	rec->timeline_ms *= H->scale;
	rec->stall_ms = H->stall_ms;
	rec->alloc_wait_ms = H->alloc_wait_ms;
	rec->overrun_ms = H->overrun_ms;
	rec->overruns = H->overruns;
	rec->need_scale = H->need_scale;
	rec->busy_ms[0] = H->busy_ms[0];
	rec->busy_ms[1] = H->busy_ms[1];
	for (uint32_t i = 0; i < R->s->n; i++)
		rec->act[i] = (struct mp_exec_act){ H->vs[i] * H->scale, H->ve[i] * H->scale, H->stall[i], 0 };
	return 0;
}

/* ---- setup ---- */

static void h_close(struct replay *R)
{
	struct host *H = H_of(R);

	if (H->sync) {
		pthread_mutex_lock(&H->mu);
		H->stop = true;
		pthread_cond_broadcast(&H->cv);
		pthread_mutex_unlock(&H->mu);
		for (int e = 0; e < H->threads; e++)
			pthread_join(H->eng[e].th, NULL);
		pthread_cond_destroy(&H->cv);
		pthread_mutex_destroy(&H->mu);
	}
	if (H->slack > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)H->slack, 0UL, 0UL, 0UL);
	for (uint32_t t = 0; t < R->net->n_tensors; t++) {
		free(R->t[t].host);
		R->t[t].host = NULL;
	}
	if (H->mem)
		munmap(H->mem, R->mem_bytes ? R->mem_bytes : 1);
	free(H->slots);
	for (int e = 0; e < 2; e++)
		free(H->eng[e].q);
	free(H->vs);
	free(H->ve);
	free(H->stall);
	free(H->mark);
	free(H->done);
	free(H->after);
	free(H);
	R->ctx = NULL;
}

static int h_open(struct replay *R, struct mp_exec_result *out)
{
	struct host *H = mp_xcalloc(1, sizeof(*H));
	const struct mp_net *net = R->net;
	const uint32_t n1 = R->s->n ? R->s->n : 1;
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
	uint64_t total;
	char b1[32], b2[32], b3[32], b4[32];

	(void)out;
	R->ctx = H;
	H->R = R;
	H->slack = prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL);
	H->scale = R->o.time_scale;
	H->virt = R->o.clock == MP_EXEC_VIRTUAL;
	H->ns_per_ms = R->o.time_scale * 1e6;
	if (R->o.alloc == MP_EXEC_ASYNC) {
		replay_dev_error(R, "--alloc async is cudaMallocAsync, a CUDA allocator: the host backend has arena and pool");
		return -1;
	}
	/* what can be touched: the arena, or the pool up to twice the arena */
	total = R->host_bytes + (R->o.alloc == MP_EXEC_POOL && R->mem_bytes / 2 > R->p->arena_bytes ? 2 * R->p->arena_bytes
												  : R->mem_bytes);
	if (pages > 0 && page > 0 && total > (uint64_t)pages / 10 * 8 * (uint64_t)page) {
		replay_dev_error(R, "the host backend needs %s of host memory (arena %s, swap buffers %s); this host has %s",
				 mp_fmt_bytes(total, b1, sizeof(b1)), mp_fmt_bytes(R->mem_bytes, b2, sizeof(b2)),
				 mp_fmt_bytes(R->host_bytes, b3, sizeof(b3)),
				 mp_fmt_bytes((uint64_t)pages * (uint64_t)page, b4, sizeof(b4)));
		return -1;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (R->swapped[t] && !(R->t[t].host = malloc(net->tensors[t].bytes ? net->tensors[t].bytes : 1))) {
			replay_dev_error(R, "cannot allocate host buffers (%s): %s", mp_fmt_bytes(R->host_bytes, b1, sizeof(b1)),
					 strerror(errno));
			return -1;
		}
	/* pages are committed as they are touched: a pool as large as the
	 * budget costs only its high-water mark */
	H->mem = mmap(NULL, R->mem_bytes ? R->mem_bytes : 1, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (H->mem == MAP_FAILED) {
		H->mem = NULL;
		replay_dev_error(R, "cannot map a host arena of %s: %s", mp_fmt_bytes(R->mem_bytes, b1, sizeof(b1)),
				 strerror(errno));
		return -1;
	}
	H->slots = mp_xcalloc(R->n_slots, sizeof(*H->slots));
	H->vs = mp_xcalloc(n1, sizeof(*H->vs));
	H->ve = mp_xcalloc(n1, sizeof(*H->ve));
	H->stall = mp_xcalloc(n1, sizeof(*H->stall));
	H->mark = mp_xcalloc(n1, sizeof(*H->mark));
	H->done = mp_xcalloc(n1, 1);
	pthread_mutex_init(&H->mu, NULL);
	pthread_cond_init(&H->cv, NULL);
	H->sync = true;
	for (int e = 0; e < 2; e++) {
		H->eng[e].to_device = e == 0;
		H->eng[e].H = H;
		if ((errno = pthread_create(&H->eng[e].th, NULL, engine_main, &H->eng[e])) != 0) {
			replay_dev_error(R, "cannot start a copy-engine thread: %s", strerror(errno));
			return -1;
		}
		H->threads++;
	}
	prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	return 0;
}

const struct backend_i backend_host = {
	.name = "host",
	.align = 1,
	.open = h_open,
	.close = h_close,
	.host_fill = h_host_fill,
	.iter_begin = h_iter_begin,
	.iter_end = h_iter_end,
	.slot_sum = h_slot_sum,
	.measure = h_measure,
	.alloc = h_alloc,
	.free = h_free,
	.mark = h_mark,
	.copy_out = h_copy_out,
	.copy_in = h_copy_in,
	.wait = h_wait,
	.op_begin = h_op_begin,
	.hash = h_hash,
	.fill = h_fill,
	.op_end = h_op_end,
};

int exec_host_run(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
		  const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err)
{
	return replay_run(&backend_host, net, req, p, o, out, err);
}
