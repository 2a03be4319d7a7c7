/*
 * CUDA backend of memplan verify (DESIGN.md "Verify", issue 5): a plan's
 * Schedule run on device 0.  Built only when the Makefile finds nvcc
 * (MEMPLAN_CUDA); compiled with warnings as errors, and, at the time of
 * writing, never run on a GPU: every figure it prints comes from the CUDA
 * runtime on the machine that runs it, none is modelled here.
 *
 * What runs:
 *   memory   --alloc arena: one cudaMalloc of the plan's arena, every
 *            allocation at its plan offset.  --alloc pool: one cudaMalloc of
 *            the pool's capacity (exec_pool_bytes), every allocation at the
 *            offset SuperNeurons' first-fit pool (pool.c) gives it; a free or
 *            a swap-out returns its blocks as it is issued (what takes them
 *            waits on the GPU for a swap-out still reading them, as in the
 *            arena), so the pool's decisions follow the schedule, not the
 *            timing; no free run long enough is a violation, in the host
 *            backend's words.  --alloc async: cudaMallocFromPoolAsync and
 *            cudaFreeAsync from a memory pool of our own whose release
 *            threshold is UINT64_MAX (memory stays reserved between
 *            iterations); an alloc allocates on the compute stream, a
 *            swap-in on the h2d stream just before its copy, a free frees on
 *            the compute stream and a swap-out on the d2h stream after its
 *            copy: each on the stream that uses the memory last, the
 *            allocator ordering reuse after the free (async_take, release).
 *            Every mode addresses an allocation by its offset (place_off,
 *            dev_at): into the arena, or, with async, from address 0, the
 *            offset being the device address, so that one state machine and
 *            one set of overlap rules serve all three.  Persistent tensors
 *            resident at an iteration's end keep their memory into the next
 *            (async frees the rest after each iteration).  Pinned host
 *            buffers (one cudaMallocHost) for every swapped tensor.
 *   streams  one compute stream and two copy streams (h2d, d2h), ordered by
 *            events exactly as the host backend (exec_host.c) orders its
 *            engines: a copy starts after the compute issued before it; a
 *            swap_out after the compute that last touched its tensor; a
 *            swap_in after its tensor's previous swap-out, after every
 *            overlapping swap-out, and after the free (or swap-out) of every
 *            allocation holding bytes it writes, including allocations the
 *            plan placed there after the swap-in was issued (the host
 *            backend's rule, derived the same way).  A swap_in waiting for a
 *            free later in the schedule is issued to its stream when that
 *            free is, keeping the h2d stream in schedule order; a wait makes
 *            the compute stream wait on the swap_in's event, and a wait that
 *            would need a free after it is a violation, not a hang.  An
 *            allocation waits for the swap-outs still reading its bytes
 *            (arena, pool; async: the allocator orders its own reuse).
 *   compute  an op with a real kernel (verify/kop.h: layers with shapes of
 *            the types cuDNN and cuBLAS cover) runs it through
 *            kern_cuda.cu, prepared before the iterations; any other
 *            compute or recompute (and every one under --compute timed) is
 *            a timed sequence of kernels on the compute stream: a stamp of
 *            the GPU's global timer, a pattern written into each output
 *            (its checksum taken as it is written) and into the workspace,
 *            then a spin until stamp + the op's time x --time-scale.  When
 *            the checks took longer than that, the op overruns (counted, as
 *            on the host).  The timer is calibrated once against
 *            cudaEventElapsedTime (the SM clock, clock64, changes with boost
 *            clocks; the global timer does not).  With real kernels the
 *            checks run in one unmeasured iteration first and the others
 *            hash nothing (hashing would add to every real op's time).
 *   checks   checksums are computed on the device into a small buffer (one
 *            slot each) and compared on the host after every iteration, as
 *            the host backend compares its CPU checksums: every read against
 *            what its producer wrote, every swap-out before its copy, every
 *            swap-in after its copy, every recomputed output.  A violation
 *            names the action and tensor with the host backend's words.  The
 *            checksum is not exec_hash: it is a sum of mixed 64-bit words,
 *            so that the device's threads may add in any order, and the
 *            values in messages differ from the host backend's.
 *            State errors (a read of a freed tensor, a missing wait) are
 *            found as the schedule is issued, exactly as on the host.
 *   measure  per-action start and end from events on each stream, relative
 *            to an event that starts the iteration; iteration time from that
 *            event to one after all three streams joined; memory events
 *            replayed in measured-time order for the live peak (the host
 *            backend's rule); device memory from cudaMemGetInfo before the
 *            arena (context and libraries) and sampled during the run.  The
 *            pool's high-water mark (pool); the memory pool's reserved and
 *            used high-water marks over the measured iterations
 *            (cudaMemPoolAttrReservedMemHigh, UsedMemHigh, reset after the
 *            warm-up) (async).  peak_bytes: the live peak, the pool's
 *            high-water, or the reserved high-water.
 *
 * Cost per iteration: O(actions x live allocations) issue bookkeeping,
 * 2-4 events and up to n_in + 2 n_out + 3 kernel launches per action (a
 * checking iteration; a real op otherwise issues only its own calls); pool:
 * O(free runs) per allocation and free; async: one allocation and one free
 * call per allocation.
 */
#define _Noreturn [[noreturn]] /* analysis/util.h is C11 */
extern "C" {
#include "exec.h"
#include "pool.h"
}
#include "kern_cuda.h"

#include <cuda_runtime.h>

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef unsigned long long ull;

/* ---- checksums and patterns (host and device agree) ---- */

#define K_TERM UINT64_C(0x9e3779b97f4a7c15)
#define K_PAT UINT64_C(0xd1b54a32d192ed03)
#define K_LEN UINT64_C(0xaef17502108ef2d9)

__host__ __device__ static inline uint64_t mix64(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 33;
	return h;
}

/* The checksum of n bytes is fin(sum over 64-bit words w_i of term(w_i, i),
 * n), the tail zero-padded into one more word: a sum, so the device adds the
 * terms in any order and gets the same value. */
__host__ __device__ static inline uint64_t term(uint64_t w, uint64_t i)
{
	return mix64(w + (i + 1) * K_TERM);
}

/* Word i of the pattern of seed. */
__host__ __device__ static inline uint64_t pat(uint64_t seed, uint64_t i)
{
	return mix64(seed + (i + 1) * K_PAT);
}

static uint64_t fin(uint64_t sum, uint64_t n)
{
	return mix64(sum ^ (n * K_LEN + 1));
}

/* The pattern of tensor t as op wrote it (op -1: initial contents), as the
 * host backend seeds it. */
static uint64_t pattern_seed(int32_t t, int32_t op)
{
	return ((uint64_t)(uint32_t)t << 32) ^ (uint32_t)op ^ UINT64_C(0x9e3779b97f4a7c15);
}

/* Fill n host bytes with the pattern of seed; returns their checksum. */
static uint64_t host_fill(uint8_t *p, uint64_t n, uint64_t seed)
{
	uint64_t nw = n / 8, sum = 0;

	for (uint64_t i = 0; i < nw; i++) {
		uint64_t w = pat(seed, i);

		memcpy(p + 8 * i, &w, 8);
		sum += term(w, i);
	}
	if (n & 7) {
		uint64_t w = pat(seed, nw), t = 0;

		memcpy(&t, &w, n & 7); /* little-endian: the low bytes, as the device */
		memcpy(p + 8 * nw, &t, n & 7);
		sum += term(t, nw);
	}
	return fin(sum, n);
}

/* ---- kernels ---- */

#define THREADS 256

__device__ static inline ull gtimer(void)
{
	ull t;

	asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
	return t;
}

/* Sum over the block; the result is valid in thread 0.  Every thread calls. */
__device__ static ull block_sum(ull s)
{
	__shared__ ull part[THREADS / 32];

	for (int o = 16; o > 0; o /= 2)
		s += __shfl_down_sync(0xffffffffu, s, o);
	if ((threadIdx.x & 31) == 0)
		part[threadIdx.x / 32] = s;
	__syncthreads();
	s = 0;
	if (threadIdx.x < 32) {
		s = threadIdx.x < blockDim.x / 32 ? part[threadIdx.x] : 0;
		for (int o = 16; o > 0; o /= 2)
			s += __shfl_down_sync(0xffffffffu, s, o);
	}
	return s;
}

/* *slot += the checksum sum of n bytes at p (8-byte aligned). */
__global__ void k_hash(const uint8_t *p, ull n, ull *slot)
{
	const ull nw = n / 8;
	const ull *w = (const ull *)p;
	ull s = 0;

	for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < nw; i += (ull)gridDim.x * blockDim.x)
		s += term(w[i], i);
	if (blockIdx.x == 0 && threadIdx.x == 0 && (n & 7)) {
		ull t = 0;

		for (unsigned k = 0; k < (unsigned)(n & 7); k++)
			t |= (ull)p[nw * 8 + k] << (8 * k);
		s += term(t, nw);
	}
	s = block_sum(s);
	if (threadIdx.x == 0 && s)
		atomicAdd(slot, s);
}

/* Write the pattern of seed into n bytes at p (8-byte aligned); *slot += the
 * checksum sum of what was written (slot NULL: none). */
__global__ void k_fill(uint8_t *p, ull n, ull seed, ull *slot)
{
	const ull nw = n / 8;
	ull *w = (ull *)p;
	ull s = 0;

	for (ull i = blockIdx.x * (ull)blockDim.x + threadIdx.x; i < nw; i += (ull)gridDim.x * blockDim.x) {
		ull x = pat(seed, i);

		w[i] = x;
		s += term(x, i);
	}
	if (blockIdx.x == 0 && threadIdx.x == 0 && (n & 7)) {
		ull x = pat(seed, nw), t = 0;

		for (unsigned k = 0; k < (unsigned)(n & 7); k++) {
			p[nw * 8 + k] = (uint8_t)(x >> (8 * k));
			t |= ((x >> (8 * k)) & 0xff) << (8 * k);
		}
		s += term(t, nw);
	}
	if (!slot)
		return;
	s = block_sum(s);
	if (threadIdx.x == 0 && s)
		atomicAdd(slot, s);
}

/* An op's start: t[0] = the global timer. */
__global__ void k_stamp(ull *t)
{
	t[0] = gtimer();
}

/* An op's end: spin until t[0] + dur_ns; t[1] = the work before it (ns),
 * t[2] = how far past the end the work ran (ns, 0: on time). */
__global__ void k_spin(ull *t, ull dur_ns)
{
	ull now = gtimer(), end = t[0] + dur_ns;

	t[1] = now - t[0];
	t[2] = now > end ? now - end : 0;
	while (gtimer() < end)
		__nanosleep(256);
}

/* Calibration: spin dur_ns on the global timer. */
__global__ void k_calib(ull dur_ns)
{
	ull t0 = gtimer();

	while (gtimer() - t0 < dur_ns)
		__nanosleep(256);
}

/* ---- executor state ---- */

enum { LS_ABSENT, LS_ALLOC, LS_RES, LS_OUT, LS_IN };

/* A version of a tensor's bytes: its checksum, known (slot < 0) or in a
 * device slot of this iteration, and the op that wrote it. */
struct ver {
	uint64_t sum;
	int32_t slot;
	int32_t writer;            /* op; -1: initial contents */
	bool valid;                /* false: nothing written */
};

static struct ver ver_make(uint64_t sum, int32_t slot, int32_t writer)
{
	struct ver v;

	v.sum = sum;
	v.slot = slot;
	v.writer = writer;
	v.valid = true;
	return v;
}

static struct ver ver_none(void)
{
	struct ver v;

	memset(&v, 0, sizeof(v));
	v.slot = -1;
	v.writer = -1;
	return v;
}

struct tens {
	uint8_t ls;
	int32_t cur;               /* allocating action holding its device bytes, -1 */
	int32_t at_alloc, at_free, at_out, at_in;  /* latest such action, -1 */
	struct ver expect;         /* what its last compute wrote */
	bool carry;                /* persistent and resident at the end of the last iteration */
	uint64_t carry_off, carry_bytes;
	uint8_t *host;             /* pinned host buffer of a swapped tensor (in X->pinned) */
	struct ver host_ver;       /* what the host buffer holds */
	uint8_t *dev;              /* async: its device allocation (cudaMallocFromPoolAsync), held
				    * from its alloc or swap-in to its free or swap-out, and into
				    * the next iteration while carried; NULL: none (or 0 bytes) */
};

enum { CK_READ, CK_REBUILT, CK_OUT, CK_IN };

/* A checksum to compare after the iteration. */
struct chk {
	uint32_t act;
	int32_t tensor;
	int32_t op;                /* CK_REBUILT: the op */
	uint8_t kind;
	int32_t slot;              /* what the device found */
	struct ver want;
	char *extra;               /* overlapping allocations at issue, malloc'd or NULL */
};

/* A swap-in waiting for its copy to be issued (the h2d stream, in order). */
struct pend {
	uint32_t act;
	int32_t tensor;
	uint64_t off, bytes;
	uint32_t dep_at, n_dep;    /* allocations whose release it waits for */
	struct ver want;
};

/* A swap-out issued this iteration (the d2h stream, in order). */
struct dout {
	uint32_t act;
	int32_t tensor;
	uint64_t off, held;
};

struct mev {
	double t;
	uint32_t seq;              /* action * 2 + sub */
	int64_t delta;
	int32_t step;              /* compute end: its step; else -1 */
};

enum { EV_S, EV_E, EV_M, EV_D, EV_KINDS };  /* start, end, issue mark, swap-in done */

struct cx {
	const struct mp_net *net;
	const struct mp_plan *p;
	const struct mp_schedule *s;
	struct mp_exec_opts o;
	int sms;
	double timer_ratio;        /* event ms per timer ms */
	/* device: allocations are addressed as offsets (place_off), into the
	 * arena (arena: the plan's offsets; pool: pool_alloc's) or, with
	 * async, from address 0: an allocation's offset is its device address,
	 * so that overlaps and culprits mean the same in every mode (dev_at) */
	uint8_t *arena;            /* [arena_bytes] device; NULL with async */
	uint64_t arena_bytes;
	struct mp_pool pool;       /* pool: the first-fit heap over the arena */
	cudaMemPool_t mpool;       /* async: the memory pool allocations come from */
	uint64_t async_floor[2];   /* async: reserved and used at the high-water reset */
	ull *slots;                /* [n_slots] device */
	ull *tim;                  /* [3 n] device: stamp, work, overrun per compute */
	uint32_t n_slots, slot_next;
	uint8_t *pinned;           /* host, pinned */
	uint64_t pinned_bytes;
	cudaStream_t cs, h2d, d2h;
	cudaEvent_t *ev;           /* [EV_KINDS * n], NULL where unused */
	uint8_t *rec;              /* [EV_KINDS * n] recorded this iteration */
	cudaEvent_t it0, it1, hj, dj;
	ull *h_slots, *h_tim;      /* host copies */
	/* bookkeeping */
	struct tens *t;            /* [n_tensors] */
	int32_t *step_of;          /* [n] */
	uint32_t *in_at, *out_at;  /* [n_ops] */
	struct ver *in_ver, *out_ver;
	uint8_t *computed;         /* [n_ops] */
	uint64_t *place_off, *place_bytes;  /* [n] */
	int32_t *rel;              /* [n] action whose event releases allocation k, -1 */
	int32_t *rel_of;           /* [n] free or swap_out: the allocation it released */
	uint8_t *issued;           /* [n] swap-ins whose copy is issued */
	uint32_t *live_pos, *live, n_live;
	uint32_t *dep, n_dep, cap_dep;
	struct pend *pq;
	uint32_t n_pq, head_pq, cap_pq;
	struct dout *dq;
	uint32_t n_dq, cap_dq;
	uint32_t cs_waited_dq, h2d_waited_dq;  /* d2h entries each stream has waited through */
	struct chk *ck;
	uint32_t n_ck, cap_ck;
	struct mev *log;
	uint32_t n_log, cap_log;
	/* per iteration */
	uint64_t reads, swaps, recomputes, hashed, launches, arena_high;
	uint64_t used_peak;
	/* real kernels (kern_cuda.cu); NULL kl: every op is timed */
	struct kern_lib *kl;
	struct kern **kern;        /* [n] compute and recompute actions; NULL: timed */
	struct kern **op_kern;     /* [n_ops] the kernel of each op's compute action */
	bool checking;             /* this iteration hashes (see exec_cuda_run) */
	/* failures */
	bool failed;               /* a violation */
	uint32_t fail_at;
	bool cuda_failed;
	struct mp_error err;
};

#define CU(X, call, ...) cu_check((X), (call), __VA_ARGS__)

/* Record a CUDA error: "CUDA error in WHAT: message".  -1 on error. */
static int cu_check(struct cx *X, cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cu_check(struct cx *X, cudaError_t e, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (e == cudaSuccess)
		return 0;
	if (!X->cuda_failed) {
		va_start(ap, fmt);
		vsnprintf(what, sizeof(what), fmt, ap);
		va_end(ap);
		mp_error_set(&X->err, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
		X->cuda_failed = true;
	}
	return -1;
}

static const char *tname(const struct cx *X, int32_t t)
{
	return X->net->tensors[t].name;
}

static const char *act_label(const struct cx *X, uint32_t i, char *buf, size_t n)
{
	const struct mp_action *a = &X->s->a[i];

	if (a->op >= 0)
		snprintf(buf, n, "schedule[%u] %s '%s'", i, mp_act_name(a->kind), X->net->ops[a->op].name);
	else
		snprintf(buf, n, "schedule[%u] %s '%s'", i, mp_act_name(a->kind), tname(X, a->tensor));
	return buf;
}

/* Record the first violation: "schedule[i] kind 'name': detail". */
static void fail(struct cx *X, uint32_t i, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(struct cx *X, uint32_t i, const char *fmt, ...)
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
}

/* "what 'conv.fwd' wrote" / "its initial contents" */
static const char *ver_what(const struct cx *X, const struct ver *v, char *buf, size_t n)
{
	if (v->writer < 0)
		snprintf(buf, n, "its initial contents");
	else
		snprintf(buf, n, "what '%s' wrote", X->net->ops[v->writer].name);
	return buf;
}

/* The checksum of version v of tensor t (after the iteration's slots are back). */
static uint64_t ver_value(const struct cx *X, const struct ver *v, int32_t t)
{
	return v->slot >= 0 ? fin(X->h_slots[v->slot], X->net->tensors[t].bytes) : v->sum;
}

static bool overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return an && bn && a < b + bn && b < a + an;
}

static void live_add(struct cx *X, uint32_t k)
{
	X->live_pos[k] = X->n_live;
	X->live[X->n_live++] = k;
}

static void live_remove(struct cx *X, uint32_t k)
{
	uint32_t pos = X->live_pos[k], last = X->live[--X->n_live];

	MP_ASSERT(pos != UINT32_MAX);
	X->live[pos] = last;
	X->live_pos[last] = pos;
	X->live_pos[k] = UINT32_MAX;
}

/* "; 'y' (schedule[k]) at [a, b) overlaps it" for the live allocations that
 * overlap [off, off + n) other than self: NULL when none, else malloc'd. */
static char *culprits(const struct cx *X, uint64_t off, uint64_t n, int32_t self)
{
	char buf[600];
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t q = 0; q < X->n_live && used + 1 < sizeof(buf); q++) {
		uint32_t k = X->live[q];

		if ((int32_t)k == self || !overlaps(X->place_off[k], X->place_bytes[k], off, n))
			continue;
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "; '%s' (schedule[%u]) at [%llu, %llu) overlaps it",
					  tname(X, X->s->a[k].tensor), k, (ull)X->place_off[k],
					  (ull)(X->place_off[k] + X->place_bytes[k]));
	}
	return used ? mp_xstrdup(buf) : NULL;
}

/* The device address of offset off (see struct cx). */
static uint8_t *dev_at(const struct cx *X, uint64_t off)
{
	return X->o.alloc == MP_EXEC_ASYNC ? (uint8_t *)(uintptr_t)off : X->arena + off;
}

static cudaEvent_t ev(const struct cx *X, int kind, uint32_t i)
{
	return X->ev[(size_t)kind * X->s->n + i];
}

static int record(struct cx *X, int kind, uint32_t i, cudaStream_t st)
{
	X->rec[(size_t)kind * X->s->n + i] = 1;
	return CU(X, cudaEventRecord(ev(X, kind, i), st), "cudaEventRecord (schedule[%u])", i);
}

static int wait_ev(struct cx *X, cudaStream_t st, cudaEvent_t e, uint32_t i)
{
	return CU(X, cudaStreamWaitEvent(st, e, 0), "cudaStreamWaitEvent (schedule[%u])", i);
}

static uint32_t grid_for(const struct cx *X, uint64_t n)
{
	uint64_t words = n / 8 + 1, blocks = (words + THREADS - 1) / THREADS, most = (uint64_t)X->sms * 4;

	return (uint32_t)(blocks < most ? blocks : most);
}

static int new_slot(struct cx *X)
{
	MP_ASSERT(X->slot_next < X->n_slots);
	return (int)X->slot_next++;
}

/* Checksum n device bytes at off into a new slot on st. */
static int launch_hash(struct cx *X, uint32_t i, cudaStream_t st, uint64_t off, uint64_t n, int *slot)
{
	*slot = new_slot(X);
	X->hashed += n;
	if (!n)
		return 0;
	k_hash<<<grid_for(X, n), THREADS, 0, st>>>(dev_at(X, off), n, X->slots + *slot);
	X->launches++;
	return CU(X, cudaGetLastError(), "a checksum kernel (schedule[%u])", i);
}

/* Write the pattern of seed into n device bytes at off on the compute
 * stream; its checksum into a new slot (slot NULL: none). */
static int launch_fill(struct cx *X, uint32_t i, uint64_t off, uint64_t n, uint64_t seed, int *slot)
{
	ull *dst = NULL;

	if (slot) {
		*slot = new_slot(X);
		dst = X->slots + *slot;
		X->hashed += n;
	}
	if (!n)
		return 0;
	k_fill<<<grid_for(X, n), THREADS, 0, X->cs>>>(dev_at(X, off), n, seed, dst);
	X->launches++;
	return CU(X, cudaGetLastError(), "a pattern kernel (schedule[%u])", i);
}

static void add_check(struct cx *X, uint32_t act, int32_t tensor, int32_t op, uint8_t kind, int slot,
		      struct ver want, char *extra)
{
	struct chk *c;

	mp_grow((void **)&X->ck, &X->cap_ck, X->n_ck + 1, sizeof(*X->ck));
	c = &X->ck[X->n_ck++];
	c->act = act;
	c->tensor = tensor;
	c->op = op;
	c->kind = kind;
	c->slot = slot;
	c->want = want;
	c->extra = extra;
}

/* ---- issuing the schedule ---- */

/* async: drop tensor t's device allocation, if any, on stream st (see
 * release). */
static int async_drop(struct cx *X, int32_t t, cudaStream_t st)
{
	uint8_t *d = X->t[t].dev;

	X->t[t].dev = NULL; /* after a failed free: lost, not freed twice */
	if (!d)
		return 0;
	return CU(X, cudaFreeAsync(d, st), "cudaFreeAsync ('%s')", tname(X, t));
}

/* async: device memory for allocation i of its tensor, from the memory
 * pool.  An alloc allocates on the compute stream, which uses it in stream
 * order.  A swap-in allocates on the h2d stream, after waiting on its mark
 * (the compute issued before it, recorded by do_swap_in), just before its
 * copy is issued there (async swap-ins wait for no release: the queue is
 * empty): the copy writes it in stream order, compute reads it only after
 * waiting on the swap-in's event, and where the allocator must wait for
 * memory that a swap-out frees on the d2h stream, the copy waits, as in the
 * arena, not compute.  The memory counts from the copy's start, as the plan
 * counts it.  A persistent tensor carried from the last iteration keeps its
 * allocation where the plan allocates it again with the same size (do_alloc
 * then keeps its bytes, as the arena does at the same offset); otherwise
 * that allocation is freed first. */
static int async_take(struct cx *X, uint32_t i, uint64_t bytes)
{
	const struct mp_action *a = &X->s->a[i];
	struct tens *T = &X->t[a->tensor];
	cudaStream_t st = X->cs;
	void *d = NULL;

	if (T->carry && a->kind == MP_ACT_ALLOC && T->carry_bytes == bytes)
		return 0;
	T->carry = false;
	if (async_drop(X, a->tensor, X->cs) < 0)
		return -1;
	if (!bytes) /* no call: what a 0-byte cudaMallocAsync returns is not documented */
		return 0;
	if (a->kind == MP_ACT_SWAP_IN) {
		MP_ASSERT(X->head_pq == X->n_pq && X->rec[(size_t)EV_M * X->s->n + i]);
		st = X->h2d;
		if (wait_ev(X, st, ev(X, EV_M, i), i) < 0)
			return -1;
	}
	if (CU(X, cudaMallocFromPoolAsync(&d, bytes, X->mpool, st), "cudaMallocFromPoolAsync (schedule[%u], %llu bytes)",
	       i, (ull)bytes) < 0)
		return -1;
	T->dev = (uint8_t *)d;
	return 0;
}

/* Take allocation i's bytes: at its plan offset (arena), pool_alloc's
 * offset (pool: a violation when no free run is long enough; the host
 * backend's words), or from the memory pool (async).  0, or -1 after a
 * violation or a CUDA error. */
static int place(struct cx *X, uint32_t i, uint64_t bytes)
{
	uint64_t off = 0, end;
	char why[200];

	switch (X->o.alloc) {
	case MP_EXEC_ARENA:
		off = X->p->offset ? X->p->offset[i] : UINT64_MAX;
		if (off == UINT64_MAX) {
			fail(X, i, "has no offset in the arena");
			return -1;
		}
		if (mp_add_u64(off, bytes, &end) < 0 || end > X->arena_bytes) {
			fail(X, i, "[%llu, %llu) lies beyond the arena (%llu bytes)", (ull)off, (ull)(off + bytes),
			     (ull)X->arena_bytes);
			return -1;
		}
		if (off % 8) {
			fail(X, i, "offset %llu is not 8-byte aligned", (ull)off);
			return -1;
		}
		if (end > X->arena_high)
			X->arena_high = end;
		break;
	case MP_EXEC_POOL:
		off = pool_alloc(&X->pool, bytes); /* 1 KiB aligned, inside the arena */
		if (off == UINT64_MAX) {
			fail(X, i, "%s", pool_refusal(&X->pool, bytes, why, sizeof(why)));
			return -1;
		}
		break;
	case MP_EXEC_ASYNC:
		if (async_take(X, i, bytes) < 0)
			return -1;
		off = (uint64_t)(uintptr_t)X->t[X->s->a[i].tensor].dev;
		break;
	}
	X->place_off[i] = off;
	X->place_bytes[i] = bytes;
	X->rel[i] = -1;
	live_add(X, i);
	return 0;
}

/* Action i (a free or a swap-out) releases its tensor's allocation: in the
 * pool its blocks are free again at once, in issue order (an allocation or
 * a swap-in that takes bytes a swap-out is still reading waits for that
 * copy, as in the arena); with async the memory is freed on st, the stream
 * that used it last: the compute stream for a free (every kernel that
 * touched it was issued there, and a swap-in's copy into it was waited for
 * before anything read it), the d2h stream for a swap-out (its checksum and
 * copy are the last uses, issued there; freeing on the compute stream after
 * waiting for the copy would stall compute, which the plan does not model).
 * The allocator orders whatever reuses the memory after the free. */
static int release(struct cx *X, uint32_t i, struct tens *T, cudaStream_t st)
{
	const uint32_t k = (uint32_t)T->cur;

	X->rel[k] = (int32_t)i;
	X->rel_of[i] = (int32_t)k;
	live_remove(X, k);
	T->cur = -1;
	if (X->o.alloc == MP_EXEC_POOL)
		pool_free(&X->pool, X->place_off[k], X->place_bytes[k]);
	return X->o.alloc == MP_EXEC_ASYNC ? async_drop(X, X->s->a[i].tensor, st) : 0;
}

/* The latest swap-out issued at or after d2h entry `from` whose bytes overlap
 * [off, off + n) or whose tensor is t (t -1: none); -1 if none. */
static int32_t last_swap_out(const struct cx *X, uint32_t from, uint64_t off, uint64_t n, int32_t t)
{
	for (uint32_t q = X->n_dq; q-- > from;)
		if (X->dq[q].tensor == t || overlaps(X->dq[q].off, X->dq[q].held, off, n))
			return (int32_t)q;
	return -1;
}

/* Issue the queued swap-ins, in order, whose every dependency has its
 * release event recorded.  The copy starts after the compute issued before
 * the swap-in (its mark), after the swap-outs still reading its bytes or
 * writing its host buffer, and after each dependency's release. */
static int issue_pending(struct cx *X)
{
	while (X->head_pq < X->n_pq) {
		struct pend *j = &X->pq[X->head_pq];
		int32_t q;
		int slot = -1;

		for (uint32_t d = 0; d < j->n_dep; d++)
			if (X->rel[X->dep[j->dep_at + d]] < 0)
				return 0;
		if (wait_ev(X, X->h2d, ev(X, EV_M, j->act), j->act) < 0)
			return -1;
		for (uint32_t d = 0; d < j->n_dep; d++)
			if (wait_ev(X, X->h2d, ev(X, EV_E, (uint32_t)X->rel[X->dep[j->dep_at + d]]), j->act) < 0)
				return -1;
		q = last_swap_out(X, X->h2d_waited_dq, j->off, j->bytes, j->tensor);
		if (q >= 0) {
			if (wait_ev(X, X->h2d, ev(X, EV_E, X->dq[q].act), j->act) < 0)
				return -1;
			X->h2d_waited_dq = (uint32_t)q + 1;
		}
		if (record(X, EV_S, j->act, X->h2d) < 0)
			return -1;
		if (j->bytes && CU(X, cudaMemcpyAsync(dev_at(X, j->off), X->t[j->tensor].host, j->bytes,
						      cudaMemcpyHostToDevice, X->h2d),
				   "cudaMemcpyAsync host to device (schedule[%u], %llu bytes)", j->act, (ull)j->bytes) < 0)
			return -1;
		if (record(X, EV_E, j->act, X->h2d) < 0)
			return -1;
		if (j->want.valid && X->checking) {
			if (launch_hash(X, j->act, X->h2d, j->off, j->bytes, &slot) < 0)
				return -1;
			add_check(X, j->act, j->tensor, -1, CK_IN, slot, j->want, NULL);
			X->swaps++;
		}
		if (record(X, EV_D, j->act, X->h2d) < 0)
			return -1;
		X->issued[j->act] = 1;
		X->head_pq++;
	}
	return 0;
}

/* A queued swap-in that cannot be issued: its first unreleased dependency
 * (allocation index), searching queued swap-ins up to `upto` (UINT32_MAX:
 * all).  Sets *job.  -1 if none. */
static int64_t blocked_dep(const struct cx *X, uint32_t upto, const struct pend **job)
{
	for (uint32_t q = X->head_pq; q < X->n_pq; q++) {
		const struct pend *j = &X->pq[q];

		for (uint32_t d = 0; d < j->n_dep; d++) {
			uint32_t k = X->dep[j->dep_at + d];

			if (X->rel[k] < 0) {
				*job = j;
				return k;
			}
		}
		if (j->act == upto)
			break;
	}
	return -1;
}

static int do_alloc(struct cx *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	int32_t t = a->tensor, q;
	const struct mp_tensor *tt = &X->net->tensors[t];
	struct tens *T = &X->t[t];

	if (T->ls != LS_ABSENT) {
		fail(X, i, T->ls == LS_OUT ? "already allocated, and on the host (swap it in)" : "already allocated");
		return -1;
	}
	if (a->bytes < tt->bytes && tt->kind != MP_TK_WORKSPACE) {
		fail(X, i, "reserves %llu bytes for a tensor of %llu", (ull)a->bytes, (ull)tt->bytes);
		return -1;
	}
	/* async: the allocation may wait on the compute stream (for memory a
	 * swap-out frees on the d2h stream): timed from EV_S to EV_E */
	if (X->o.alloc == MP_EXEC_ASYNC && record(X, EV_S, i, X->cs) < 0)
		return -1;
	if (place(X, i, a->bytes) < 0)
		return -1;
	/* bytes a swap-out is still reading are not free yet (async: the
	 * allocator orders its own reuse) */
	q = X->o.alloc == MP_EXEC_ASYNC ? -1 : last_swap_out(X, X->cs_waited_dq, X->place_off[i], a->bytes, -1);
	if (q >= 0) {
		if (record(X, EV_S, i, X->cs) < 0 || wait_ev(X, X->cs, ev(X, EV_E, X->dq[q].act), i) < 0)
			return -1;
		X->cs_waited_dq = (uint32_t)q + 1;
	}
	if (record(X, EV_E, i, X->cs) < 0)
		return -1;
	T->ls = LS_ALLOC;
	T->cur = (int32_t)i;
	T->at_alloc = (int32_t)i;
	if (sched_persistent(tt)) {
		/* resident from the start; a persistent tensor found where the
		 * last iteration left it keeps its bytes, else gets its initial ones */
		if (!(T->carry && T->carry_off == X->place_off[i] && T->carry_bytes == a->bytes && T->expect.valid)) {
			int slot;

			if (launch_fill(X, i, X->place_off[i], tt->bytes, pattern_seed(t, -1), &slot) < 0)
				return -1;
			T->expect = ver_make(0, slot, -1);
		}
		T->ls = LS_RES;
	}
	T->carry = false;
	return 0;
}

static int do_free(struct cx *X, uint32_t i)
{
	struct tens *T = &X->t[X->s->a[i].tensor];

	switch (T->ls) {
	case LS_ALLOC:
	case LS_RES:
		break;
	case LS_IN:
		fail(X, i, "not resident (its swap-in at schedule[%d] was never waited for)", T->at_in);
		return -1;
	case LS_OUT:
		fail(X, i, "not resident (swapped out at schedule[%d])", T->at_out);
		return -1;
	default:
		if (T->at_free >= 0)
			fail(X, i, "not resident (already freed at schedule[%d])", T->at_free);
		else
			fail(X, i, "not resident (never allocated)");
		return -1;
	}
	if (record(X, EV_E, i, X->cs) < 0 || release(X, i, T, X->cs) < 0)
		return -1;
	T->ls = LS_ABSENT;
	T->at_free = (int32_t)i;
	return issue_pending(X);
}

static int do_swap_out(struct cx *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	int32_t t = a->tensor;
	struct tens *T = &X->t[t];
	uint64_t off, held, bytes;
	struct ver want;
	int slot = -1;

	if (T->ls != LS_ALLOC && T->ls != LS_RES) {
		fail(X, i, "not resident%s", T->ls == LS_IN ? " (its swap-in was never waited for)" :
		     T->ls == LS_OUT ? " (already swapped out)" : "");
		return -1;
	}
	off = X->place_off[T->cur];
	held = X->place_bytes[T->cur];
	bytes = X->net->tensors[t].bytes < held ? X->net->tensors[t].bytes : held;
	want = T->ls == LS_RES ? T->expect : ver_none();
	/* after the compute issued before it (which last touched the tensor) */
	if (record(X, EV_M, i, X->cs) < 0 || wait_ev(X, X->d2h, ev(X, EV_M, i), i) < 0)
		return -1;
	if (want.valid && X->checking) {
		if (launch_hash(X, i, X->d2h, off, bytes, &slot) < 0)
			return -1;
		add_check(X, i, t, -1, CK_OUT, slot, want, NULL);
		X->swaps++;
	}
	if (record(X, EV_S, i, X->d2h) < 0)
		return -1;
	if (bytes && CU(X, cudaMemcpyAsync(T->host, dev_at(X, off), bytes, cudaMemcpyDeviceToHost, X->d2h),
			"cudaMemcpyAsync device to host (schedule[%u], %llu bytes)", i, (ull)bytes) < 0)
		return -1;
	if (record(X, EV_E, i, X->d2h) < 0)
		return -1;
	mp_grow((void **)&X->dq, &X->cap_dq, X->n_dq + 1, sizeof(*X->dq));
	X->dq[X->n_dq].act = i;
	X->dq[X->n_dq].tensor = t;
	X->dq[X->n_dq].off = off;
	X->dq[X->n_dq].held = held;
	X->n_dq++;
	T->host_ver = want;
	if (release(X, i, T, X->d2h) < 0)
		return -1;
	T->ls = LS_OUT;
	T->at_out = (int32_t)i;
	return issue_pending(X);
}

static int do_swap_in(struct cx *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	int32_t t = a->tensor;
	struct tens *T = &X->t[t];
	uint64_t bytes = X->net->tensors[t].bytes;
	struct pend j;

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
			fail(X, i, "was never swapped out (freed at schedule[%d])", T->at_free);
		else
			fail(X, i, "was never swapped out");
		return -1;
	} else {
		fail(X, i, "is already on the device");
		return -1;
	}
	/* in the arena, it waits for the live allocations holding the bytes it
	 * writes ... (the pool and the allocator never hand out bytes a live
	 * allocation holds) */
	j.dep_at = X->n_dep;
	if (X->o.alloc == MP_EXEC_ARENA && X->p->offset && X->p->offset[i] != UINT64_MAX)
		for (uint32_t q = 0; q < X->n_live; q++) {
			uint32_t k = X->live[q];

			if (overlaps(X->place_off[k], X->place_bytes[k], X->p->offset[i], bytes)) {
				mp_grow((void **)&X->dep, &X->cap_dep, X->n_dep + 1, sizeof(*X->dep));
				X->dep[X->n_dep++] = k;
			}
		}
	/* the compute issued before it (before place: an async swap-in
	 * allocates after it) */
	if (record(X, EV_M, i, X->cs) < 0 || place(X, i, bytes) < 0)
		return -1;
	j.act = i;
	j.tensor = t;
	j.off = X->place_off[i];
	j.bytes = bytes;
	/* ... and for those compute allocates after this issue that the plan's
	 * simulation placed (and ended) in these bytes before the copy starts:
	 * a copy waiting for its stream starts late, and the arena reuses the
	 * bytes meanwhile.  Compute-side actions are in time order.  (Its
	 * tensor's own swap-out and every overlapping one are waited for when
	 * the copy is issued.) */
	for (uint32_t k = i + 1; X->o.alloc == MP_EXEC_ARENA && k < X->s->n; k++) {
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
	mp_grow((void **)&X->pq, &X->cap_pq, X->n_pq + 1, sizeof(*X->pq));
	X->pq[X->n_pq++] = j;
	T->ls = LS_IN;
	T->cur = (int32_t)i;
	T->at_in = (int32_t)i;
	return issue_pending(X);
}

static int do_wait(struct cx *X, uint32_t i)
{
	struct tens *T = &X->t[X->s->a[i].tensor];

	if (T->ls == LS_RES || T->ls == LS_ALLOC) {
		if (record(X, EV_S, i, X->cs) < 0 || record(X, EV_E, i, X->cs) < 0)
			return -1;
		return 0;
	}
	if (T->ls == LS_OUT && T->at_out >= 0) {
		/* for its swap-out's copy (issued at once on the d2h stream):
		 * the memory is free from its end on */
		return record(X, EV_S, i, X->cs) < 0 || wait_ev(X, X->cs, ev(X, EV_E, (uint32_t)T->at_out), i) < 0 ||
		       record(X, EV_E, i, X->cs) < 0 ? -1 : 0;
	}
	if (T->ls != LS_IN) {
		fail(X, i, "nothing to wait for");
		return -1;
	}
	if (!X->issued[T->at_in]) {
		const struct pend *j = NULL;
		int64_t k;

		if (issue_pending(X) < 0)
			return -1;
		if (!X->issued[T->at_in] && (k = blocked_dep(X, (uint32_t)T->at_in, &j)) >= 0) {
			fail(X, i, "its swap-in (schedule[%u]) copies '%s' into [%llu, %llu), which "
			     "'%s' (schedule[%u]) still holds, and compute would free it only after this wait",
			     j->act, tname(X, j->tensor), (ull)j->off, (ull)(j->off + j->bytes),
			     tname(X, X->s->a[k].tensor), (uint32_t)k);
			return -1;
		}
		MP_ASSERT(X->issued[T->at_in]);
	}
	if (record(X, EV_S, i, X->cs) < 0 || wait_ev(X, X->cs, ev(X, EV_D, (uint32_t)T->at_in), i) < 0 ||
	    record(X, EV_E, i, X->cs) < 0)
		return -1;
	T->ls = T->expect.valid ? LS_RES : LS_ALLOC;
	return 0;
}

/* Is x readable by action i? */
static int check_readable(struct cx *X, uint32_t i, int32_t x)
{
	const struct tens *T = &X->t[x];

	switch (T->ls) {
	case LS_RES:
		return 0;
	case LS_ALLOC:
		fail(X, i, "reads '%s', which nothing has written since its allocation at schedule[%d]", tname(X, x),
		     T->at_alloc);
		return -1;
	case LS_IN:
		fail(X, i, "reads '%s' while its swap-in (schedule[%d]) may still be copying: no wait before the read",
		     tname(X, x), T->at_in);
		return -1;
	case LS_OUT:
		fail(X, i, "reads '%s', which was swapped out at schedule[%d] and not swapped back in", tname(X, x),
		     T->at_out);
		return -1;
	default:
		if (T->at_free >= 0)
			fail(X, i, "reads '%s', which was freed at schedule[%d]", tname(X, x), T->at_free);
		else
			fail(X, i, "reads '%s', which is not allocated", tname(X, x));
		return -1;
	}
}

/* Where tensor t is now (kern_run's addresses). */
static void *tensor_addr(void *ctx, int32_t t)
{
	const struct cx *X = (const struct cx *)ctx;

	return dev_at(X, X->place_off[X->t[t].cur]);
}

/* compute or recompute: stamp, checksum the inputs, write the outputs, spin
 * to the op's end, on the compute stream */
static int do_compute(struct cx *X, uint32_t i)
{
	const struct mp_action *a = &X->s->a[i];
	const int32_t o = a->op;
	const struct mp_op *op = &X->net->ops[o];
	const bool re = a->kind == MP_ACT_RECOMPUTE;
	const bool first = !X->computed[o];
	const struct kern *K = X->kern ? X->kern[i] : NULL;
	struct ver *inv = &X->in_ver[X->in_at[o]], *outv = &X->out_ver[X->out_at[o]];
	uint64_t ws = 0, wsoff = 0;
	double ms = 0, dur_ns;

	if (!re && !first) {
		fail(X, i, "op computed twice (use recompute)");
		return -1;
	}
	if (re && !op->recomputable) {
		fail(X, i, "op cannot be recomputed");
		return -1;
	}
	for (uint32_t k = 0; k < op->n_in; k++)
		if (check_readable(X, i, op->in[k]) < 0)
			return -1;
	for (uint32_t k = 0; k < op->n_out; k++) {
		uint8_t ls = X->t[op->out[k]].ls;

		if (ls != LS_ALLOC && ls != LS_RES) {
			fail(X, i, "writes '%s', which is not %s", tname(X, op->out[k]),
			     ls == LS_IN ? "resident yet (no wait for its swap-in)" : "allocated");
			return -1;
		}
	}
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		int32_t x = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

		if (X->place_bytes[X->t[x].cur] < X->net->tensors[x].bytes) {
			fail(X, i, "'%s' has %llu bytes allocated, less than its %llu", tname(X, x),
			     (ull)X->place_bytes[X->t[x].cur], (ull)X->net->tensors[x].bytes);
			return -1;
		}
	}
	sched_action_cost(X->net, X->s, a, &ms, &ws);
	if (ws > 0) {
		const struct tens *W = op->ws >= 0 ? &X->t[op->ws] : NULL;

		if (!W || (W->ls != LS_ALLOC && W->ls != LS_RES) || X->place_bytes[W->cur] < ws) {
			fail(X, i, "its workspace '%s' is not allocated", op->ws >= 0 ? tname(X, op->ws) : "(none)");
			return -1;
		}
		wsoff = X->place_off[W->cur];
	}
	if (record(X, EV_S, i, X->cs) < 0)
		return -1;
	if (!K) {
		k_stamp<<<1, 1, 0, X->cs>>>(X->tim + 3 * (size_t)i);
		X->launches++;
		if (CU(X, cudaGetLastError(), "the stamp kernel (schedule[%u])", i) < 0)
			return -1;
	}
	/* read every input: its bytes must be what the program wrote last (a
	 * recompute: what the op read the first time) */
	for (uint32_t k = 0; X->checking && k < op->n_in; k++) {
		int32_t x = op->in[k];
		const struct tens *T = &X->t[x];
		struct ver want = re && !first ? inv[k] : T->expect;
		uint64_t off = X->place_off[T->cur], n = X->net->tensors[x].bytes;
		int slot;

		if (!re)
			inv[k] = want;
		if (!want.valid)
			continue;
		if (launch_hash(X, i, X->cs, off, n, &slot) < 0)
			return -1;
		add_check(X, i, x, o, CK_READ, slot, want, culprits(X, off, n, T->cur));
		X->reads++;
	}
	/* a gradient another op wrote this iteration is added to: read it */
	for (uint32_t k = 0; X->checking && !re && k < op->n_out; k++) {
		int32_t x = op->out[k];
		const struct tens *T = &X->t[x];
		uint64_t off = X->place_off[T->cur], n = X->net->tensors[x].bytes;
		int slot;

		if (X->net->tensors[x].kind != MP_TK_GRADIENT || !T->expect.valid || T->expect.writer == o)
			continue;
		if (launch_hash(X, i, X->cs, off, n, &slot) < 0)
			return -1;
		add_check(X, i, x, o, CK_READ, slot, T->expect, culprits(X, off, n, T->cur));
		X->reads++;
	}
	if (K) {
		char why[256];

		if (kern_run(X->kl, K, tensor_addr, X, dev_at(X, wsoff), why, sizeof(why)) < 0) {
			mp_error_set(&X->err, "schedule[%u] %s: %s", i, op->name, why);
			X->cuda_failed = true;
			return -1;
		}
		X->launches++;
	}
	/* the outputs: a timed op writes each with its pattern, a real kernel
	 * has written them; their checksums become what later reads expect.  A
	 * recompute must rebuild what the first run wrote. */
	for (uint32_t k = 0; k < op->n_out; k++) {
		int32_t x = op->out[k];
		struct tens *T = &X->t[x];
		uint64_t off = X->place_off[T->cur], n = X->net->tensors[x].bytes;
		int h = -1, again;

		if (!K && launch_fill(X, i, off, n, pattern_seed(x, o), X->checking ? &h : NULL) < 0)
			return -1;
		if (K && X->checking && launch_hash(X, i, X->cs, off, n, &h) < 0)
			return -1;
		if (h < 0) {
			if (!re)
				T->expect = outv[k] = ver_none();
		} else if (re) {
			struct ver want = !first && outv[k].valid ? outv[k] : ver_make(0, h, o);

			/* a pattern is read back; a kernel's output was hashed as
			 * written.  A rebuild that runs otherwise than the first
			 * run (timed against real, other conv algorithms, which
			 * round differently; dropout, whose mask differs by
			 * design) is not compared: later reads expect what the
			 * rebuild wrote. */
			if (!K && launch_hash(X, i, X->cs, off, n, &again) < 0)
				return -1;
			if (kern_same_run(K, X->op_kern ? X->op_kern[o] : NULL)) {
				add_check(X, i, x, o, CK_REBUILT, K ? h : again, want, culprits(X, off, n, T->cur));
				X->recomputes++;
			} else {
				T->expect = ver_make(0, h, o);
			}
		} else {
			T->expect = ver_make(0, h, o);
			outv[k] = T->expect;
		}
		T->ls = LS_RES;
	}
	if (!K && ws > 0 && launch_fill(X, i, wsoff, ws, pattern_seed(op->ws, o), NULL) < 0)
		return -1;
	X->computed[o] = 1;
	if (!K) {
		dur_ns = ms * X->o.time_scale * 1e6 / X->timer_ratio;
		k_spin<<<1, 1, 0, X->cs>>>(X->tim + 3 * (size_t)i, (ull)llround(fmax(dur_ns, 0)));
		X->launches++;
		if (CU(X, cudaGetLastError(), "the timed kernel (schedule[%u])", i) < 0)
			return -1;
	}
	return record(X, EV_E, i, X->cs);
}

/* ---- iterations ---- */

static int mev_cmp(const void *pa, const void *pb)
{
	const struct mev *a = (const struct mev *)pa, *b = (const struct mev *)pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static void log_ev(struct cx *X, double t, uint32_t seq, int64_t delta, int32_t step)
{
	mp_grow((void **)&X->log, &X->cap_log, X->n_log + 1, sizeof(*X->log));
	X->log[X->n_log].t = t;
	X->log[X->n_log].seq = seq;
	X->log[X->n_log].delta = delta;
	X->log[X->n_log].step = step;
	X->n_log++;
}

struct iter_rec {
	double wall_ms, stall_ms, alloc_wait_ms, overrun_ms, busy_ms[2], need_scale;
	uint32_t overruns;
	uint64_t peak;
	uint32_t peak_action;
	struct mp_exec_act *act;   /* [n_act] */
	uint64_t *step_bytes;      /* [n_steps] */
};

static void sample_memory(struct cx *X)
{
	size_t fr = 0, tot = 0;

	/* a failure here only loses a sample */
	if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot >= fr && tot - fr > X->used_peak)
		X->used_peak = tot - fr;
}

static void iteration_reset(struct cx *X)
{
	uint32_t n = X->s->n;

	for (uint32_t c = 0; c < X->n_ck; c++)
		free(X->ck[c].extra);
	X->n_ck = X->n_log = X->n_dep = X->n_live = X->n_pq = X->head_pq = X->n_dq = 0;
	X->cs_waited_dq = X->h2d_waited_dq = 0;
	X->slot_next = 0;
	X->reads = X->swaps = X->recomputes = X->hashed = X->launches = 0;
	memset(X->rec, 0, (size_t)EV_KINDS * n);
	memset(X->issued, 0, n);
	for (uint32_t i = 0; i < n; i++) {
		X->live_pos[i] = UINT32_MAX;
		X->rel[i] = -1;
	}
	memset(X->computed, 0, X->net->n_ops);
	for (uint32_t t = 0; t < X->net->n_tensors; t++) {
		struct tens *T = &X->t[t];

		T->ls = LS_ABSENT;
		T->cur = T->at_alloc = T->at_free = T->at_out = T->at_in = -1;
		if (!T->carry)
			T->expect = ver_none();
	}
	if (X->o.alloc == MP_EXEC_POOL)
		pool_reset(&X->pool);
}

/* async, after an iteration: free what it left allocated but the carried
 * persistent tensors' allocations (weights stay on the device), on the
 * compute stream, which has joined the copy streams. */
static int async_release_rest(struct cx *X)
{
	for (uint32_t t = 0; t < X->net->n_tensors; t++)
		if (!X->t[t].carry && async_drop(X, (int32_t)t, X->cs) < 0)
			return -1;
	return 0;
}

/* Milliseconds from the iteration's start to event (kind, i). */
static int ev_ms(struct cx *X, int kind, uint32_t i, double *out)
{
	float ms = 0;

	if (CU(X, cudaEventElapsedTime(&ms, X->it0, ev(X, kind, i)), "cudaEventElapsedTime (schedule[%u])", i) < 0)
		return -1;
	*out = ms;
	return 0;
}

/* The first failed checksum, by action index: 0 if none before `before`. */
static int compare_checks(struct cx *X, uint32_t before)
{
	const struct chk *bad = NULL;
	uint64_t got = 0, want = 0;

	for (uint32_t c = 0; c < X->n_ck; c++) {
		const struct chk *k = &X->ck[c];
		uint64_t g = fin(X->h_slots[k->slot], X->net->tensors[k->tensor].bytes);
		uint64_t w = ver_value(X, &k->want, k->tensor);

		if (g != w && k->act < before && (!bad || k->act < bad->act)) {
			bad = k;
			got = g;
			want = w;
		}
	}
	if (!bad)
		return 0;
	{
		char w1[200];
		const char *extra = bad->extra ? bad->extra : "";

		X->failed = false; /* the checksum came first */
		switch (bad->kind) {
		case CK_READ:
			fail(X, bad->act, "'%s' does not hold %s (checksum %016llx, expected %016llx)%s", tname(X, bad->tensor),
			     ver_what(X, &bad->want, w1, sizeof(w1)), (ull)got, (ull)want, extra);
			break;
		case CK_REBUILT:
			fail(X, bad->act, "rebuilt '%s' does not hold what '%s' wrote (checksum %016llx, expected %016llx)%s",
			     tname(X, bad->tensor), X->net->ops[bad->op].name, (ull)got, (ull)want, extra);
			break;
		case CK_OUT:
			fail(X, bad->act, "'%s' does not hold %s (checksum %016llx, expected %016llx)", tname(X, bad->tensor),
			     ver_what(X, &bad->want, w1, sizeof(w1)), (ull)got, (ull)want);
			break;
		default:
			fail(X, bad->act, "the copy does not hold %s (checksum %016llx, expected %016llx)",
			     ver_what(X, &bad->want, w1, sizeof(w1)), (ull)got, (ull)want);
			break;
		}
	}
	return -1;
}

/* Issue one iteration, wait for it, compare its checksums and, when rec is
 * given, take its measurements.  0, or -1 (X->failed: a violation; else a
 * CUDA error). */
static int run_iteration(struct cx *X, struct iter_rec *rec)
{
	const struct mp_schedule *s = X->s;
	int rc = 0;
	float wall = 0;

	iteration_reset(X);
	if (CU(X, cudaMemsetAsync(X->slots, 0, (size_t)X->n_slots * sizeof(ull), X->cs), "cudaMemsetAsync (check slots)") < 0 ||
	    CU(X, cudaEventRecord(X->it0, X->cs), "cudaEventRecord (iteration start)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->h2d, X->it0, 0), "cudaStreamWaitEvent (iteration start)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->d2h, X->it0, 0), "cudaStreamWaitEvent (iteration start)") < 0)
		return -1;
	for (uint32_t i = 0; i < s->n; i++) {
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
		if (i % 64 == 63)
			sample_memory(X);
	}
	/* the end of an iteration waits for every copy (TENSILE III-D): a
	 * swap-in still queued waits for a free that never comes */
	if (rc == 0 && issue_pending(X) == 0 && X->head_pq < X->n_pq) {
		const struct pend *j = NULL;
		int64_t k = blocked_dep(X, UINT32_MAX, &j);

		MP_ASSERT(k >= 0);
		fail(X, j->act, "copies into [%llu, %llu), which '%s' (schedule[%u]) still holds at the end of the iteration",
		     (ull)j->off, (ull)(j->off + j->bytes), tname(X, X->s->a[k].tensor), (uint32_t)k);
	}
	/* join the streams (also after a violation: what was issued must end
	 * before the buffers go) */
	if (X->cuda_failed)
		return -1;
	if (CU(X, cudaEventRecord(X->hj, X->h2d), "cudaEventRecord (h2d end)") < 0 ||
	    CU(X, cudaEventRecord(X->dj, X->d2h), "cudaEventRecord (d2h end)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->cs, X->hj, 0), "cudaStreamWaitEvent (h2d end)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->cs, X->dj, 0), "cudaStreamWaitEvent (d2h end)") < 0 ||
	    CU(X, cudaEventRecord(X->it1, X->cs), "cudaEventRecord (iteration end)") < 0 ||
	    CU(X, cudaEventSynchronize(X->it1), "the iteration (cudaEventSynchronize)") < 0)
		return -1;
	sample_memory(X);
	if (CU(X, cudaMemcpy(X->h_slots, X->slots, (size_t)(X->slot_next ? X->slot_next : 1) * sizeof(ull),
			      cudaMemcpyDeviceToHost),
	       "cudaMemcpy (check slots)") < 0 ||
	    CU(X, cudaMemcpy(X->h_tim, X->tim, (size_t)3 * (s->n ? s->n : 1) * sizeof(ull), cudaMemcpyDeviceToHost),
	       "cudaMemcpy (op timers)") < 0)
		return -1;
	if (compare_checks(X, X->failed ? X->fail_at : UINT32_MAX) < 0 || X->failed)
		return -1;
	/* what the device computed this iteration becomes known for the next */
	for (uint32_t t = 0; t < X->net->n_tensors; t++) {
		struct tens *T = &X->t[t];

		if (T->expect.valid && T->expect.slot >= 0)
			T->expect = ver_make(ver_value(X, &T->expect, (int32_t)t), -1, T->expect.writer);
		if (T->host_ver.valid && T->host_ver.slot >= 0)
			T->host_ver = ver_make(ver_value(X, &T->host_ver, (int32_t)t), -1, T->host_ver.writer);
		T->carry = T->ls == LS_RES && T->cur >= 0 && sched_persistent(&X->net->tensors[t]);
		if (T->carry) {
			T->carry_off = X->place_off[T->cur];
			T->carry_bytes = X->place_bytes[T->cur];
		}
	}
	if (X->o.alloc == MP_EXEC_ASYNC && async_release_rest(X) < 0)
		return -1;
	if (!rec)
		return 0;
	if (CU(X, cudaEventElapsedTime(&wall, X->it0, X->it1), "cudaEventElapsedTime (iteration)") < 0)
		return -1;
	rec->wall_ms = wall;
	rec->stall_ms = rec->alloc_wait_ms = rec->overrun_ms = rec->busy_ms[0] = rec->busy_ms[1] = 0;
	rec->need_scale = 0;
	rec->overruns = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		struct mp_exec_act *m = &rec->act[i];
		const uint64_t held = X->place_bytes[i];
		double t0 = 0, t1 = 0;

		memset(m, 0, sizeof(*m));
		if (X->rec[(size_t)EV_S * s->n + i] && ev_ms(X, EV_S, i, &t0) < 0)
			return -1;
		if (X->rec[(size_t)EV_E * s->n + i] && ev_ms(X, EV_E, i, &t1) < 0)
			return -1;
		if (!X->rec[(size_t)EV_S * s->n + i])
			t0 = t1;
		switch (a->kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE: {
			const ull *tm = X->h_tim + 3 * (size_t)i;
			double ms = 0;
			uint64_t ws = 0;

			m->start_ms = t0;
			m->end_ms = t1;
			sched_action_cost(X->net, s, a, &ms, &ws);
			if (tm[2] > 0) {
				rec->overruns++;
				rec->overrun_ms += (double)tm[2] * X->timer_ratio / 1e6;
			}
			if (ms > 0)
				rec->need_scale = fmax(rec->need_scale, (double)tm[1] * X->timer_ratio / 1e6 / ms);
			log_ev(X, t0, 2 * i, 0, -1);
			log_ev(X, t1, 2 * i + 1, 0, a->kind == MP_ACT_RECOMPUTE ? -1 : X->step_of[i]);
			break;
		}
		case MP_ACT_ALLOC:
			m->start_ms = m->end_ms = t1;
			rec->alloc_wait_ms += t1 - t0;
			log_ev(X, t1, 2 * i, (int64_t)held, -1);
			break;
		case MP_ACT_FREE:
			m->start_ms = m->end_ms = t1;
			log_ev(X, t1, 2 * i, -(int64_t)X->place_bytes[X->rel_of[i]], -1);
			break;
		case MP_ACT_WAIT:
			m->start_ms = m->end_ms = t1;
			m->stall_ms = t1 - t0;
			rec->stall_ms += m->stall_ms;
			log_ev(X, t1, 2 * i, 0, -1);
			break;
		case MP_ACT_SWAP_OUT:
			m->start_ms = t0;
			m->end_ms = t1;
			rec->busy_ms[1] += t1 - t0;
			log_ev(X, t1, 2 * i, -(int64_t)X->place_bytes[X->rel_of[i]], -1);
			break;
		case MP_ACT_SWAP_IN:
			m->start_ms = t0;
			m->end_ms = t1;
			rec->busy_ms[0] += t1 - t0;
			log_ev(X, t0, 2 * i, (int64_t)held, -1);
			break;
		}
	}
	/* replay the memory events in measured-time order, as the host backend */
	{
		int64_t res = 0;
		uint32_t cur = 0, n_steps = X->p->sim.n_steps;
		bool cur_seen = false;

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
	return 0;
}

/* ---- setup ---- */


/* Device 0, its context created.  0; EXEC_NO_DEVICE or -1 with *err. */
int cuda_open_device(struct mp_error *err, cudaDeviceProp *prop)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e != cudaSuccess || n < 1) {
		mp_error_set(err, "the CUDA runtime finds no usable device: %s",
			     e != cudaSuccess ? cudaGetErrorString(e) : "none reported");
		return EXEC_NO_DEVICE;
	}
	if ((e = cudaSetDevice(0)) != cudaSuccess || (e = cudaFree(0)) != cudaSuccess ||
	    (e = cudaGetDeviceProperties(prop, 0)) != cudaSuccess) {
		mp_error_set(err, "CUDA error opening device 0: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
		return -1;
	}
	return 0;
}

/* The device's name, cut to n - 1 bytes. */
static void copy_name(char *dst, size_t n, const char *src)
{
	size_t k = strnlen(src, n - 1);

	memcpy(dst, src, k);
	dst[k] = 0;
}

/* The global timer against CUDA events: spin 20 ms by the timer three times
 * (after a 50 ms warm-up that also raises the clocks), timer_ratio = the
 * median event ms per timer ms. */
static int calibrate(struct cx *X)
{
	const double ms = 20;
	cudaEvent_t a = NULL, b = NULL;
	double r[3];
	int rc = -1;

	if (CU(X, cudaEventCreate(&a), "cudaEventCreate") < 0 || CU(X, cudaEventCreate(&b), "cudaEventCreate") < 0)
		goto out;
	k_calib<<<1, 1, 0, X->cs>>>((ull)50e6);
	if (CU(X, cudaGetLastError(), "the calibration kernel") < 0)
		goto out;
	for (int k = 0; k < 3; k++) {
		float got = 0;

		if (CU(X, cudaEventRecord(a, X->cs), "cudaEventRecord") < 0)
			goto out;
		k_calib<<<1, 1, 0, X->cs>>>((ull)(ms * 1e6));
		if (CU(X, cudaGetLastError(), "the calibration kernel") < 0 ||
		    CU(X, cudaEventRecord(b, X->cs), "cudaEventRecord") < 0 ||
		    CU(X, cudaEventSynchronize(b), "the calibration kernel") < 0 ||
		    CU(X, cudaEventElapsedTime(&got, a, b), "cudaEventElapsedTime") < 0)
			goto out;
		r[k] = got / ms;
	}
	X->timer_ratio = mp_median(r, 3);
	if (!(X->timer_ratio > 0.5 && X->timer_ratio < 2)) {
		mp_error_set(&X->err, "the GPU's global timer disagrees with CUDA events (%.3f event ms per timer ms): "
			     "timed kernels would not last their time", X->timer_ratio);
		X->cuda_failed = true;
		goto out;
	}
	rc = 0;
out:
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	return rc;
}

/* Launch every kernel once on a scratch buffer, so that lazily loaded
 * modules count in the memory measured before the arena. */
static int load_kernels(struct cx *X)
{
	uint8_t *scratch = NULL;
	int rc = -1;

	if (CU(X, cudaMalloc((void **)&scratch, 4096), "cudaMalloc (4 KiB scratch)") < 0)
		return -1;
	k_fill<<<1, THREADS, 0, X->cs>>>(scratch, 1024, 1, (ull *)(scratch + 2048));
	k_hash<<<1, THREADS, 0, X->cs>>>(scratch, 1024, (ull *)(scratch + 2048));
	k_stamp<<<1, 1, 0, X->cs>>>((ull *)(scratch + 3072));
	k_spin<<<1, 1, 0, X->cs>>>((ull *)(scratch + 3072), 0);
	if (CU(X, cudaGetLastError(), "loading the kernels") == 0 &&
	    CU(X, cudaStreamSynchronize(X->cs), "loading the kernels") == 0)
		rc = 0;
	cudaFree(scratch);
	return rc;
}

/* async: a memory pool of our own on device 0 (not the device's default
 * pool, which other code in the process may use or trim) that keeps what it
 * has reserved: with the release threshold at UINT64_MAX, memory freed in
 * one iteration stays reserved for the next, so that after the warm-up the
 * iterations reuse it and make no driver allocations. */
static int async_pool_create(struct cx *X)
{
	cudaMemPoolProps props;
	uint64_t keep = UINT64_MAX;  /* cuuint64_t */
	int ok = 0;

	if (CU(X, cudaDeviceGetAttribute(&ok, cudaDevAttrMemoryPoolsSupported, 0),
	       "cudaDeviceGetAttribute (memory pools supported)") < 0)
		return -1;
	if (!ok) {
		mp_error_set(&X->err, "--alloc async: device 0 does not support stream-ordered allocation (cudaMallocAsync)");
		X->cuda_failed = true;
		return -1;
	}
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.handleTypes = cudaMemHandleTypeNone;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = 0;
	if (CU(X, cudaMemPoolCreate(&X->mpool, &props), "cudaMemPoolCreate") < 0)
		return -1;
	return CU(X, cudaMemPoolSetAttribute(X->mpool, cudaMemPoolAttrReleaseThreshold, &keep),
		  "cudaMemPoolSetAttribute (release threshold)");
}

/* The memory pool's reserved and used memory: high-water marks, current. */
static const enum cudaMemPoolAttr async_high_attr[2] = { cudaMemPoolAttrReservedMemHigh, cudaMemPoolAttrUsedMemHigh };
static const enum cudaMemPoolAttr async_cur_attr[2] = { cudaMemPoolAttrReservedMemCurrent, cudaMemPoolAttrUsedMemCurrent };
static const char *const async_attr_name[2] = { "reserved", "used" };

/* async, after the warm-up, once its frees have run: the memory pool's
 * high-water marks start again (0 is the only value they may be set to; it
 * resets them), and what it holds now is their floor (async_read_high). */
static int async_reset_high(struct cx *X)
{
	if (CU(X, cudaStreamSynchronize(X->cs), "cudaStreamSynchronize (after the warm-up)") < 0)
		return -1;
	for (int k = 0; k < 2; k++) {
		uint64_t zero = 0;  /* cuuint64_t */

		if (CU(X, cudaMemPoolSetAttribute(X->mpool, async_high_attr[k], &zero), "cudaMemPoolSetAttribute (%s high-water)",
		       async_attr_name[k]) < 0 ||
		    CU(X, cudaMemPoolGetAttribute(X->mpool, async_cur_attr[k], &X->async_floor[k]),
		       "cudaMemPoolGetAttribute (%s now)", async_attr_name[k]) < 0)
			return -1;
	}
	return 0;
}

/* async, after the measured iterations: the reserved and used high-water
 * marks since the reset, at least what the pool held at the reset (whether
 * a reset restarts a mark from 0 or from the current value, the runtime's
 * documentation does not say). */
static int async_read_high(struct cx *X, uint64_t high[2])
{
	for (int k = 0; k < 2; k++) {
		if (CU(X, cudaMemPoolGetAttribute(X->mpool, async_high_attr[k], &high[k]), "cudaMemPoolGetAttribute (%s high-water)",
		       async_attr_name[k]) < 0)
			return -1;
		if (high[k] < X->async_floor[k])
			high[k] = X->async_floor[k];
	}
	return 0;
}

static void cx_free(struct cx *X)
{
	uint32_t n = X->s ? X->s->n : 0;

	if (X->mpool) {
		/* async: what the iterations left allocated (carried weights,
		 * or all that was live at a violation), once nothing uses it;
		 * cudaFree does not wait for a stream-ordered allocation's users */
		cudaDeviceSynchronize();
		for (uint32_t t = 0; X->t && t < X->net->n_tensors; t++)
			if (X->t[t].dev)
				cudaFree(X->t[t].dev);
		cudaMemPoolDestroy(X->mpool);
	}
	pool_release(&X->pool);
	if (X->ev)
		for (size_t k = 0; k < (size_t)EV_KINDS * n; k++)
			if (X->ev[k])
				cudaEventDestroy(X->ev[k]);
	free(X->ev);
	free(X->rec);
	if (X->it0)
		cudaEventDestroy(X->it0);
	if (X->it1)
		cudaEventDestroy(X->it1);
	if (X->hj)
		cudaEventDestroy(X->hj);
	if (X->dj)
		cudaEventDestroy(X->dj);
	if (X->cs)
		cudaStreamDestroy(X->cs);
	if (X->h2d)
		cudaStreamDestroy(X->h2d);
	if (X->d2h)
		cudaStreamDestroy(X->d2h);
	if (X->arena)
		cudaFree(X->arena);
	if (X->slots)
		cudaFree(X->slots);
	if (X->tim)
		cudaFree(X->tim);
	if (X->pinned)
		cudaFreeHost(X->pinned);
	free(X->h_slots);
	free(X->h_tim);
	for (uint32_t c = 0; c < X->n_ck; c++)
		free(X->ck[c].extra);
	free(X->ck);
	free(X->t);
	free(X->step_of);
	free(X->in_at);
	free(X->out_at);
	free(X->in_ver);
	free(X->out_ver);
	free(X->computed);
	free(X->place_off);
	free(X->place_bytes);
	free(X->rel);
	free(X->rel_of);
	free(X->issued);
	free(X->live_pos);
	free(X->live);
	free(X->dep);
	free(X->pq);
	free(X->dq);
	free(X->log);
	if (X->kern)
		for (uint32_t i = 0; i < n; i++)
			kern_free(X->kl, X->kern[i]);
	free(X->kern);
	free(X->op_kern);
	kern_lib_close(X->kl);
}

/* A real kernel for every compute and recompute action that has one
 * (verify/kop.h), set up now so that iterations only issue calls; the others
 * stay timed, and d says how many of each and the first reason. */
static void prepare_kernels(struct cx *X, struct mp_exec_cuda *d)
{
	const struct mp_schedule *s = X->s;
	struct mp_kop *kop = (struct mp_kop *)mp_xmalloc(sizeof(*kop));
	struct kern_mb *mb = (struct kern_mb *)mp_xmalloc(((size_t)s->n_micro + 1) * sizeof(*mb));
	char why[256];

	if (kern_lib_open(&X->kl, X->cs, why, sizeof(why)) < 0) {
		snprintf(d->timed_why, sizeof(d->timed_why), "%s", why);
		for (uint32_t i = 0; i < s->n; i++)
			d->ops_timed += s->a[i].kind == MP_ACT_COMPUTE || s->a[i].kind == MP_ACT_RECOMPUTE;
		free(kop);
		free(mb);
		return;
	}
	snprintf(d->libraries, sizeof(d->libraries), "%s", kern_lib_versions(X->kl));
	X->kern = (struct kern **)mp_xcalloc(s->n ? s->n : 1, sizeof(*X->kern));
	X->op_kern = (struct kern **)mp_xcalloc(X->net->n_ops ? X->net->n_ops : 1, sizeof(*X->op_kern));
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		const struct mp_op *op;
		uint32_t n_mb;
		double ms;
		uint64_t ws;

		if (a->kind != MP_ACT_COMPUTE && a->kind != MP_ACT_RECOMPUTE)
			continue;
		op = &X->net->ops[a->op];
		kop_build(X->net, a->op, kop);
		if (a->micro > 1) {
			for (uint32_t k = 0; k < a->micro; k++) {
				const struct mp_micro *m = &s->micro[a->micro_at + k];

				mb[k].batch = m->batch;
				mb[k].algo = m->algo >= 0 ? op->algos[m->algo].name : NULL;
			}
			n_mb = a->micro;
		} else {
			mb[0].batch = kop->n;
			mb[0].algo = a->algo >= 0 ? op->algos[a->algo].name : NULL;
			n_mb = 1;
		}
		sched_action_cost(X->net, s, a, &ms, &ws);
		if (kern_prepare(X->kl, X->net, kop, mb, n_mb, ws, &X->kern[i], why, sizeof(why)) < 0) {
			X->kern[i] = NULL;
			d->ops_timed++;
			if (!d->timed_why[0])
				snprintf(d->timed_why, sizeof(d->timed_why), "%s: %s", op->name, why);
			continue;
		}
		d->ops_real++;
		if (a->kind == MP_ACT_COMPUTE)
			X->op_kern[a->op] = X->kern[i];
		d->algos_substituted += kern_algo_substituted(X->kern[i]);
	}
	d->library_bytes = kern_lib_bytes(X->kl);
	free(kop);
	free(mb);
}

int exec_cuda_run(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
		  const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err)
{
	const struct mp_schedule *s = &p->sched;
	const uint32_t n = s->n, n1 = n ? n : 1, n_steps = p->sim.n_steps;
	struct cx X;
	struct iter_rec *recs = NULL;
	cudaDeviceProp prop;
	size_t fr = 0, tot = 0;
	uint64_t pinned = 0;
	uint32_t bad;
	int rc = -1;
	char b1[32];

	memset(out, 0, sizeof(*out));
	out->failed_action = UINT32_MAX;
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
	X.o = *o;
	X.fail_at = UINT32_MAX;
	if ((rc = cuda_open_device(err, &prop)) != 0)
		return rc;
	rc = -1;
	X.sms = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
	copy_name(out->cuda.name, sizeof(out->cuda.name), prop.name);

	/* streams and events, the kernels loaded, the timer calibrated: then
	 * what the device uses before the arena */
	if (CU(&X, cudaStreamCreateWithFlags(&X.cs, cudaStreamNonBlocking), "cudaStreamCreate (compute)") < 0 ||
	    CU(&X, cudaStreamCreateWithFlags(&X.h2d, cudaStreamNonBlocking), "cudaStreamCreate (h2d)") < 0 ||
	    CU(&X, cudaStreamCreateWithFlags(&X.d2h, cudaStreamNonBlocking), "cudaStreamCreate (d2h)") < 0 ||
	    CU(&X, cudaEventCreate(&X.it0), "cudaEventCreate") < 0 || CU(&X, cudaEventCreate(&X.it1), "cudaEventCreate") < 0 ||
	    CU(&X, cudaEventCreate(&X.hj), "cudaEventCreate") < 0 || CU(&X, cudaEventCreate(&X.dj), "cudaEventCreate") < 0)
		goto fail;
	X.ev = (cudaEvent_t *)mp_xcalloc((size_t)EV_KINDS * n1, sizeof(*X.ev));
	X.rec = (uint8_t *)mp_xcalloc((size_t)EV_KINDS * n1, 1);
	for (uint32_t i = 0; i < n; i++) {
		static const uint8_t used[7][EV_KINDS] = {
			/* S E M D */
			{ 1, 1, 0, 0 }, /* compute */
			{ 1, 1, 0, 0 }, /* recompute */
			{ 1, 1, 0, 0 }, /* alloc */
			{ 0, 1, 0, 0 }, /* free */
			{ 1, 1, 1, 0 }, /* swap_out */
			{ 1, 1, 1, 1 }, /* swap_in */
			{ 1, 1, 0, 0 }, /* wait */
		};

		for (int k = 0; k < EV_KINDS; k++)
			if (used[s->a[i].kind][k] &&
			    CU(&X, cudaEventCreate(&X.ev[(size_t)k * n + i]), "cudaEventCreate (%u actions)", n) < 0)
				goto fail;
	}
	if (calibrate(&X) < 0 || load_kernels(&X) < 0)
		goto fail;
	if (o->compute == MP_EXEC_REAL)
		prepare_kernels(&X, &out->cuda);
	if (CU(&X, cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo") < 0)
		goto fail;
	out->cuda.total_bytes = tot;
	out->cuda.used_before_bytes = tot - fr;

	/* the tensors' memory (the plan's arena or the pool's range, one
	 * cudaMalloc; async: the memory pool), the check buffers and the
	 * pinned host buffers */
	if (o->alloc == MP_EXEC_ASYNC) {
		if (async_pool_create(&X) < 0)
			goto fail;
	} else {
		X.arena_bytes = o->alloc == MP_EXEC_POOL ? exec_pool_bytes(req, p, o) : p->arena_bytes;
		if (o->alloc == MP_EXEC_POOL)
			pool_init(&X.pool, X.arena_bytes);
		if (CU(&X, cudaMalloc((void **)&X.arena, X.arena_bytes ? X.arena_bytes : 1), "cudaMalloc (%s of %s)",
		       o->alloc == MP_EXEC_POOL ? "a pool" : "an arena", mp_fmt_bytes(X.arena_bytes, b1, sizeof(b1))) < 0)
			goto fail;
	}
	X.n_slots = 1;
	for (uint32_t i = 0; i < n; i++) {
		const struct mp_action *a = &s->a[i];

		if (a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE)
			X.n_slots += net->ops[a->op].n_in + 2 * net->ops[a->op].n_out;
		else if (a->kind != MP_ACT_FREE && a->kind != MP_ACT_WAIT)
			X.n_slots++;
	}
	if (CU(&X, cudaMalloc((void **)&X.slots, (size_t)X.n_slots * sizeof(ull)), "cudaMalloc (%u check slots)", X.n_slots) < 0 ||
	    CU(&X, cudaMalloc((void **)&X.tim, (size_t)3 * n1 * sizeof(ull)), "cudaMalloc (op timers)") < 0 ||
	    CU(&X, cudaMemset(X.tim, 0, (size_t)3 * n1 * sizeof(ull)), "cudaMemset (op timers)") < 0)
		goto fail;
	X.h_slots = (ull *)mp_xcalloc(X.n_slots, sizeof(ull));
	X.h_tim = (ull *)mp_xcalloc((size_t)3 * n1, sizeof(ull));
	X.t = (struct tens *)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*X.t));
	{
		uint64_t *at = (uint64_t *)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*at));
		uint8_t *need = (uint8_t *)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, 1);

		for (uint32_t i = 0; i < n; i++) {
			int32_t t = s->a[i].tensor;

			if ((s->a[i].kind == MP_ACT_SWAP_OUT || s->a[i].kind == MP_ACT_SWAP_IN) && !need[t]) {
				need[t] = 1;
				at[t] = pinned;
				pinned += (net->tensors[t].bytes + 255) / 256 * 256;
			}
		}
		if (pinned && CU(&X, cudaMallocHost((void **)&X.pinned, pinned), "cudaMallocHost (%s of pinned host buffers)",
				 mp_fmt_bytes(pinned, b1, sizeof(b1))) < 0) {
			free(at);
			free(need);
			goto fail;
		}
		for (uint32_t t = 0; t < net->n_tensors; t++) {
			X.t[t].expect = X.t[t].host_ver = ver_none();
			if (need[t])
				X.t[t].host = X.pinned + at[t];
		}
		free(at);
		free(need);
	}
	X.pinned_bytes = pinned;
	out->cuda.pinned_bytes = pinned;
	{
		/* a persistent tensor whose first swap-related action is a swap-in
		 * starts the iteration on the host with its initial contents */
		uint8_t *seen = (uint8_t *)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, 1);

		for (uint32_t i = 0; i < n; i++) {
			const struct mp_action *a = &s->a[i];
			int32_t t = a->tensor;

			if (a->kind != MP_ACT_ALLOC && a->kind != MP_ACT_SWAP_IN && a->kind != MP_ACT_SWAP_OUT)
				continue;
			if (!seen[t] && a->kind == MP_ACT_SWAP_IN && sched_persistent(&net->tensors[t]))
				X.t[t].host_ver = ver_make(host_fill(X.t[t].host, net->tensors[t].bytes, pattern_seed(t, -1)),
							   -1, -1);
			seen[t] = 1;
		}
		free(seen);
	}
	if (CU(&X, cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo") < 0)
		goto fail;
	out->cuda.used_alloc_bytes = tot - fr;
	X.used_peak = tot - fr;

	X.step_of = (int32_t *)mp_xmalloc(n1 * sizeof(*X.step_of));
	{
		int32_t step = 0;

		for (uint32_t i = 0; i < n; i++)
			X.step_of[i] = s->a[i].kind == MP_ACT_COMPUTE ? step++ : -1;
	}
	X.in_at = (uint32_t *)mp_xcalloc(net->n_ops + 1, sizeof(*X.in_at));
	X.out_at = (uint32_t *)mp_xcalloc(net->n_ops + 1, sizeof(*X.out_at));
	{
		uint32_t ni = 0, no = 0;

		for (uint32_t k = 0; k < net->n_ops; k++) {
			X.in_at[k] = ni;
			X.out_at[k] = no;
			ni += net->ops[k].n_in;
			no += net->ops[k].n_out;
		}
		X.in_ver = (struct ver *)mp_xcalloc(ni + 1, sizeof(*X.in_ver));
		X.out_ver = (struct ver *)mp_xcalloc(no + 1, sizeof(*X.out_ver));
	}
	X.computed = (uint8_t *)mp_xcalloc(net->n_ops + 1, 1);
	X.place_off = (uint64_t *)mp_xcalloc(n1, sizeof(*X.place_off));
	X.place_bytes = (uint64_t *)mp_xcalloc(n1, sizeof(*X.place_bytes));
	X.rel = (int32_t *)mp_xmalloc(n1 * sizeof(*X.rel));
	X.rel_of = (int32_t *)mp_xcalloc(n1, sizeof(*X.rel_of));
	X.issued = (uint8_t *)mp_xcalloc(n1, 1);
	X.live_pos = (uint32_t *)mp_xmalloc(n1 * sizeof(*X.live_pos));
	X.live = (uint32_t *)mp_xmalloc(n1 * sizeof(*X.live));
	recs = (struct iter_rec *)mp_xcalloc(o->iters, sizeof(*recs));
	for (uint32_t k = 0; k < o->iters; k++) {
		recs[k].act = (struct mp_exec_act *)mp_xcalloc(n1, sizeof(*recs[k].act));
		recs[k].step_bytes = (uint64_t *)mp_xcalloc(n_steps ? n_steps : 1, sizeof(*recs[k].step_bytes));
	}

	/* With real kernels, hashing would add its own time to every op: the
	 * checks run in one more iteration first, and the warm-up and measured
	 * iterations hash nothing.  Timed ops absorb their checks in their
	 * modelled time, so without real kernels every iteration checks. */
	out->cuda.checked_iterations = X.kern && out->cuda.ops_real ? 1 : o->warmup + o->iters;
	for (uint32_t it0 = X.kern && out->cuda.ops_real ? 1 : 0, it = 0; it < it0 + o->warmup + o->iters; it++) {
		struct iter_rec *r = it >= it0 + o->warmup ? &recs[it - it0 - o->warmup] : NULL;

		X.checking = it0 == 0 || it == 0;
		if (it == it0 + o->warmup) {
			/* the measured iterations' */
			X.used_peak = 0;
			if (o->alloc == MP_EXEC_ASYNC && async_reset_high(&X) < 0)
				goto fail;
		}
		if (run_iteration(&X, r) < 0) {
			*err = X.err;
			if (X.failed && !X.cuda_failed)
				out->failed_action = X.fail_at;
			goto fail;
		}
		if (it == 0) {
			/* per-iteration counts are the same in every checking iteration */
			out->reads_checked = X.reads;
			out->swaps_checked = X.swaps;
			out->recomputes_checked = X.recomputes;
			out->bytes_hashed = X.hashed;
			out->cuda.launches = X.launches;
		}
	}
	if (o->alloc == MP_EXEC_ASYNC) {
		uint64_t high[2];

		if (async_read_high(&X, high) < 0)
			goto fail;
		out->cuda.reserved_high_bytes = high[0];
		out->cuda.used_high_bytes = high[1];
	}
	/* the median iteration, as the host backend */
	{
		double *w = (double *)mp_xmalloc(o->iters * sizeof(*w));
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
		out->iter_ms = (double *)mp_xmalloc(o->iters * sizeof(*out->iter_ms));
		for (uint32_t k = 0; k < o->iters; k++) {
			out->iter_ms[k] = recs[k].wall_ms;
			if (recs[k].peak > out->live_peak_max_bytes)
				out->live_peak_max_bytes = recs[k].peak;
		}
		out->live_peak_bytes = recs[med].peak;
		out->live_peak_action = recs[med].peak_action;
		out->timeline_ms = recs[med].wall_ms;
		out->stall_ms = recs[med].stall_ms;
		out->alloc_wait_ms = recs[med].alloc_wait_ms;
		out->overruns = recs[med].overruns;
		out->overrun_ms = recs[med].overrun_ms;
		out->work_scale = recs[med].need_scale;
		out->h2d_busy_ms = recs[med].busy_ms[0];
		out->d2h_busy_ms = recs[med].busy_ms[1];
		out->mem_bytes = X.arena_bytes;
		out->arena_high_bytes = o->alloc == MP_EXEC_ARENA ? X.arena_high : 0;
		out->pool_high_bytes = o->alloc == MP_EXEC_POOL ? X.pool.high_blocks * POOL_BLOCK_BYTES : 0;
		out->peak_bytes = o->alloc == MP_EXEC_POOL    ? out->pool_high_bytes
				: o->alloc == MP_EXEC_ASYNC ? out->cuda.reserved_high_bytes
							    : out->live_peak_bytes;
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
		out->cuda.present = true;
		out->cuda.used_peak_bytes = X.used_peak;
		out->cuda.timer_ratio = X.timer_ratio;
	}
	rc = 0;
	goto done;
fail:
	if (X.cuda_failed || !X.failed)
		*err = X.err;
	if (X.cuda_failed)
		out->failed_action = UINT32_MAX;
done:
	if (recs)
		for (uint32_t k = 0; k < o->iters; k++) {
			free(recs[k].act);
			free(recs[k].step_bytes);
		}
	free(recs);
	cx_free(&X);
	if (rc < 0) {
		uint32_t f = out->failed_action;
		struct mp_exec_cuda c = out->cuda;

		exec_result_release(out);
		out->failed_action = f;
		out->cuda = c;
	}
	return rc;
}

/* ---- memplan verify --probe ---- */

int exec_cuda_link(struct mp_cuda_link *out, struct mp_error *err)
{
	cudaDeviceProp prop;
	cudaStream_t st = NULL;
	cudaEvent_t a = NULL, b = NULL;
	uint8_t *dev = NULL, *host = NULL;
	size_t fr = 0, tot = 0;
	cudaError_t e;
	const char *what = "";
	int rc;

	memset(out, 0, sizeof(*out));
	if ((rc = cuda_open_device(err, &prop)) != 0)
		return rc;
	copy_name(out->name, sizeof(out->name), prop.name);
#define TRY(call, w)                              \
	do {                                      \
		what = (w);                       \
		if ((e = (call)) != cudaSuccess) \
			goto fail;                \
	} while (0)
	TRY(cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo");
	out->total_bytes = tot;
	out->free_bytes = fr;
	out->copy_bytes = UINT64_C(256) << 20;
	if (fr / 4 < out->copy_bytes)
		out->copy_bytes = fr / 4 / (UINT64_C(1) << 20) * (UINT64_C(1) << 20);
	if (out->copy_bytes < (UINT64_C(1) << 20)) {
		mp_error_set(err, "device 0 has too little free memory to measure the link");
		return -1;
	}
	TRY(cudaMalloc((void **)&dev, out->copy_bytes), "cudaMalloc");
	TRY(cudaMallocHost((void **)&host, out->copy_bytes), "cudaMallocHost");
	memset(host, 0x5a, out->copy_bytes);
	TRY(cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking), "cudaStreamCreate");
	TRY(cudaEventCreate(&a), "cudaEventCreate");
	TRY(cudaEventCreate(&b), "cudaEventCreate");
	for (int dir = 0; dir < 2; dir++) {
		double ms[5];

		for (int k = -1; k < 5; k++) { /* k -1: warm-up */
			float got = 0;

			TRY(cudaEventRecord(a, st), "cudaEventRecord");
			if (dir == 0)
				TRY(cudaMemcpyAsync(dev, host, out->copy_bytes, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync");
			else
				TRY(cudaMemcpyAsync(host, dev, out->copy_bytes, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync");
			TRY(cudaEventRecord(b, st), "cudaEventRecord");
			TRY(cudaEventSynchronize(b), "cudaEventSynchronize");
			TRY(cudaEventElapsedTime(&got, a, b), "cudaEventElapsedTime");
			if (k >= 0)
				ms[k] = got;
		}
		const double med = mp_median(ms, 5);

		*(dir == 0 ? &out->h2d_gbps : &out->d2h_gbps) = med > 0 ? (double)out->copy_bytes / med / 1e6 : 0;
	}
#undef TRY
	rc = 0;
	goto out;
fail:
	mp_error_set(err, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	rc = -1;
out:
	if (a)
		cudaEventDestroy(a);
	if (b)
		cudaEventDestroy(b);
	if (st)
		cudaStreamDestroy(st);
	if (dev)
		cudaFree(dev);
	if (host)
		cudaFreeHost(host);
	return rc;
}

int exec_cuda_runtime_version(void)
{
	return CUDART_VERSION;
}
