/*
 * CUDA backend of memplan verify (backend.h): a plan's Schedule run on
 * device 0 by the replay engine (replay.c), which owns every rule that does
 * not depend on the device.  Built by nvcc where the Makefile finds it
 * (MEMPLAN_CUDA); also built by the host compiler for the tests, its kernels
 * on the CPU, against the fake runtime of tests/fakecuda
 * (tests/unit/test_backends.cc).  Every figure it prints comes from the CUDA
 * runtime on the machine that runs it; none is modelled here.
 *
 * What runs:
 *   memory   --alloc arena and pool: one cudaMalloc of the engine's range
 *            (the plan's arena or the pool's capacity), every allocation at
 *            the offset the engine gives it.  --alloc async:
 *            cudaMallocFromPoolAsync and cudaFreeAsync from a memory pool of
 *            our own whose release threshold is UINT64_MAX (memory stays
 *            reserved between iterations); an alloc allocates on the compute
 *            stream, a swap-in on the h2d stream just before its copy, a
 *            free frees on the compute stream and a swap-out on the d2h
 *            stream after its copy: each on the stream that uses the memory
 *            last, the allocator ordering reuse after the free (c_place,
 *            c_release).  Every mode addresses an allocation by its offset
 *            (dev_at): into the arena, or, with async, from address 0, the
 *            offset being the device address, so that the engine's overlap
 *            rules serve all three.  Carried persistent tensors keep their
 *            memory into the next iteration (async frees the rest after each
 *            iteration).  Pinned host buffers (one cudaMallocHost) for every
 *            swapped tensor.
 *   streams  one compute stream and two copy streams (h2d, d2h); an action
 *            the engine says starts after another waits on that one's event
 *            (start, end, mark: the compute issued before a swap; a swap-in's
 *            "done" after its checksum).
 *   compute  an op with a real kernel (verify/kop.h: layers with shapes of
 *            the types cuDNN and cuBLAS cover) runs it through
 *            kern_cuda.cu, prepared before the iterations; any other
 *            compute or recompute (and every one under --compute timed) is
 *            a timed sequence of kernels on the compute stream: a stamp of
 *            the GPU's global timer, the engine's checksums and patterns,
 *            then a spin until stamp + the op's time x --time-scale.  When
 *            the checks took longer than that, the op overruns (counted, as
 *            on the host).  The timer is calibrated once against
 *            cudaEventElapsedTime (the SM clock, clock64, changes with boost
 *            clocks; the global timer does not).  With real kernels the
 *            checks run in one unmeasured iteration first and the others
 *            hash nothing (hashing would add to every real op's time).
 *   checks   checksums are taken on the device into slots (one each) and
 *            read back when the iteration ends.  The checksum is not
 *            exec_hash: it is a sum of mixed 64-bit words, so that the
 *            device's threads may add in any order, and the values in
 *            messages differ from the host backend's.
 *   measure  per-action start and end from events on each stream, relative
 *            to an event that starts the iteration; iteration time from that
 *            event to one after all three streams joined; device memory from
 *            cudaMemGetInfo before the arena (context and libraries) and
 *            sampled during the run.  async: the memory pool's reserved and
 *            used high-water marks over the measured iterations
 *            (cudaMemPoolAttrReservedMemHigh, UsedMemHigh, reset after the
 *            warm-up).
 *
 * Cost per iteration: 2-4 events and up to n_in + 2 n_out + 3 kernel
 * launches per action (a checking iteration; a real op otherwise issues only
 * its own calls); async: one allocation and one free call per allocation.
 */
#define _Noreturn [[noreturn]] /* analysis/base/util.h is C11 */
#ifndef __CUDACC__
/* The host build (tests/unit/test_backends.cc against tests/fakecuda): the
 * host compiler, the kernels run on the CPU (below) */
#define __host__
#define __device__
#define __global__
#endif
extern "C" {
#include "backend.h"
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

#ifdef __CUDACC__
#define LAUNCH(k, grid, block, st) k<<<(grid), (block), 0, (st)>>>

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

#else
/*
 * The host build runs each kernel on the CPU when it is launched, on the
 * fake runtime's clock of the stream it is launched on (tests/fakecuda: every
 * call's effect happens at once, in issue order, which respects every event
 * a stream waits for, since each was recorded earlier; time is kept per
 * stream, so copies overlap compute as on a GPU).  The checksums and
 * patterns are the device's.
 */
extern "C" void fk_on_stream(cudaStream_t s);
extern "C" uint64_t fk_clock_ns(void);
extern "C" void fk_clock_advance(uint64_t ns);
extern "C" void fk_kernel(const char *name, const void *p, uint64_t n, unsigned how); /* 1 read, 2 write */

#define LAUNCH(k, grid, block, st) (void)(grid), (void)(block), fk_on_stream(st), k

static void k_hash(const uint8_t *p, ull n, ull *slot)
{
	const ull nw = n / 8;
	ull s = 0, t = 0;

	for (ull i = 0; i < nw; i++) {
		ull w;

		memcpy(&w, p + 8 * i, 8);
		s += term(w, i);
	}
	if (n & 7) {
		memcpy(&t, p + 8 * nw, n & 7); /* little-endian, as the device */
		s += term(t, nw);
	}
	*slot += s;
	fk_kernel("k_hash", p, n, 1);
}

static void k_fill(uint8_t *p, ull n, ull seed, ull *slot)
{
	const ull nw = n / 8;
	ull s = 0;

	for (ull i = 0; i < nw; i++) {
		ull x = pat(seed, i);

		memcpy(p + 8 * i, &x, 8);
		s += term(x, i);
	}
	if (n & 7) {
		ull x = pat(seed, nw), t = 0;

		memcpy(&t, &x, n & 7);
		memcpy(p + 8 * nw, &t, n & 7);
		s += term(t, nw);
	}
	if (slot)
		*slot += s;
	fk_kernel("k_fill", p, n, 2);
}

static void k_stamp(ull *t)
{
	t[0] = fk_clock_ns();
}

static void k_spin(ull *t, ull dur_ns)
{
	ull now = fk_clock_ns(), end = t[0] + dur_ns;

	t[1] = now - t[0];
	t[2] = now > end ? now - end : 0;
	if (now < end)
		fk_clock_advance(end - now);
}

static void k_calib(ull dur_ns)
{
	fk_clock_advance(dur_ns);
}
#endif

/* ---- state ---- */

enum { EV_S, EV_E, EV_M, EV_D, EV_KINDS };  /* start, end, mark, swap-in done */

struct cx {
	struct replay *R;
	struct mp_exec_result *out;
	int sms;
	double timer_ratio;        /* event ms per timer ms */
	/* device: allocations are addressed as offsets (R->place_off), into
	 * the arena (arena: the plan's offsets; pool: pool_alloc's) or, with
	 * async, from address 0: an allocation's offset is its device address,
	 * so that overlaps and culprits mean the same in every mode (dev_at) */
	uint8_t *arena;            /* [R->mem_bytes] device; NULL with async */
	cudaMemPool_t mpool;       /* async: the memory pool allocations come from */
	uint64_t async_floor[2];   /* async: reserved and used at the high-water reset */
	uint8_t **dev;             /* async: [n_tensors] each tensor's allocation
				    * (cudaMallocFromPoolAsync), held from its alloc or
				    * swap-in to its free or swap-out, and into the next
				    * iteration while carried; NULL: none (or 0 bytes) */
	ull *slots;                /* [n_slots] device */
	ull *tim;                  /* [3 n] device: stamp, work, overrun per compute */
	uint8_t *pinned;           /* host, pinned */
	cudaStream_t cs, h2d, d2h;
	cudaEvent_t *ev;           /* [EV_KINDS * n], NULL where unused */
	uint8_t *rec;              /* [EV_KINDS * n] recorded this iteration */
	cudaEvent_t it0, it1, hj, dj;
	ull *h_slots, *h_tim;      /* host copies */
	uint64_t launches, used_peak;
	uint32_t iterations;
	bool measuring;
	/* real kernels (kern_cuda.cu); NULL kl: every op is timed */
	struct kern_lib *kl;
	struct kern **kern;        /* [n] compute and recompute actions; NULL: timed */
	struct kern **op_kern;     /* [n_ops] the kernel of each op's compute action */
};

static struct cx *X_of(const struct replay *R)
{
	return (struct cx *)R->ctx;
}

#define CU(X, call, ...) cu_check((X), (call), __VA_ARGS__)

/* Record a CUDA error: "CUDA error in WHAT: message".  -1 on error. */
static int cu_check(struct cx *X, cudaError_t e, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int cu_check(struct cx *X, cudaError_t e, const char *fmt, ...)
{
	char what[256];
	va_list ap;

	if (e == cudaSuccess)
		return 0;
	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	replay_dev_error(X->R, "CUDA error in %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
	return -1;
}

static const char *tname(const struct replay *R, int32_t t)
{
	return R->net->tensors[t].name;
}

/* The device address of offset off (see struct cx). */
static uint8_t *dev_at(const struct cx *X, uint64_t off)
{
	return X->R->o.alloc == MP_EXEC_ASYNC ? (uint8_t *)(uintptr_t)off : X->arena + off;
}

static cudaEvent_t ev(const struct cx *X, int kind, uint32_t i)
{
	return X->ev[(size_t)kind * X->R->s->n + i];
}

static int record(struct cx *X, int kind, uint32_t i, cudaStream_t st)
{
	X->rec[(size_t)kind * X->R->s->n + i] = 1;
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

static void sample_memory(struct cx *X)
{
	size_t fr = 0, tot = 0;

	/* a failure here only loses a sample */
	if (cudaMemGetInfo(&fr, &tot) == cudaSuccess && tot >= fr && tot - fr > X->used_peak)
		X->used_peak = tot - fr;
}

/* ---- memory ---- */

/* async: drop tensor t's device allocation, if any, on stream st (see
 * c_release). */
static int async_drop(struct cx *X, int32_t t, cudaStream_t st)
{
	uint8_t *d = X->dev[t];

	X->dev[t] = NULL; /* after a failed free: lost, not freed twice */
	if (!d)
		return 0;
	return CU(X, cudaFreeAsync(d, st), "cudaFreeAsync ('%s')", tname(X->R, t));
}

/* async: device memory for allocation i of its tensor, from the memory
 * pool.  An alloc allocates on the compute stream, which uses it in stream
 * order (its start recorded first: the allocation may wait there).  A
 * swap-in allocates on the h2d stream, after waiting on its mark, just
 * before its copy is issued there (async swap-ins wait for no release: the
 * engine hands them over at once): the copy writes it in stream order,
 * compute reads it only after waiting on the swap-in's event, and where the
 * allocator must wait for memory that a swap-out frees on the d2h stream,
 * the copy waits, as in the arena, not compute.  The memory counts from the
 * copy's start, as the plan counts it.  A persistent tensor carried from the
 * last iteration keeps its allocation where the plan allocates it again
 * with the same size (the engine then keeps its bytes, as the arena does at
 * the same offset); otherwise that allocation is freed first. */
static int c_place(struct replay *R, uint32_t i, uint64_t bytes, uint64_t *off)
{
	struct cx *X = X_of(R);
	const struct mp_action *a = &R->s->a[i];
	struct rp_tensor *T = &R->t[a->tensor];
	cudaStream_t st = X->cs;
	void *d = NULL;

	if (a->kind == MP_ACT_ALLOC && record(X, EV_S, i, X->cs) < 0)
		return -1;
	if (T->carry && a->kind == MP_ACT_ALLOC && T->carry_bytes == bytes) {
		*off = (uint64_t)(uintptr_t)X->dev[a->tensor];
		return 0;
	}
	T->carry = false;
	if (async_drop(X, a->tensor, X->cs) < 0)
		return -1;
	if (bytes) { /* no call for 0 bytes: what cudaMallocAsync returns is not documented */
		if (a->kind == MP_ACT_SWAP_IN) {
			st = X->h2d;
			if (wait_ev(X, st, ev(X, EV_M, i), i) < 0)
				return -1;
		}
		if (CU(X, cudaMallocFromPoolAsync(&d, bytes, X->mpool, st), "cudaMallocFromPoolAsync (schedule[%u], %llu bytes)",
		       i, (ull)bytes) < 0)
			return -1;
	}
	X->dev[a->tensor] = (uint8_t *)d;
	*off = (uint64_t)(uintptr_t)d;
	return 0;
}

/* async: action i releases its tensor's memory on the stream that used it
 * last: the compute stream for a free (every kernel that touched it was
 * issued there, and a swap-in's copy into it was waited for before anything
 * read it), the d2h stream for a swap-out (its checksum and copy are the
 * last uses, issued there; freeing on the compute stream after waiting for
 * the copy would stall compute, which the plan does not model).  The
 * allocator orders whatever reuses the memory after the free. */
static int c_release(struct replay *R, uint32_t i, uint32_t k)
{
	struct cx *X = X_of(R);

	(void)k;
	if (R->o.alloc != MP_EXEC_ASYNC)
		return 0;
	return async_drop(X, R->s->a[i].tensor, R->s->a[i].kind == MP_ACT_FREE ? X->cs : X->d2h);
}

/* ---- the primitives ---- */

static int c_alloc(struct replay *R, uint32_t i, int32_t after)
{
	struct cx *X = X_of(R);

	if (after >= 0 && (record(X, EV_S, i, X->cs) < 0 || wait_ev(X, X->cs, ev(X, EV_E, (uint32_t)after), i) < 0))
		return -1;
	return record(X, EV_E, i, X->cs);
}

static int c_free(struct replay *R, uint32_t i)
{
	struct cx *X = X_of(R);

	return record(X, EV_E, i, X->cs);
}

static int c_mark(struct replay *R, uint32_t i)
{
	struct cx *X = X_of(R);

	return record(X, EV_M, i, X->cs);
}

/* Checksum n device bytes at off into slot on st. */
static int launch_hash(struct cx *X, uint32_t i, cudaStream_t st, uint64_t off, uint64_t n, int32_t slot)
{
	if (!n)
		return 0;
	LAUNCH(k_hash, grid_for(X, n), THREADS, st)(dev_at(X, off), n, X->slots + slot);
	X->launches++;
	return CU(X, cudaGetLastError(), "a checksum kernel (schedule[%u])", i);
}

static int c_copy_out(struct replay *R, const struct rp_copy *c)
{
	struct cx *X = X_of(R);
	const uint32_t i = c->act;

	if (wait_ev(X, X->d2h, ev(X, EV_M, i), i) < 0)
		return -1;
	if (c->slot >= 0 && launch_hash(X, i, X->d2h, c->off, c->bytes, c->slot) < 0)
		return -1;
	if (record(X, EV_S, i, X->d2h) < 0)
		return -1;
	if (c->bytes && CU(X, cudaMemcpyAsync(R->t[c->tensor].host, dev_at(X, c->off), c->bytes, cudaMemcpyDeviceToHost, X->d2h),
			   "cudaMemcpyAsync device to host (schedule[%u], %llu bytes)", i, (ull)c->bytes) < 0)
		return -1;
	return record(X, EV_E, i, X->d2h);
}

static int c_copy_in(struct replay *R, const struct rp_copy *c)
{
	struct cx *X = X_of(R);
	const uint32_t i = c->act;

	if (wait_ev(X, X->h2d, ev(X, EV_M, i), i) < 0)
		return -1;
	for (uint32_t d = 0; d < c->n_after; d++)
		if (wait_ev(X, X->h2d, ev(X, EV_E, c->after[d]), i) < 0)
			return -1;
	if (record(X, EV_S, i, X->h2d) < 0)
		return -1;
	if (c->bytes && CU(X, cudaMemcpyAsync(dev_at(X, c->off), R->t[c->tensor].host, c->bytes, cudaMemcpyHostToDevice, X->h2d),
			   "cudaMemcpyAsync host to device (schedule[%u], %llu bytes)", i, (ull)c->bytes) < 0)
		return -1;
	if (record(X, EV_E, i, X->h2d) < 0)
		return -1;
	if (c->slot >= 0 && launch_hash(X, i, X->h2d, c->off, c->bytes, c->slot) < 0)
		return -1;
	return record(X, EV_D, i, X->h2d);
}

/* A swap-out's copy frees the memory at its end; a swap-in is there once
 * its checksum is taken. */
static int c_wait(struct replay *R, uint32_t i, int32_t copy)
{
	struct cx *X = X_of(R);

	if (record(X, EV_S, i, X->cs) < 0)
		return -1;
	if (copy >= 0 &&
	    wait_ev(X, X->cs, ev(X, R->s->a[copy].kind == MP_ACT_SWAP_IN ? EV_D : EV_E, (uint32_t)copy), i) < 0)
		return -1;
	return record(X, EV_E, i, X->cs);
}

static const struct kern *kern_of(const struct cx *X, uint32_t i)
{
	return X->kern ? X->kern[i] : NULL;
}

/* compute or recompute: stamp (a timed op), then the engine's checksums and
 * fills, then a spin to the op's end, on the compute stream */
static int c_op_begin(struct replay *R, uint32_t i)
{
	struct cx *X = X_of(R);

	if (record(X, EV_S, i, X->cs) < 0)
		return -1;
	if (kern_of(X, i))
		return 0;
	LAUNCH(k_stamp, 1, 1, X->cs)(X->tim + 3 * (size_t)i);
	X->launches++;
	return CU(X, cudaGetLastError(), "the stamp kernel (schedule[%u])", i);
}

/* Where tensor t is now (kern_run's addresses). */
static void *tensor_addr(void *ctx, int32_t t)
{
	const struct cx *X = (const struct cx *)ctx;

	return dev_at(X, X->R->place_off[X->R->t[t].cur]);
}

static int c_op_run(struct replay *R, uint32_t i, uint64_t ws_off)
{
	struct cx *X = X_of(R);
	const struct kern *K = kern_of(X, i);
	char why[256];

	if (!K)
		return 0;
	if (kern_run(X->kl, K, tensor_addr, X, dev_at(X, ws_off), why, sizeof(why)) < 0) {
		replay_dev_error(R, "schedule[%u] %s: %s", i, R->net->ops[R->s->a[i].op].name, why);
		return -1;
	}
	X->launches++;
	return 1;
}

static bool c_same_run(const struct replay *R, uint32_t i)
{
	const struct cx *X = X_of(R);

	return kern_same_run(kern_of(X, i), X->op_kern ? X->op_kern[R->s->a[i].op] : NULL);
}

static int c_hash(struct replay *R, uint32_t i, int engine, uint64_t off, uint64_t n, int32_t slot)
{
	struct cx *X = X_of(R);

	return launch_hash(X, i, engine == RP_ENGINE_H2D ? X->h2d : engine == RP_ENGINE_D2H ? X->d2h : X->cs, off, n, slot);
}

/* Write the pattern of seed into n device bytes at off on the compute
 * stream; its checksum into slot (-1: none). */
static int c_fill(struct replay *R, uint32_t i, uint64_t off, uint64_t n, uint64_t seed, int32_t slot)
{
	struct cx *X = X_of(R);

	if (!n)
		return 0;
	LAUNCH(k_fill, grid_for(X, n), THREADS, X->cs)(dev_at(X, off), n, seed, slot >= 0 ? X->slots + slot : NULL);
	X->launches++;
	return CU(X, cudaGetLastError(), "a pattern kernel (schedule[%u])", i);
}

static int c_op_end(struct replay *R, uint32_t i, double ms)
{
	struct cx *X = X_of(R);

	if (!kern_of(X, i)) {
		double dur_ns = ms * R->o.time_scale * 1e6 / X->timer_ratio;

		LAUNCH(k_spin, 1, 1, X->cs)(X->tim + 3 * (size_t)i, (ull)llround(fmax(dur_ns, 0)));
		X->launches++;
		if (CU(X, cudaGetLastError(), "the timed kernel (schedule[%u])", i) < 0)
			return -1;
	}
	return record(X, EV_E, i, X->cs);
}

static void c_issued(struct replay *R, uint32_t i)
{
	if (i % 64 == 63)
		sample_memory(X_of(R));
}

static uint64_t c_host_fill(struct replay *R, uint8_t *p, uint64_t n, uint64_t seed)
{
	(void)R;
	return host_fill(p, n, seed);
}

static uint64_t c_slot_sum(const struct replay *R, int32_t slot, uint64_t bytes)
{
	return fin(X_of(R)->h_slots[slot], bytes);
}

/* ---- iterations ---- */

/* async, after the warm-up, once its frees have run: the memory pool's
 * high-water marks start again (0 is the only value they may be set to; it
 * resets them), and what it holds now is their floor (async_read_high). */
static const enum cudaMemPoolAttr async_high_attr[2] = { cudaMemPoolAttrReservedMemHigh, cudaMemPoolAttrUsedMemHigh };
static const enum cudaMemPoolAttr async_cur_attr[2] = { cudaMemPoolAttrReservedMemCurrent, cudaMemPoolAttrUsedMemCurrent };
static const char *const async_attr_name[2] = { "reserved", "used" };

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

static int c_iter_begin(struct replay *R, bool measured)
{
	struct cx *X = X_of(R);

	if (measured && !X->measuring) {
		/* the measured iterations' */
		X->measuring = true;
		X->used_peak = 0;
		if (R->o.alloc == MP_EXEC_ASYNC && async_reset_high(X) < 0)
			return -1;
	}
	X->launches = 0;
	memset(X->rec, 0, (size_t)EV_KINDS * R->s->n);
	if (CU(X, cudaMemsetAsync(X->slots, 0, (size_t)R->n_slots * sizeof(ull), X->cs), "cudaMemsetAsync (check slots)") < 0 ||
	    CU(X, cudaEventRecord(X->it0, X->cs), "cudaEventRecord (iteration start)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->h2d, X->it0, 0), "cudaStreamWaitEvent (iteration start)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->d2h, X->it0, 0), "cudaStreamWaitEvent (iteration start)") < 0)
		return -1;
	return 0;
}

/* Join the streams, then read the checksums and the op timers back. */
static int c_iter_end(struct replay *R)
{
	struct cx *X = X_of(R);
	const uint32_t n = R->s->n;

	if (R->dev_failed) /* after a CUDA error: nothing more to ask of it */
		return -1;
	if (CU(X, cudaEventRecord(X->hj, X->h2d), "cudaEventRecord (h2d end)") < 0 ||
	    CU(X, cudaEventRecord(X->dj, X->d2h), "cudaEventRecord (d2h end)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->cs, X->hj, 0), "cudaStreamWaitEvent (h2d end)") < 0 ||
	    CU(X, cudaStreamWaitEvent(X->cs, X->dj, 0), "cudaStreamWaitEvent (d2h end)") < 0 ||
	    CU(X, cudaEventRecord(X->it1, X->cs), "cudaEventRecord (iteration end)") < 0 ||
	    CU(X, cudaEventSynchronize(X->it1), "the iteration (cudaEventSynchronize)") < 0)
		return -1;
	sample_memory(X);
	if (CU(X, cudaMemcpy(X->h_slots, X->slots, (size_t)(R->slot_next ? R->slot_next : 1) * sizeof(ull),
			      cudaMemcpyDeviceToHost),
	       "cudaMemcpy (check slots)") < 0 ||
	    CU(X, cudaMemcpy(X->h_tim, X->tim, (size_t)3 * (n ? n : 1) * sizeof(ull), cudaMemcpyDeviceToHost),
	       "cudaMemcpy (op timers)") < 0)
		return -1;
	if (X->iterations++ == 0)
		X->out->cuda.launches = X->launches; /* the same in every checking iteration */
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

/* async: free what the iteration left allocated but the carried persistent
 * tensors' allocations (weights stay on the device), on the compute stream,
 * which has joined the copy streams.  Then, measured, the times from the
 * events. */
static int c_measure(struct replay *R, struct rp_iter *rec)
{
	struct cx *X = X_of(R);
	const struct mp_schedule *s = R->s;
	float wall = 0;

	for (uint32_t t = 0; R->o.alloc == MP_EXEC_ASYNC && t < R->net->n_tensors; t++)
		if (!R->t[t].carry && async_drop(X, (int32_t)t, X->cs) < 0)
			return -1;
	if (!rec)
		return 0;
	if (CU(X, cudaEventElapsedTime(&wall, X->it0, X->it1), "cudaEventElapsedTime (iteration)") < 0)
		return -1;
	rec->wall_ms = rec->timeline_ms = wall;
	rec->stall_ms = rec->alloc_wait_ms = rec->overrun_ms = rec->busy_ms[0] = rec->busy_ms[1] = 0;
	rec->need_scale = 0;
	rec->overruns = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		struct mp_exec_act *m = &rec->act[i];
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
			sched_action_cost(R->net, s, a, &ms, &ws);
			if (tm[2] > 0) {
				rec->overruns++;
				rec->overrun_ms += (double)tm[2] * X->timer_ratio / 1e6;
			}
			if (ms > 0)
				rec->need_scale = fmax(rec->need_scale, (double)tm[1] * X->timer_ratio / 1e6 / ms);
			break;
		}
		case MP_ACT_ALLOC:
			m->start_ms = m->end_ms = t1;
			rec->alloc_wait_ms += t1 - t0;
			break;
		case MP_ACT_FREE:
			m->start_ms = m->end_ms = t1;
			break;
		case MP_ACT_WAIT:
			m->start_ms = m->end_ms = t1;
			m->stall_ms = t1 - t0;
			rec->stall_ms += m->stall_ms;
			break;
		case MP_ACT_SWAP_OUT:
		case MP_ACT_SWAP_IN:
			m->start_ms = t0;
			m->end_ms = t1;
			rec->busy_ms[a->kind == MP_ACT_SWAP_IN ? 0 : 1] += t1 - t0;
			break;
		}
	}
	return 0;
}

static int c_finish(struct replay *R, struct mp_exec_result *out)
{
	struct cx *X = X_of(R);

	if (R->o.alloc == MP_EXEC_ASYNC) {
		uint64_t high[2];

		if (async_read_high(X, high) < 0)
			return -1;
		out->cuda.reserved_high_bytes = high[0];
		out->cuda.used_high_bytes = high[1];
	}
	out->cuda.present = true;
	out->cuda.used_peak_bytes = X->used_peak;
	out->cuda.timer_ratio = X->timer_ratio;
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
	LAUNCH(k_calib, 1, 1, X->cs)((ull)50e6);
	if (CU(X, cudaGetLastError(), "the calibration kernel") < 0)
		goto out;
	for (int k = 0; k < 3; k++) {
		float got = 0;

		if (CU(X, cudaEventRecord(a, X->cs), "cudaEventRecord") < 0)
			goto out;
		LAUNCH(k_calib, 1, 1, X->cs)((ull)(ms * 1e6));
		if (CU(X, cudaGetLastError(), "the calibration kernel") < 0 ||
		    CU(X, cudaEventRecord(b, X->cs), "cudaEventRecord") < 0 ||
		    CU(X, cudaEventSynchronize(b), "the calibration kernel") < 0 ||
		    CU(X, cudaEventElapsedTime(&got, a, b), "cudaEventElapsedTime") < 0)
			goto out;
		r[k] = got / ms;
	}
	X->timer_ratio = mp_median(r, 3);
	if (!(X->timer_ratio > 0.5 && X->timer_ratio < 2)) {
		replay_dev_error(X->R, "the GPU's global timer disagrees with CUDA events (%.3f event ms per timer ms): "
				 "timed kernels would not last their time", X->timer_ratio);
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
	LAUNCH(k_fill, 1, THREADS, X->cs)(scratch, 1024, 1, (ull *)(scratch + 2048));
	LAUNCH(k_hash, 1, THREADS, X->cs)(scratch, 1024, (ull *)(scratch + 2048));
	LAUNCH(k_stamp, 1, 1, X->cs)((ull *)(scratch + 3072));
	LAUNCH(k_spin, 1, 1, X->cs)((ull *)(scratch + 3072), 0);
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
		replay_dev_error(X->R, "--alloc async: device 0 does not support stream-ordered allocation (cudaMallocAsync)");
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

static void c_close(struct replay *R)
{
	struct cx *X = X_of(R);
	const uint32_t n = R->s->n;

	if (X->mpool) {
		/* async: what the iterations left allocated (carried weights,
		 * or all that was live at a violation), once nothing uses it;
		 * cudaFree does not wait for a stream-ordered allocation's users */
		cudaDeviceSynchronize();
		for (uint32_t t = 0; X->dev && t < R->net->n_tensors; t++)
			if (X->dev[t])
				cudaFree(X->dev[t]);
		cudaMemPoolDestroy(X->mpool);
	}
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
	for (uint32_t t = 0; t < R->net->n_tensors; t++)
		R->t[t].host = NULL;
	free(X->h_slots);
	free(X->h_tim);
	free(X->dev);
	if (X->kern)
		for (uint32_t i = 0; i < n; i++)
			kern_free(X->kl, X->kern[i]);
	free(X->kern);
	free(X->op_kern);
	kern_lib_close(X->kl);
	free(X);
	R->ctx = NULL;
}

/* A real kernel for every compute and recompute action that has one
 * (verify/kop.h), set up now so that iterations only issue calls; the others
 * stay timed, and d says how many of each and the first reason. */
static void prepare_kernels(struct cx *X, struct mp_exec_cuda *d)
{
	const struct replay *R = X->R;
	const struct mp_schedule *s = R->s;
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
	X->op_kern = (struct kern **)mp_xcalloc(R->net->n_ops ? R->net->n_ops : 1, sizeof(*X->op_kern));
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		const struct mp_op *op;
		uint32_t n_mb;
		double ms;
		uint64_t ws;

		if (a->kind != MP_ACT_COMPUTE && a->kind != MP_ACT_RECOMPUTE)
			continue;
		op = &R->net->ops[a->op];
		kop_build(R->net, a->op, kop);
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
		sched_action_cost(R->net, s, a, &ms, &ws);
		if (kern_prepare(X->kl, R->net, kop, mb, n_mb, ws, &X->kern[i], why, sizeof(why)) < 0) {
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

/* Device 0 for R: streams, events, the kernels loaded and the timer
 * calibrated; then (what the device uses before them measured) the
 * tensors' memory (the plan's arena or the pool's range, one cudaMalloc;
 * async: the memory pool), the check buffers and the pinned host buffers. */
static int c_open(struct replay *R, struct mp_exec_result *out)
{
	struct cx *X = (struct cx *)mp_xcalloc(1, sizeof(*X));
	const struct mp_net *net = R->net;
	const struct mp_schedule *s = R->s;
	const uint32_t n = s->n, n1 = n ? n : 1;
	cudaDeviceProp prop;
	size_t fr = 0, tot = 0;
	uint64_t pinned = 0, *at;
	int rc;
	char b1[32];

	R->ctx = X;
	R->o.clock = MP_EXEC_WALL; /* events on the GPU's clock */
	X->R = R;
	X->out = out;
	if ((rc = cuda_open_device(&R->err, &prop)) != 0) {
		R->dev_failed = true;
		return rc;
	}
	X->sms = prop.multiProcessorCount > 0 ? prop.multiProcessorCount : 1;
	copy_name(out->cuda.name, sizeof(out->cuda.name), prop.name);
	if (CU(X, cudaStreamCreateWithFlags(&X->cs, cudaStreamNonBlocking), "cudaStreamCreate (compute)") < 0 ||
	    CU(X, cudaStreamCreateWithFlags(&X->h2d, cudaStreamNonBlocking), "cudaStreamCreate (h2d)") < 0 ||
	    CU(X, cudaStreamCreateWithFlags(&X->d2h, cudaStreamNonBlocking), "cudaStreamCreate (d2h)") < 0 ||
	    CU(X, cudaEventCreate(&X->it0), "cudaEventCreate") < 0 || CU(X, cudaEventCreate(&X->it1), "cudaEventCreate") < 0 ||
	    CU(X, cudaEventCreate(&X->hj), "cudaEventCreate") < 0 || CU(X, cudaEventCreate(&X->dj), "cudaEventCreate") < 0)
		return -1;
	X->ev = (cudaEvent_t *)mp_xcalloc((size_t)EV_KINDS * n1, sizeof(*X->ev));
	X->rec = (uint8_t *)mp_xcalloc((size_t)EV_KINDS * n1, 1);
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
			    CU(X, cudaEventCreate(&X->ev[(size_t)k * n + i]), "cudaEventCreate (%u actions)", n) < 0)
				return -1;
	}
	if (calibrate(X) < 0 || load_kernels(X) < 0)
		return -1;
	if (R->o.compute == MP_EXEC_REAL)
		prepare_kernels(X, &out->cuda);
	if (CU(X, cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo") < 0)
		return -1;
	out->cuda.total_bytes = tot;
	out->cuda.used_before_bytes = tot - fr;

	X->dev = (uint8_t **)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*X->dev));
	if (R->o.alloc == MP_EXEC_ASYNC) {
		if (async_pool_create(X) < 0)
			return -1;
	} else if (CU(X, cudaMalloc((void **)&X->arena, R->mem_bytes ? R->mem_bytes : 1), "cudaMalloc (%s of %s)",
		      R->o.alloc == MP_EXEC_POOL ? "a pool" : "an arena", mp_fmt_bytes(R->mem_bytes, b1, sizeof(b1))) < 0) {
		return -1;
	}
	if (CU(X, cudaMalloc((void **)&X->slots, (size_t)R->n_slots * sizeof(ull)), "cudaMalloc (%u check slots)", R->n_slots) < 0 ||
	    CU(X, cudaMalloc((void **)&X->tim, (size_t)3 * n1 * sizeof(ull)), "cudaMalloc (op timers)") < 0 ||
	    CU(X, cudaMemset(X->tim, 0, (size_t)3 * n1 * sizeof(ull)), "cudaMemset (op timers)") < 0)
		return -1;
	X->h_slots = (ull *)mp_xcalloc(R->n_slots, sizeof(ull));
	X->h_tim = (ull *)mp_xcalloc((size_t)3 * n1, sizeof(ull));
	at = (uint64_t *)mp_xcalloc(net->n_tensors ? net->n_tensors : 1, sizeof(*at));
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (R->swapped[t]) {
			at[t] = pinned;
			pinned += (net->tensors[t].bytes + 255) / 256 * 256;
		}
	if (pinned && CU(X, cudaMallocHost((void **)&X->pinned, pinned), "cudaMallocHost (%s of pinned host buffers)",
			 mp_fmt_bytes(pinned, b1, sizeof(b1))) < 0) {
		free(at);
		return -1;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (R->swapped[t])
			R->t[t].host = X->pinned + at[t];
	free(at);
	out->cuda.pinned_bytes = pinned;
	if (CU(X, cudaMemGetInfo(&fr, &tot), "cudaMemGetInfo") < 0)
		return -1;
	out->cuda.used_alloc_bytes = tot - fr;
	X->used_peak = tot - fr;
	/* With real kernels, hashing would add its own time to every op: the
	 * checks run in one more iteration first, and the warm-up and measured
	 * iterations hash nothing.  Timed ops absorb their checks in their
	 * modelled time, so without real kernels every iteration checks. */
	R->check_first = X->kern && out->cuda.ops_real;
	out->cuda.checked_iterations = R->check_first ? 1 : R->o.warmup + R->o.iters;
	return 0;
}

const struct backend_i backend_cuda = {
	"cuda",      /* name */
	8,           /* align */
	c_open,
	c_close,
	c_host_fill,
	c_iter_begin,
	c_iter_end,
	c_slot_sum,
	c_measure,
	c_place,
	c_release,
	c_alloc,
	c_free,
	c_mark,
	c_copy_out,
	c_copy_in,
	c_wait,
	c_op_begin,
	c_op_run,
	c_same_run,
	c_hash,
	c_fill,
	c_op_end,
	c_issued,
	c_finish,
	exec_cuda_runtime_version,
	exec_cuda_link,
	exec_cuda_profile,
};

int exec_cuda_run(const struct mp_net *net, const struct mp_plan_req *req, const struct mp_plan *p,
		  const struct mp_exec_opts *o, struct mp_exec_result *out, struct mp_error *err)
{
	return replay_run(&backend_cuda, net, req, p, o, out, err);
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
	/* each way: the large copy for the bandwidth, a LINK_SMALL one for the
	 * latency per copy (the two ways' medians averaged) */
	out->latency_us = 0;
	for (int dir = 0; dir < 2; dir++)
		for (int small = 0; small < 2; small++) {
			const uint64_t n = small ? LINK_SMALL : out->copy_bytes;
			double ms[5];

			for (int k = -1; k < 5; k++) { /* k -1: warm-up */
				float got = 0;

				TRY(cudaEventRecord(a, st), "cudaEventRecord");
				if (dir == 0)
					TRY(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, st), "cudaMemcpyAsync");
				else
					TRY(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, st), "cudaMemcpyAsync");
				TRY(cudaEventRecord(b, st), "cudaEventRecord");
				TRY(cudaEventSynchronize(b), "cudaEventSynchronize");
				TRY(cudaEventElapsedTime(&got, a, b), "cudaEventElapsedTime");
				if (k >= 0)
					ms[k] = got;
			}
			const double med = mp_median(ms, 5);

			if (small) /* (less the bytes' own time at the rate just measured) */
				out->latency_us += fmax(0, med * 1e3 - n / (dir == 0 ? out->h2d_gbps : out->d2h_gbps) / 1e3) / 2;
			else
				*(dir == 0 ? &out->h2d_gbps : &out->d2h_gbps) = med > 0 ? (double)n / med / 1e6 : 0;
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
