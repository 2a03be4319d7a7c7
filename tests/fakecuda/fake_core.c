/*
 * fake_core: the CUDA runtime functions kern_cuda.cu calls (cudaMalloc,
 * cudaFree, cudaMemset, cudaGetLastError) on the host, those
 * backend_cuda.cu's host build adds (streams, events, copies, pinned memory,
 * memory pools: at the end of this file), and the registry the
 * fake cuDNN and cuBLAS check their calls against (fakecuda.h): live
 * allocations with the state of each byte (fakecuda.h "Shadow bytes"), kept
 * as sorted runs of bytes in the same state, the log of each call's reads
 * and writes, violations, live handle and descriptor counts, fault
 * injection.  An access costs O(allocations + runs of the layout x log of
 * the allocation's state runs + the state runs it covers).
 */
#include "fakecuda.h"
#include "../../analysis/base/util.h"

#include <cuda_runtime_api.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bytes [lo, next one's lo) in one state: bit 7 a value from before the op,
 * bit 6 read since last written, bits 0-5 this op's writes. */
#define S_BEFORE 0x80
#define S_READ 0x40
#define S_COUNT 0x3f
/* Streams told apart by the order check (fake_core.c, "stream order"): 0
 * is stream 0, the others take 1 .. FK_NS - 1 in turn. */
#define FK_NS 8

struct seg {
	uint64_t lo;
	uint8_t state;
	/* stream order: when each stream's last write and read of these
	 * bytes ends, on that stream's clock (ns) */
	uint64_t w_end[FK_NS], r_end[FK_NS];
};

struct alloc {
	char *base;
	uint64_t bytes;
	int32_t tag;
	const char *name;      /* the test's, borrowed; NULL: internal */
	struct seg *seg;       /* [n_seg], seg[0].lo 0, ascending; the last one
				* runs to bytes */
	uint32_t n_seg, cap_seg;
};

static struct alloc **allocs; /* [n_allocs] live */
static uint32_t n_allocs, cap_allocs;
static cudaError_t last_error = cudaSuccess;

static struct fk_access *log_v; /* [n_log] */
static uint32_t n_log, cap_log, seq;

static uint64_t n_violations, print_left = 40;
static char context[256];

static uint64_t fallible, fail_countdown;
static long live[FK_OBJ__COUNT];
static unsigned loaded, algos[3];
static bool values;

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n);

	if (!q) {
		fprintf(stderr, "fakecuda: out of memory\n");
		abort();
	}
	return q;
}

static void vreport(const char *call, const char *fmt, va_list ap)
{
	n_violations++;
	if (!print_left)
		return;
	print_left--;
	fprintf(stderr, "fakecuda: %s%s%s: ", context, context[0] ? ": " : "", call);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	if (!print_left)
		fprintf(stderr, "fakecuda: further violations are counted, not printed\n");
}

void fk_violation(const char *call, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport(call, fmt, ap);
	va_end(ap);
}

uint64_t fk_violations(void)
{
	return n_violations;
}

void fk_context(const char *what)
{
	snprintf(context, sizeof(context), "%s", what ? what : "");
}

void fk_print_limit(uint64_t n)
{
	print_left = n;
}

uint64_t fk_fallible_calls(void)
{
	return fallible;
}

void fk_fail_at(uint64_t n)
{
	fail_countdown = n;
}

bool fk_inject(void)
{
	fallible++;
	return fail_countdown && --fail_countdown == 0;
}

static const char *const obj_names[FK_OBJ__COUNT] = {
	"cuDNN handle", "cuBLAS handle", "tensor descriptor", "filter descriptor", "convolution descriptor",
	"pooling descriptor", "activation descriptor", "LRN descriptor", "dropout descriptor", "stream", "event",
};

const char *fk_obj_name(enum fk_obj k)
{
	return k < FK_OBJ__COUNT ? obj_names[k] : "?";
}

void fk_obj_new(enum fk_obj k)
{
	live[k]++;
}

void fk_obj_gone(enum fk_obj k)
{
	live[k]--;
}

long fk_live(enum fk_obj k)
{
	return live[k];
}

void fk_loaded_mark(unsigned which)
{
	loaded |= which;
}

void fk_algo_used(int dir, int algo)
{
	if (dir >= 0 && dir < 3 && algo >= 0 && algo < 32)
		algos[dir] |= 1u << algo;
}

unsigned fk_algos_used(int dir)
{
	return dir >= 0 && dir < 3 ? algos[dir] : 0;
}

void fk_values(bool on)
{
	values = on;
}

bool fk_values_on(void)
{
	return values;
}

unsigned fk_loaded(void)
{
	return loaded;
}

/* ---- allocations ---- */

/* The live allocation holding byte p, or NULL. */
static struct alloc *find(const void *p)
{
	const char *c = (const char *)p;

	for (uint32_t i = 0; i < n_allocs; i++)
		if (c >= allocs[i]->base && c < allocs[i]->base + allocs[i]->bytes)
			return allocs[i];
	return NULL;
}

struct CUstream_st {
	uint64_t t;   /* when its work so far ends (ns) */
	int id;       /* for the order check: 1 .. FK_NS - 1 */
};

static uint64_t host_ns;                /* what the host has waited for */
static uint64_t latest_ns;              /* the latest clock of any stream */
static struct CUstream_st null_stream;  /* stream 0 */
static cudaStream_t on_stream;          /* the CPU kernel's (fk_on_stream) */
static uint32_t streams_made;

/* A stream's clock, as work issued now sees it: not before the host's. */
static uint64_t *clock_of(cudaStream_t s)
{
	struct CUstream_st *st = s ? s : &null_stream;

	if (st->t < host_ns)
		st->t = host_ns;
	return &st->t;
}

static void clock_add(cudaStream_t s, uint64_t ns)
{
	uint64_t *c = clock_of(s);

	*c += ns;
	if (*c > latest_ns)
		latest_ns = *c;
}

void fk_on_stream(cudaStream_t s)
{
	on_stream = s;
}

uint64_t fk_clock_ns(void)
{
	return *clock_of(on_stream);
}

void fk_clock_advance(uint64_t ns)
{
	clock_add(on_stream, ns);
}

static void host_waits(uint64_t t)
{
	if (t > host_ns)
		host_ns = t;
}

/*
 * Stream order.  Every call's effect on memory happens when it is made, so
 * the data checks cannot see a missing wait: a copy and the op that reads
 * its bytes on another stream are both done by then.  The clocks can: each
 * device byte's runs remember when each stream's last write and read of
 * them ends, and a call on stream s that starts at t before another
 * stream's write of its bytes ends (or, writing, before another stream's
 * read ends) is a violation: on a GPU the two would overlap, for no event
 * orders them.  A call's stream and span: a copy's (its start to its end),
 * a CPU kernel's (fk_on_stream; at its stream's clock), a library call's
 * (its handle's stream, fk_call_stream; at that clock), otherwise stream 0's.
 * Limits: what the timeline orders by chance, without an event, is not
 * caught; a kernel's or library call's accesses are an instant at its
 * stream's clock when it is called (the backend's kernels spin an op's
 * modelled time after its data kernels, and the fake libraries take no
 * time), so only a copy's accesses span time: a copy that overlaps the rest
 * of an op's run is not caught; workspace arguments are not checked; the
 * stream-ordered pool (cudaMallocFromPoolAsync, cudaFreeAsync) allocates
 * and frees at issue, so reuse across streams there is not timed.
 */
struct span {
	bool set;
	int sid;
	uint64_t t0, t1;
};

static struct span next_span;  /* the next fk_call's */

static int stream_id(cudaStream_t s)
{
	return s ? s->id : 0;
}

/* The next call's stream and span (right before its fk_call): dur ns from
 * the stream's clock now. */
static void call_on(cudaStream_t s, uint64_t dur)
{
	uint64_t t = *clock_of(s);

	next_span = (struct span){ true, stream_id(s), t, t + dur };
}

/* The span call_on set for the call now open, if it set one; unset after. */
static struct span take_span(void)
{
	struct span sp = next_span;

	next_span.set = false;
	return sp;
}

/* ---- the state of each byte, as runs ---- */

static void seg_reset(struct alloc *a, uint8_t state)
{
	if (!a->cap_seg) {
		a->cap_seg = 8;
		a->seg = (struct seg *)xrealloc(NULL, a->cap_seg * sizeof(*a->seg));
	}
	a->n_seg = 1;
	memset(&a->seg[0], 0, sizeof(a->seg[0]));
	a->seg[0].state = state;
}

static bool seg_same(const struct seg *x, const struct seg *y)
{
	return x->state == y->state && !memcmp(x->w_end, y->w_end, sizeof(x->w_end)) &&
	       !memcmp(x->r_end, y->r_end, sizeof(x->r_end));
}

/* The run holding byte x (x < bytes). */
static uint32_t seg_find(const struct alloc *a, uint64_t x)
{
	uint32_t lo = 0, hi = a->n_seg; /* seg[lo].lo <= x < seg[hi].lo */

	while (hi - lo > 1) {
		uint32_t mid = (lo + hi) / 2;

		if (a->seg[mid].lo <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

/* A run boundary at x (0 < x < bytes); returns the run starting at x. */
static uint32_t seg_split(struct alloc *a, uint64_t x)
{
	uint32_t i = seg_find(a, x);

	if (a->seg[i].lo == x)
		return i;
	if (a->n_seg == a->cap_seg) {
		a->cap_seg *= 2;
		a->seg = (struct seg *)xrealloc(a->seg, a->cap_seg * sizeof(*a->seg));
	}
	memmove(&a->seg[i + 2], &a->seg[i + 1], (a->n_seg - i - 1) * sizeof(*a->seg));
	a->seg[i + 1] = a->seg[i];
	a->seg[i + 1].lo = x;
	a->n_seg++;
	return i + 1;
}

static uint64_t seg_end(const struct alloc *a, uint32_t i)
{
	return i + 1 < a->n_seg ? a->seg[i + 1].lo : a->bytes;
}

/* Merge equal neighbours around runs [from, to]. */
static void seg_merge(struct alloc *a, uint32_t from, uint32_t to)
{
	uint32_t w = from ? from - 1 : 0;

	if (to + 1 >= a->n_seg)
		to = a->n_seg - 1;
	else
		to++;
	for (uint32_t r = w + 1; r <= to; r++)
		if (!seg_same(&a->seg[r], &a->seg[w]))
			a->seg[++w] = a->seg[r];
	memmove(&a->seg[w + 1], &a->seg[to + 1], (a->n_seg - to - 1) * sizeof(*a->seg));
	a->n_seg -= to - w;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
	struct alloc *a;

	if (!devPtr) {
		fk_violation("cudaMalloc", "devPtr is NULL");
		return last_error = cudaErrorInvalidValue;
	}
	if (fk_inject())
		return last_error = cudaErrorMemoryAllocation; /* *devPtr untouched */
	if (size == 0) {
		*devPtr = NULL;
		return cudaSuccess;
	}
	a = (struct alloc *)calloc(1, sizeof(*a));
	if (!a)
		return last_error = cudaErrorMemoryAllocation;
	/* 256-byte aligned as the runtime's; only the size asked for is valid */
	a->base = (char *)aligned_alloc(256, (size + 255) / 256 * 256);
	if (!a->base) {
		free(a);
		return last_error = cudaErrorMemoryAllocation;
	}
	a->bytes = size;
	a->tag = FK_TAG_INTERNAL;
	seg_reset(a, 0);
	if (n_allocs == cap_allocs) {
		cap_allocs = cap_allocs ? 2 * cap_allocs : 64;
		allocs = (struct alloc **)xrealloc(allocs, cap_allocs * sizeof(*allocs));
	}
	allocs[n_allocs++] = a;
	*devPtr = a->base;
	return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr)
{
	if (!devPtr)
		return cudaSuccess;
	for (uint32_t i = 0; i < n_allocs; i++)
		if (allocs[i]->base == devPtr) {
			struct alloc *a = allocs[i];

			free(a->base);
			free(a->seg);
			free(a);
			allocs[i] = allocs[--n_allocs];
			return cudaSuccess;
		}
	fk_violation("cudaFree", "%p is not the start of a live cudaMalloc allocation%s", devPtr,
		     find(devPtr) ? " (it is inside one)" : "");
	return last_error = cudaErrorInvalidValue;
}

static cudaError_t memset_on(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	struct alloc *a = find(devPtr);
	struct fk_layout l = fk_bytes(count);

	if (fk_inject())
		return last_error = cudaErrorInvalidValue;
	if (!count)
		return cudaSuccess;
	if (!a || (uint64_t)((char *)devPtr - a->base) + count > a->bytes) {
		fk_violation("cudaMemset", "[%p, +%zu) is not inside one allocation", devPtr, count);
		return last_error = cudaErrorInvalidValue;
	}
	memset(devPtr, value, count);
	call_on(stream, 0);
	fk_call("cudaMemset");
	fk_arg("devPtr", devPtr, &l, FK_W, 0);
	fk_end();
	return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
	return memset_on(devPtr, value, count, NULL);
}

/* (at once, and at its stream's clock for the order check) */
cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
	return memset_on(devPtr, value, count, stream);
}

cudaError_t cudaGetLastError(void)
{
	cudaError_t e = last_error;

	last_error = cudaSuccess;
	return e;
}

void fk_tag(const void *p, int32_t tag, const char *name)
{
	struct alloc *a = find(p);

	if (!a || a->base != (const char *)p) {
		fk_violation("fk_tag", "%p is not the start of a live allocation", p);
		return;
	}
	a->tag = tag;
	a->name = name;
}

void fk_define(const void *p, bool defined)
{
	struct alloc *a = find(p);

	if (a)
		seg_reset(a, defined ? S_BEFORE : 0);
}

void fk_write_counts(const void *p, uint64_t n, unsigned *lo, unsigned *hi, uint64_t *at_lo)
{
	struct alloc *a = find(p);
	uint64_t from, to;

	*lo = *hi = 0;
	*at_lo = 0;
	if (!a || !n)
		return;
	from = (uint64_t)((const char *)p - a->base);
	to = n > a->bytes - from ? a->bytes : from + n;
	*lo = 255;
	for (uint32_t i = seg_find(a, from); i < a->n_seg && a->seg[i].lo < to; i++) {
		unsigned c = a->seg[i].state & S_COUNT;

		if (c < *lo) {
			*lo = c;
			*at_lo = (a->seg[i].lo > from ? a->seg[i].lo : from) - from;
		}
		if (c > *hi)
			*hi = c;
	}
}

uint64_t fk_alloc_bytes(int32_t tag, uint32_t *count)
{
	uint64_t b = 0;
	uint32_t n = 0;

	for (uint32_t i = 0; i < n_allocs; i++)
		if (allocs[i]->tag == tag) {
			b += allocs[i]->bytes;
			n++;
		}
	if (count)
		*count = n;
	return b;
}

/* ---- the log ---- */

uint32_t fk_log_count(void)
{
	return n_log;
}

const struct fk_access *fk_log_at(uint32_t i)
{
	return i < n_log ? &log_v[i] : NULL;
}

void fk_log_clear(void)
{
	algos[0] = algos[1] = algos[2] = 0;
	n_log = 0;
	seq = 0;
}

static void log_add(const struct fk_access *e)
{
	if (n_log == cap_log) {
		cap_log = cap_log ? 2 * cap_log : 256;
		log_v = (struct fk_access *)xrealloc(log_v, cap_log * sizeof(*log_v));
	}
	log_v[n_log++] = *e;
}

/* ---- layouts ---- */

struct fk_layout fk_bytes(uint64_t nbytes)
{
	struct fk_layout l;

	memset(&l, 0, sizeof(l));
	l.nd = 1;
	l.dim[0] = (int64_t)nbytes;
	l.str[0] = 1;
	l.esize = 1;
	return l;
}

uint64_t fk_extent(const struct fk_layout *l)
{
	uint64_t last = 0;

	for (int i = 0; i < l->nd; i++) {
		if (l->dim[i] <= 0)
			return 0;
		last += (uint64_t)(l->dim[i] - 1) * (uint64_t)l->str[i];
	}
	return (last + 1) * l->esize;
}

/* Does the layout name some element twice?  (Sort the dimensions by stride;
 * each must step over everything inside the next smaller.) */
static bool self_overlaps(const struct fk_layout *l)
{
	int idx[FK_MAX_DIMS], n = 0;

	for (int i = 0; i < l->nd; i++)
		if (l->dim[i] > 1)
			idx[n++] = i;
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && l->str[idx[j]] < l->str[idx[j - 1]]; j--) {
			int t = idx[j];

			idx[j] = idx[j - 1];
			idx[j - 1] = t;
		}
	for (int i = 1; i < n; i++)
		if (l->str[idx[i]] < l->str[idx[i - 1]] * l->dim[idx[i - 1]])
			return true;
	return n > 0 && l->str[idx[0]] < 1;
}

static bool same_layout(const struct fk_layout *a, const struct fk_layout *b)
{
	if (a->nd != b->nd || a->esize != b->esize)
		return false;
	for (int i = 0; i < a->nd; i++)
		if (a->dim[i] != b->dim[i] || (a->dim[i] > 1 && a->str[i] != b->str[i]))
			return false;
	return true;
}

/* Calls f(ctx, byte offset, bytes) for each contiguous run of the layout. */
typedef void (*run_fn)(void *ctx, uint64_t off, uint64_t len);
static void for_runs(const struct fk_layout *l, run_fn f, void *ctx)
{
	int64_t block = 1, idx[FK_MAX_DIMS] = { 0 };
	int outer = l->nd; /* dimensions [0, outer) are iterated */

	if (fk_extent(l) == 0)
		return;
	while (outer > 0 && (l->dim[outer - 1] == 1 || l->str[outer - 1] == block)) {
		block *= l->dim[outer - 1];
		outer--;
	}
	for (;;) {
		uint64_t off = 0;
		int i;

		for (i = 0; i < outer; i++)
			off += (uint64_t)idx[i] * (uint64_t)l->str[i];
		f(ctx, off * l->esize, (uint64_t)block * l->esize);
		for (i = outer - 1; i >= 0; i--) {
			if (++idx[i] < l->dim[i])
				break;
			idx[i] = 0;
		}
		if (i < 0)
			return;
	}
}

/* ---- calls ---- */

#define MAX_ARGS 16
struct arg {
	const char *name;
	const char *p;
	struct fk_layout l;
	unsigned how;
	int inplace;
	struct alloc *a;
	uint64_t lo, hi;   /* byte offsets in a */
	bool ok;
	/* shadow pass results */
	bool read_before;
	uint64_t unwritten, unwritten_at, dead, dead_at;
	uint64_t raced, raced_at, raced_end;  /* stream order: bytes, the first, until when */
	int raced_sid;
};

static struct {
	const char *call;
	uint32_t n;
	struct arg a[MAX_ARGS];
	int fails;
	bool open;
	struct span span;  /* its stream and when (stream order) */
} C;

void fk_call(const char *call)
{
	if (C.open)
		fk_violation(call, "called inside %s (fakecuda bug)", C.call);
	memset(&C, 0, sizeof(C));
	C.call = call;
	C.open = true;
	C.span = take_span();
}

/* A library call on its handle's stream: inside the call, after fk_call. */
void fk_call_stream(cudaStream_t s)
{
	if (!C.open)
		return;
	call_on(s, 0);
	C.span = take_span();
}

void fk_arg(const char *name, const void *p, const struct fk_layout *l, unsigned how, int inplace)
{
	struct arg *a;

	if (C.n == MAX_ARGS) {
		fk_fail("more than %d pointer arguments (fakecuda bug)", MAX_ARGS);
		return;
	}
	a = &C.a[C.n++];
	a->name = name;
	a->p = (const char *)p;
	a->l = *l;
	a->how = how;
	a->inplace = inplace;
}

void fk_fail(const char *fmt, ...)
{
	va_list ap;

	C.fails++;
	va_start(ap, fmt);
	vreport(C.call ? C.call : "?", fmt, ap);
	va_end(ap);
}

/* Check run i of al against the call's span, then record the access. */
static void order_run(struct arg *a, struct alloc *al, uint32_t i, bool write)
{
	struct seg *g = &al->seg[i];
	int sid = C.span.sid, with = -1;
	uint64_t until = 0;

	/* a read meets another stream's write; a write, its write or read
	 * (two reads never race) */
	for (int u = 0; u < FK_NS; u++) {
		uint64_t end = write && g->r_end[u] > g->w_end[u] ? g->r_end[u] : g->w_end[u];

		if (u != sid && end > C.span.t0 && end > until) {
			until = end;
			with = u;
		}
	}
	if (with >= 0) {
		if (!a->raced) {
			a->raced_at = g->lo - a->lo;
			a->raced_sid = with;
		}
		if (until > a->raced_end) {
			a->raced_end = until;
			a->raced_sid = with;
		}
		a->raced += seg_end(al, i) - g->lo;
	}
	if (write)
		g->w_end[sid] = g->w_end[sid] > C.span.t1 ? g->w_end[sid] : C.span.t1;
	else
		g->r_end[sid] = g->r_end[sid] > C.span.t1 ? g->r_end[sid] : C.span.t1;
}

static void read_run(void *ctx, uint64_t off, uint64_t len)
{
	struct arg *a = (struct arg *)ctx;
	struct alloc *al = a->a;
	uint64_t lo = a->lo + off, hi = lo + len;
	uint32_t first = lo ? seg_split(al, lo) : 0, last;

	if (hi < al->bytes)
		seg_split(al, hi);
	last = seg_find(al, hi - 1);
	for (uint32_t i = first; i <= last; i++) {
		order_run(a, al, i, false);
		if (al->seg[i].state & S_BEFORE)
			a->read_before = true;
		else if (!(al->seg[i].state & S_COUNT)) {
			if (!a->unwritten)
				a->unwritten_at = al->seg[i].lo - a->lo;
			a->unwritten += seg_end(al, i) - al->seg[i].lo;
		}
		al->seg[i].state |= S_READ;
	}
	seg_merge(al, first, last);
}

static void write_run(void *ctx, uint64_t off, uint64_t len)
{
	struct arg *a = (struct arg *)ctx;
	struct alloc *al = a->a;
	uint64_t lo = a->lo + off, hi = lo + len;
	uint32_t first = lo ? seg_split(al, lo) : 0, last;

	if (hi < al->bytes)
		seg_split(al, hi);
	last = seg_find(al, hi - 1);
	for (uint32_t i = first; i <= last; i++) {
		unsigned c = al->seg[i].state & S_COUNT;

		order_run(a, al, i, true);
		/* a value this op wrote, overwritten unread: lost work (a
		 * beta 0 where an accumulation was meant) */
		if (c && !(al->seg[i].state & S_READ) && al->tag >= 0 && !a->dead++)
			a->dead_at = al->seg[i].lo - a->lo;
		al->seg[i].state = (uint8_t)(c < S_COUNT ? c + 1 : S_COUNT);
	}
	seg_merge(al, first, last);
}

static const char *alloc_name(const struct alloc *a)
{
	if (a->name)
		return a->name;
	return a->tag == FK_TAG_WORKSPACE ? "the workspace" : "an internal allocation";
}

/*
 * FAKECUDA_OUTPUTS=hash (the gpu-dry memplan's runs, tests/cli/t0604): a
 * library call (cuDNN, cuBLAS) that computes no values fills what it writes
 * with bytes drawn from a hash of the call's name and of what it only
 * reads, so that the same call on the same inputs writes the same bytes: a
 * rebuild then matches its first run, as on a GPU, where without it the
 * outputs keep whatever bytes were there.  Arguments read and written (an
 * accumulation, batch norm's running statistics) are written, not hashed.
 * Copies and the backend's own kernels are left as they are.
 */
struct hash_ctx {
	const unsigned char *base;
	uint64_t h;
};

static void hash_run(void *ctx, uint64_t off, uint64_t len)
{
	struct hash_ctx *x = (struct hash_ctx *)ctx;
	uint64_t k = 0;

	for (; k + 8 <= len; k += 8) {
		uint64_t w;

		memcpy(&w, x->base + off + k, 8);
		x->h = mp_fnv_words(x->h, &w, 1);
	}
	for (; k < len; k++)
		x->h = (x->h ^ x->base[off + k]) * MP_FNV_PRIME;
}

static void fill_run(void *ctx, uint64_t off, uint64_t len)
{
	struct hash_ctx *x = (struct hash_ctx *)ctx;
	unsigned char *b = (unsigned char *)(uintptr_t)x->base + off;

	for (uint64_t k = 0; k < len; k++) {
		x->h ^= x->h << 13;
		x->h ^= x->h >> 7;
		x->h ^= x->h << 17;
		b[k] = (unsigned char)(x->h >> 24);
	}
}

static int outputs_hash = -1; /* -1: as FAKECUDA_OUTPUTS says */

void fk_outputs_hash(bool on)
{
	outputs_hash = on;
}

static void hash_outputs(void)
{
	struct hash_ctx x = { NULL, MP_FNV_OFFSET };

	if (outputs_hash < 0) {
		const char *e = getenv("FAKECUDA_OUTPUTS");

		outputs_hash = e && !strcmp(e, "hash");
	}
	if (!outputs_hash || fk_values_on() || (strncmp(C.call, "cudnn", 5) && strncmp(C.call, "cublas", 6)))
		return;
	for (const char *c = C.call; *c; c++)
		x.h = (x.h ^ (unsigned char)*c) * MP_FNV_PRIME;
	for (uint32_t i = 0; i < C.n; i++)
		if (C.a[i].ok && (C.a[i].how & (FK_R | FK_W)) == FK_R) {
			x.base = (const unsigned char *)C.a[i].p;
			for_runs(&C.a[i].l, hash_run, &x);
		}
	for (uint32_t i = 0; i < C.n; i++)
		if (C.a[i].ok && (C.a[i].how & FK_W)) {
			struct hash_ctx y = { (const unsigned char *)C.a[i].p, x.h ^ (0x9e3779b97f4a7c15ull * (i + 1)) };

			for_runs(&C.a[i].l, fill_run, &y);
		}
}

int fk_end(void)
{
	uint32_t s = seq++;

	if (!C.span.set) {
		call_on(NULL, 0);
		C.span = take_span();
	}

	/* every extent inside one live allocation */
	for (uint32_t i = 0; i < C.n; i++) {
		struct arg *a = &C.a[i];
		uint64_t ext = fk_extent(&a->l);

		if (!ext)
			continue;
		if (!a->p) {
			fk_fail("%s is NULL (%llu bytes expected)", a->name, (unsigned long long)ext);
			continue;
		}
		if ((uintptr_t)a->p % a->l.esize) {
			fk_fail("%s (%p) is not aligned to its %u-byte elements", a->name, (const void *)a->p,
				a->l.esize);
			continue;
		}
		a->a = find(a->p);
		if (!a->a) {
			fk_fail("%s (%p, %llu bytes) is not inside any live allocation", a->name, (const void *)a->p,
				(unsigned long long)ext);
			continue;
		}
		a->lo = (uint64_t)(a->p - a->a->base);
		a->hi = a->lo + ext;
		if (a->hi > a->a->bytes) {
			fk_fail("%s runs %llu bytes past the end of %s (%llu bytes, from offset %llu, %llu bytes)",
				a->name, (unsigned long long)(a->hi - a->a->bytes), alloc_name(a->a),
				(unsigned long long)a->a->bytes, (unsigned long long)a->lo, (unsigned long long)ext);
			continue;
		}
		if ((a->how & FK_W) && self_overlaps(&a->l)) {
			fk_fail("%s: an output whose layout names an element twice", a->name);
			continue;
		}
		a->ok = true;
	}
	/* an output (or a workspace) shares no byte with another argument,
	 * unless both are the same in-place group with the same layout */
	for (uint32_t i = 0; i < C.n; i++) {
		const struct arg *a = &C.a[i];

		if (!a->ok || !(a->how & (FK_W | FK_SCRATCH)))
			continue;
		for (uint32_t j = 0; j < C.n; j++) {
			const struct arg *b = &C.a[j];

			if (j == i || !b->ok || b->a != a->a || (b->how & FK_BOUNDS) || b->hi <= a->lo ||
			    a->hi <= b->lo)
				continue;
			if (a->inplace > 0 && a->inplace == b->inplace && a->p == b->p && same_layout(&a->l, &b->l))
				continue;
			if (j < i && (b->how & (FK_W | FK_SCRATCH)))
				continue; /* said once */
			fk_fail("%s [%llu, %llu) overlaps %s [%llu, %llu) in %s", a->name, (unsigned long long)a->lo,
				(unsigned long long)a->hi, b->name, (unsigned long long)b->lo,
				(unsigned long long)b->hi, alloc_name(a->a));
		}
	}
	/* reads, then writes */
	for (uint32_t i = 0; i < C.n; i++) {
		struct arg *a = &C.a[i];

		if (!a->ok || !(a->how & FK_R))
			continue;
		for_runs(&a->l, read_run, a);
		if (a->unwritten)
			fk_fail("%s reads %llu bytes of %s never written (the first at byte %llu of the argument)",
				a->name, (unsigned long long)a->unwritten, alloc_name(a->a),
				(unsigned long long)a->unwritten_at);
	}
	for (uint32_t i = 0; i < C.n; i++) {
		struct arg *a = &C.a[i];
		struct fk_access e;

		if (!a->ok)
			continue;
		if (a->how & FK_W) {
			for_runs(&a->l, write_run, a);
			if (a->dead)
				fk_fail("%s overwrites bytes of %s that this op wrote and nobody read since (from byte %llu "
					"of the argument)",
					a->name, alloc_name(a->a), (unsigned long long)a->dead_at);
		}
		if (a->how & FK_BOUNDS)
			continue;
		memset(&e, 0, sizeof(e));
		e.seq = s;
		e.call = C.call;
		e.arg = a->name;
		e.tag = a->a->tag;
		e.lo = a->lo;
		e.hi = a->hi;
		e.read = (a->how & FK_R) != 0;
		e.write = (a->how & FK_W) != 0;
		e.read_before = a->read_before;
		e.scratch = (a->how & FK_SCRATCH) != 0;
		log_add(&e);
	}
	for (uint32_t i = 0; i < C.n; i++)
		if (C.a[i].ok && C.a[i].raced)
			fk_fail("%s: %llu bytes of %s (the first at byte %llu of the argument) are in use on stream %d until "
				"%.3f us, and this call starts on stream %d at %.3f us: no event orders them",
				C.a[i].name, (unsigned long long)C.a[i].raced, alloc_name(C.a[i].a),
				(unsigned long long)C.a[i].raced_at, C.a[i].raced_sid, C.a[i].raced_end / 1e3,
				C.span.sid, C.span.t0 / 1e3);
	if (!C.fails)
		hash_outputs();
	C.open = false;
	return C.fails;
}

/* ---- streams, events, copies, pinned memory, memory pools ----
 *
 * What verify/backend_cuda.cu calls beyond kern_cuda's, for its host build
 * (tests/unit/test_backends.cc).  Every call's effect on memory happens when
 * it is made, in issue order, which respects every event a stream waits for
 * (each was recorded earlier).  Time is modelled per stream, as a GPU runs
 * them: each stream has a clock (ns) that its copies advance (1 us + 1 ns
 * per 10 bytes) and the backend's CPU kernels advance (fk_clock_advance, on
 * the stream fk_on_stream named); an event records its stream's clock, a
 * stream that waits for an event moves its clock up to the event's, and no
 * stream's work starts before the host's clock: what the host has waited for
 * (cudaEventSynchronize, cudaStreamSynchronize, cudaDeviceSynchronize, a
 * synchronous cudaMemcpy).  So a copy overlaps compute on another stream,
 * and a stream that waits for it stalls, as on a GPU: in an arena, the
 * measured timeline and the memory replayed on it are the ones the plan
 * predicts (the pool of cudaMallocFromPoolAsync is not timed: it allocates
 * and frees at issue).  Checksum kernels take no time here; on a GPU a
 * swap-in's checksum lengthens the stall for it, which the simulator does
 * not predict.  Stream flags are ignored: stream 0 waits for no other
 * stream, as for the non-blocking streams the backend makes.  The
 * device is "fakecuda", 80 GiB, 4 multiprocessors; free memory is what
 * cudaMalloc has not handed out. */

#define FK_DEVICE_BYTES (UINT64_C(80) << 30)


struct CUevent_st {
	uint64_t t;
	bool recorded;
};

struct CUmemPoolHandle_st {
	uint64_t used, used_high, reserved_high;
	struct pool_alloc {
		void *p;
		uint64_t bytes;
	} *a;
	uint32_t n, cap;
};

cudaError_t cudaGetDeviceCount(int *count)
{
	*count = 1;
	return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
	return device == 0 ? cudaSuccess : (last_error = cudaErrorInvalidDevice);
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
	if (device != 0)
		return last_error = cudaErrorInvalidDevice;
	memset(prop, 0, sizeof(*prop));
	snprintf(prop->name, sizeof(prop->name), "fakecuda");
	prop->totalGlobalMem = FK_DEVICE_BYTES;
	prop->multiProcessorCount = 4;
	return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
	(void)device;
	*value = attr == cudaDevAttrMemoryPoolsSupported ? 1 : 0;
	return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
	host_waits(latest_ns);
	return cudaSuccess;
}

const char *cudaGetErrorName(cudaError_t error)
{
	return error == cudaSuccess ? "cudaSuccess" : "cudaErrorFake";
}

const char *cudaGetErrorString(cudaError_t error)
{
	return error == cudaSuccess ? "no error" : "a fakecuda error";
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
	uint64_t used = 0;

	for (uint32_t i = 0; i < n_allocs; i++)
		used += allocs[i]->bytes;
	*total = FK_DEVICE_BYTES;
	*free_bytes = used < FK_DEVICE_BYTES ? FK_DEVICE_BYTES - used : 0;
	return cudaSuccess;
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
	(void)flags;
	*pStream = (cudaStream_t)xrealloc(NULL, sizeof(struct CUstream_st));
	(*pStream)->t = host_ns;
	(*pStream)->id = 1 + (int)(streams_made++ % (FK_NS - 1));
	fk_obj_new(FK_OBJ_STREAM);
	return cudaSuccess;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
	if (on_stream == stream)
		on_stream = NULL;
	free(stream);
	fk_obj_gone(FK_OBJ_STREAM);
	return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
	host_waits(*clock_of(stream));
	return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event)
{
	*event = (cudaEvent_t)xrealloc(NULL, sizeof(struct CUevent_st));
	(*event)->recorded = false;
	(*event)->t = 0;
	fk_obj_new(FK_OBJ_EVENT);
	return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t event)
{
	free(event);
	fk_obj_gone(FK_OBJ_EVENT);
	return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
	event->t = *clock_of(stream);
	event->recorded = true;
	return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
	uint64_t *c = clock_of(stream);

	(void)flags;
	if (!event->recorded)
		fk_violation("cudaStreamWaitEvent", "the event was never recorded");
	else if (event->t > *c)
		*c = event->t;
	return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
	if (event->recorded) /* (one never recorded is complete, as in CUDA) */
		host_waits(event->t);
	return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
	if (!start->recorded || !end->recorded) {
		fk_violation("cudaEventElapsedTime", "an event was never recorded");
		return last_error = cudaErrorInvalidResourceHandle;
	}
	*ms = (float)(((double)end->t - (double)start->t) / 1e6);
	return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
	*ptr = aligned_alloc(256, (size + 255) / 256 * 256);
	return *ptr ? cudaSuccess : (last_error = cudaErrorMemoryAllocation);
}

cudaError_t cudaFreeHost(void *ptr)
{
	free(ptr);
	return cudaSuccess;
}

/* [p, +n) inside one device allocation, if dev; else any host bytes. */
static bool span_ok(const char *call, const void *p, size_t n, bool dev)
{
	struct alloc *a;

	if (!dev || !n)
		return true;
	a = find(p);
	if (a && (uint64_t)((const char *)p - a->base) + n <= a->bytes)
		return true;
	fk_violation(call, "[%p, +%zu) is not inside one device allocation", p, n);
	return false;
}

/* A copy on stream s: its bytes at once, its time on the stream's clock
 * (the host's too when sync). */
static cudaError_t copy_on(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t s,
			   bool sync)
{
	const bool to_dev = kind == cudaMemcpyHostToDevice || kind == cudaMemcpyDeviceToDevice;
	const bool from_dev = kind == cudaMemcpyDeviceToHost || kind == cudaMemcpyDeviceToDevice;

	if (!span_ok("cudaMemcpy", dst, count, to_dev) || !span_ok("cudaMemcpy", src, count, from_dev))
		return last_error = cudaErrorInvalidValue;
	memcpy(dst, src, count);
	if (count && (to_dev || from_dev))
		call_on(s, 1000 + count / 10);
	clock_add(s, 1000 + count / 10);
	if (sync)
		host_waits(*clock_of(s));
	if (count && (to_dev || from_dev)) {
		struct fk_layout l = fk_bytes(count);

		fk_call("cudaMemcpy");
		if (from_dev)
			fk_arg("src", src, &l, FK_R, 0);
		if (to_dev)
			fk_arg("dst", dst, &l, FK_W, 0);
		fk_end();
	}
	return cudaSuccess;
}

void fk_kernel(const char *name, const void *p, uint64_t n, unsigned how)
{
	struct fk_layout l = fk_bytes(n);

	if (!n)
		return;
	call_on(on_stream, 0);
	fk_call(name);
	fk_arg("p", p, &l, how, 0);
	fk_end();
}

/* (the legacy stream 0 does not wait for the backend's streams: they are
 * created non-blocking) */
cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
	return copy_on(dst, src, count, kind, NULL, true);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
	return copy_on(dst, src, count, kind, stream, false);
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
	(void)poolProps;
	*memPool = (cudaMemPool_t)calloc(1, sizeof(struct CUmemPoolHandle_st));
	return *memPool ? cudaSuccess : (last_error = cudaErrorMemoryAllocation);
}

cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
	free(memPool->a);
	free(memPool);
	return cudaSuccess;
}

/* Reserved memory is never given back (a release threshold of UINT64_MAX):
 * it is the used high-water mark. */
cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	uint64_t v;

	memcpy(&v, value, sizeof(v));
	if (attr == cudaMemPoolAttrUsedMemHigh)
		memPool->used_high = v ? v : memPool->used;
	else if (attr == cudaMemPoolAttrReservedMemHigh)
		memPool->reserved_high = v ? v : memPool->reserved_high;
	return cudaSuccess;
}

cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
	uint64_t v = attr == cudaMemPoolAttrUsedMemHigh	      ? memPool->used_high
		   : attr == cudaMemPoolAttrReservedMemHigh   ? memPool->reserved_high
		   : attr == cudaMemPoolAttrUsedMemCurrent    ? memPool->used
		   : attr == cudaMemPoolAttrReservedMemCurrent ? memPool->reserved_high
							       : 0;

	memcpy(value, &v, sizeof(v));
	return cudaSuccess;
}

static cudaMemPool_t the_pool; /* the last one allocated from: cudaFreeAsync's */

cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
	cudaError_t e = cudaMalloc(ptr, size);

	(void)stream;
	if (e != cudaSuccess)
		return e;
	if (memPool->n == memPool->cap) {
		memPool->cap = memPool->cap ? 2 * memPool->cap : 64;
		memPool->a = (struct pool_alloc *)xrealloc(memPool->a, memPool->cap * sizeof(*memPool->a));
	}
	memPool->a[memPool->n].p = *ptr;
	memPool->a[memPool->n++].bytes = size;
	memPool->used += size;
	if (memPool->used > memPool->used_high)
		memPool->used_high = memPool->used;
	if (memPool->used > memPool->reserved_high)
		memPool->reserved_high = memPool->used;
	the_pool = memPool;
	return cudaSuccess;
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream)
{
	(void)hStream;
	for (uint32_t i = 0; the_pool && i < the_pool->n; i++)
		if (the_pool->a[i].p == devPtr) {
			the_pool->used -= the_pool->a[i].bytes;
			the_pool->a[i] = the_pool->a[--the_pool->n];
			break;
		}
	return cudaFree(devPtr);
}
