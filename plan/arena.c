/*
 * Static arena assignment (memplan-plan(5) "arena"): every allocation of a
 * schedule (alloc, swap_in) gets a byte offset in one arena, greedy by size
 * with best fit, as TFLite's GreedyBySize planner and XLA's heap simulator
 * (GlobalDecreasingSizeBestFitHeap) do.
 *
 * Lifetimes are the simulator's: an allocation lives from its memory event
 * (alloc: the action's time; swap_in: the start of the copy) to the event
 * that ends it (free: the action's time; swap_out: the end of the copy, when
 * the memory is released), ordered by (time, action index) exactly as sim_run
 * orders memory events, so the bytes live at any instant never exceed the
 * simulated peak and the peak is the lower bound (max_live_bytes).  The
 * offsets hold for that timeline: an executor must order each write after the
 * release of its bytes' previous occupants (memplan-plan(5), "THE ARENA").
 *
 * Iterations run back to back (memplan-plan(5), "THE STEADY STATE"): a
 * persistent tensor that the schedule first allocates and then swaps out and
 * back in ends the iteration in its last allocation, where the next
 * iteration's first one must find it.  The two are one item with two
 * lifetimes, placed at one offset.
 *
 * Allocations are placed by decreasing size; each goes in the smallest gap
 * (lowest offset on ties) between the allocations already placed that overlap
 * it in time, or above the highest of them.  Offsets are aligned to
 * PLAN_ARENA_ALIGN (256) bytes; arena_bytes is the highest end, unrounded.
 *
 * Finding the placed allocations that overlap an interval is the cost of
 * greedy by size: listing them one by one (TFLite) is O(n * overlapping),
 * O(n^2) on a training schedule, where every saved activation is live at the
 * turn from forward to backward.  Only the union of their byte ranges
 * matters, so a segment tree over the event order keeps, per node, the union
 * of the ranges of the allocations covering the node ("cover") and of those
 * starting in it ("start"), each a sorted list of disjoint ranges, touching
 * ones merged.  What overlaps [s, e) is what is live at s (the cover lists of
 * the nodes over s) and what starts in (s, e) (the start lists of the nodes
 * that partition it): each lifetime of an allocation in one list of a query,
 * however many nodes it spans.  A placement merges
 * those O(log n) lists (a heap, each list skipping by galloping search what
 * the union so far covers; it stops at a gap of exactly the size) and adds
 * its range to O(log n) lists.  With R the ranges those lists
 * hold, one placement costs O(R log log n + log n (h + log h)), h the ranges
 * of a list; R grows with the holes of the free space over the interval, so
 * the worst case is O(n^2 log n), as greedy by size itself.  Measured (2-core
 * VM): 10^4-layer residual nets (bench/mknet.sh dag 10000), 47k to 64k
 * allocations, 0.3 to 0.6 s against 2.6 to 10 s for the one-by-one scan
 * (same offsets); 3 * 10^4 layers, 141k to 193k allocations, 1.7 to 6.4 s.
 */
#include "arena.h"

#include <stdlib.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* One allocation: bytes over the event ranks [s, e) (and [s2, e2): the
 * last allocation of a persistent tensor, at the same offset; s2 = e2 = 0
 * when none). */
struct item {
	uint64_t bytes;
	uint32_t s, e;
	uint32_t act;     /* action index */
	uint64_t breadth; /* the most bytes live at any event of its ranks */
	uint32_t s2, e2;
	uint32_t act2;
};

static inline bool meets(uint32_t s, uint32_t e, uint32_t s2, uint32_t e2, uint32_t ps, uint32_t pe, uint32_t ps2,
			 uint32_t pe2)
{
	return (ps < e && s < pe) || (s2 < e2 && ps < e2 && s2 < pe) || (ps2 < pe2 && ps2 < e && s < pe2) ||
	       (s2 < e2 && ps2 < pe2 && ps2 < e2 && s2 < pe2);
}

struct rng {
	uint64_t lo, hi;  /* [lo, hi) */
};

/* The next range of one list in a k-way merge. */
struct head {
	uint64_t lo;
	uint32_t k, pos;  /* range pos of list got[k] */
};

/* Sorted disjoint ranges; ranges that touch are merged. */
struct rset {
	uint32_t n, cap;
	struct rng *r;    /* [n] */
};

struct segtree {
	uint32_t m;           /* slots (event ranks) */
	size_t n_nodes;       /* allocated, at least 4m (a tree reused for fewer slots) */
	struct rset *cover;   /* [n_nodes]: union of allocations covering the node */
	struct rset *start;   /* [n_nodes]: union of allocations starting in the node */
	/* query scratch */
	uint32_t n_got, cap_got;
	const struct rset **got;
	uint32_t cap_heap;
	struct head *heap;
};

struct event {
	double t;
	uint32_t act;
	uint32_t item;
	int start;
};

static int event_cmp(const void *pa, const void *pb)
{
	const struct event *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->act < b->act ? -1 : a->act > b->act;
}

static int item_cmp(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;

	if (a->bytes != b->bytes)
		return a->bytes > b->bytes ? -1 : 1;
	if (a->s != b->s)
		return a->s < b->s ? -1 : 1;
	return a->act < b->act ? -1 : a->act > b->act;
}

/* Add [lo, hi) to s, merging every range it overlaps or touches. */
static void rset_add(struct rset *s, uint64_t lo, uint64_t hi)
{
	uint32_t a = 0, b = s->n, i, j;

	/* i: first range with hi >= lo (it may merge) */
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;

		if (s->r[mid].hi < lo)
			a = mid + 1;
		else
			b = mid;
	}
	i = a;
	/* j: first range with lo > hi (it stays) */
	b = s->n;
	while (a < b) {
		uint32_t mid = a + (b - a) / 2;

		if (s->r[mid].lo <= hi)
			a = mid + 1;
		else
			b = mid;
	}
	j = a;
	if (i == j) {
		/* from 2, not mp_grow's 16: placing the 10^4-layer fchain's
		 * plan, 85% of the lists that hold any range hold one or two
		 * (the process's RSS 148 -> 91 MB) */
		if (!s->cap) {
			s->r = mp_xmalloc(2 * sizeof(*s->r));
			s->cap = 2;
		}
		mp_grow((void **)&s->r, &s->cap, s->n + 1, sizeof(*s->r));
		memmove(s->r + i + 1, s->r + i, (s->n - i) * sizeof(*s->r));
		s->r[i] = (struct rng){ lo, hi };
		s->n++;
		return;
	}
	if (s->r[i].lo < lo)
		lo = s->r[i].lo;
	if (s->r[j - 1].hi > hi)
		hi = s->r[j - 1].hi;
	s->r[i] = (struct rng){ lo, hi };
	memmove(s->r + i + 1, s->r + j, (s->n - j) * sizeof(*s->r));
	s->n -= j - i - 1;
}

static void seg_init(struct segtree *T, uint32_t m)
{
	memset(T, 0, sizeof(*T));
	T->m = m ? m : 1;
	T->n_nodes = 4 * (size_t)T->m;
	T->cover = mp_xcalloc(T->n_nodes, sizeof(*T->cover));
	T->start = mp_xcalloc(T->n_nodes, sizeof(*T->start));
}

/* Empty every list, keeping its memory for the next placement. */
static void seg_clear(struct segtree *T)
{
	for (size_t k = 0; k < 4 * (size_t)T->m; k++)
		T->cover[k].n = T->start[k].n = 0;
}

static void seg_release(struct segtree *T)
{
	for (size_t k = 0; k < T->n_nodes; k++) {
		free(T->cover[k].r);
		free(T->start[k].r);
	}
	free(T->cover);
	free(T->start);
	free(T->got);
	free(T->heap);
}

/* The last placement's tree, kept for the next: freeing some 10^5 lists and
 * growing them again costs a fifth of a placement of a 10^4-layer schedule. */
static struct segtree seg_spare;

/* An empty tree over m slots: the spare when it is large enough. */
static void seg_take(struct segtree *T, uint32_t m)
{
	if (seg_spare.cover && seg_spare.n_nodes >= 4 * (size_t)(m ? m : 1)) {
		*T = seg_spare;
		memset(&seg_spare, 0, sizeof(seg_spare));
		T->m = m ? m : 1;
		seg_clear(T);
		return;
	}
	seg_init(T, m);
}

/* Keep T as the spare (the larger of the two). */
static void seg_give(struct segtree *T)
{
	if (seg_spare.cover && seg_spare.n_nodes > T->n_nodes) {
		seg_release(T);
		return;
	}
	if (seg_spare.cover)
		seg_release(&seg_spare);
	seg_spare = *T;
	memset(T, 0, sizeof(*T));
}

static void got_push(struct segtree *T, const struct rset *r)
{
	if (!r->n)
		return;
	mp_grow((void **)&T->got, &T->cap_got, T->n_got + 1, sizeof(*T->got));
	T->got[T->n_got++] = r;
}

/* The nodes that partition the slots [s, e): with add, add it to their
 * cover lists; without, gather their start lists. */
static void seg_parts(struct segtree *T, uint32_t node, uint32_t lo, uint32_t hi, uint32_t s, uint32_t e,
		      const struct rng *add)
{
	uint32_t mid = lo + (hi - lo) / 2;

	if (s <= lo && hi <= e) {
		if (add)
			rset_add(&T->cover[node], add->lo, add->hi);
		else
			got_push(T, &T->start[node]);
		return;
	}
	if (s < mid)
		seg_parts(T, 2 * node, lo, mid, s, e, add);
	if (e > mid)
		seg_parts(T, 2 * node + 1, mid, hi, s, e, add);
}

/* One step from the node over [*lo, *hi) towards slot s's leaf; false at
 * the leaf. */
static bool seg_down(uint32_t *node, uint32_t *lo, uint32_t *hi, uint32_t s)
{
	uint32_t mid = *lo + (*hi - *lo) / 2;

	if (*hi - *lo <= 1)
		return false;
	if (s < mid) {
		*node = 2 * *node;
		*hi = mid;
	} else {
		*node = 2 * *node + 1;
		*lo = mid;
	}
	return true;
}

/* An allocation of the bytes [blo, bhi) over the slots [s, e): in the cover
 * lists of the nodes that partition [s, e), and in the start lists of the
 * nodes over slot s, but those over slot 0 (the root and its left spine):
 * a query reads start lists only of nodes within [s + 1, e). */
static void seg_insert(struct segtree *T, uint32_t s, uint32_t e, uint64_t blo, uint64_t bhi)
{
	const struct rng add = { blo, bhi };
	uint32_t node = 1, lo = 0, hi = T->m;

	seg_parts(T, 1, 0, T->m, s, e, &add);
	do {
		if (lo)
			rset_add(&T->start[node], blo, bhi);
	} while (seg_down(&node, &lo, &hi, s));
}

/* Into T->got, the lists whose union is the bytes used during the slots
 * [s, e), each lifetime in exactly one: what is live at slot s (the cover
 * lists of the nodes over it) and what starts in (s, e) (the start lists of
 * the nodes that partition it). */
static void seg_query(struct segtree *T, uint32_t s, uint32_t e)
{
	uint32_t node = 1, lo = 0, hi = T->m;

	do {
		got_push(T, &T->cover[node]);
	} while (seg_down(&node, &lo, &hi, s));
	if (s + 1 < e)
		seg_parts(T, 1, 0, T->m, s + 1, e, NULL);
}

static uint64_t align_up(uint64_t x)
{
	return (x + PLAN_ARENA_ALIGN - 1) / PLAN_ARENA_ALIGN * PLAN_ARENA_ALIGN;
}

static void heap_down(struct head *h, uint32_t n, uint32_t i)
{
	struct head x = h[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= n)
			break;
		if (c + 1 < n && h[c + 1].lo < h[c].lo)
			c++;
		if (h[c].lo >= x.lo)
			break;
		h[i] = h[c];
		i = c;
	}
	h[i] = x;
}

/* The best fit for w bytes below and between the ranges [lo, hi) of the
 * union so far, given the next union range [glo, ...): the gap [*top, glo). */
static void gap_fit(uint64_t top, uint64_t glo, uint64_t w, uint64_t *best, uint64_t *best_gap)
{
	uint64_t o = align_up(top);

	if (o <= glo && glo - o >= w && glo - top < *best_gap) {
		*best_gap = glo - top;
		*best = o;
	}
}

/*
 * The best fit for it over the byte ranges used during its lifetimes by
 * what was inserted: the gaps of their union, in offset order, from a k-way
 * merge of the O(log m) lists of the nodes that meet them, where each list
 * skips, by galloping search, the ranges that end under the union so far.  A
 * gap of exactly w bytes cannot be beaten (a gap is never smaller than
 * what fits in it, and ties go to the lowest): the merge stops there.
 * Returns the offset; *top the end of the union when no gap fits.
 */
static uint64_t seg_fit(struct segtree *T, const struct item *it, uint64_t *top)
{
	uint64_t w = it->bytes, best = UINT64_MAX, best_gap = UINT64_MAX, hi = 0;
	uint32_t nh = 0;
	bool have = false;

	*top = 0;
	T->n_got = 0;
	seg_query(T, it->s, it->e);
	if (it->e2 > it->s2)
		seg_query(T, it->s2, it->e2);
	mp_grow((void **)&T->heap, &T->cap_heap, T->n_got + 1, sizeof(*T->heap));
	for (uint32_t k = 0; k < T->n_got; k++)
		T->heap[nh++] = (struct head){ T->got[k]->r[0].lo, k, 0 };
	for (uint32_t i = nh / 2; i-- > 0;)
		heap_down(T->heap, nh, i);
	while (nh) {
		struct head *h = T->heap;
		const struct rset *set = T->got[h->k];
		const struct rng *r = &set->r[h->pos];
		uint32_t a, b;

		if (have && r->lo <= hi) {
			if (r->hi > hi)
				hi = r->hi;
		} else {
			/* a new union range: the gap below it is final */
			if (have)
				*top = hi;
			gap_fit(*top, r->lo, w, &best, &best_gap);
			if (best_gap == w)
				return best;
			hi = r->hi;
			have = true;
		}
		/* next range of this list ending above the union so far */
		a = h->pos + 1;
		if (a < set->n && set->r[a].hi <= hi) {
			/* gallop: the skip is usually short */
			uint32_t step = 1;

			b = a + 1;
			while (b < set->n && set->r[b].hi <= hi) {
				a = b + 1;
				step *= 2;
				b = a + step < set->n ? a + step : set->n;
			}
			while (a < b) {
				uint32_t mid = a + (b - a) / 2;

				if (set->r[mid].hi <= hi)
					a = mid + 1;
				else
					b = mid;
			}
		}
		if (a < set->n) {
			h->pos = a;
			h->lo = set->r[a].lo;
		} else {
			*h = T->heap[--nh];
		}
		heap_down(T->heap, nh, 0);
	}
	if (have)
		*top = hi;
	return best;
}

/* Whether [lo, hi) meets a range used over the slots [s, e): a binary search
 * in each list, no merge. */
static bool seg_meets(struct segtree *T, uint32_t s, uint32_t e, uint64_t lo, uint64_t hi)
{
	T->n_got = 0;
	seg_query(T, s, e);
	for (uint32_t k = 0; k < T->n_got; k++) {
		const struct rset *set = T->got[k];
		uint32_t a = 0, b = set->n;

		while (a < b) {         /* first range ending above lo */
			uint32_t mid = a + (b - a) / 2;

			if (set->r[mid].hi <= lo)
				a = mid + 1;
			else
				b = mid;
		}
		if (a < set->n && set->r[a].lo < hi)
			return true;
	}
	return false;
}

/* The bytes an allocating action reserves, as the simulator counts them. */
static uint64_t alloc_bytes(const struct mp_net *net, const struct mp_action *a)
{
	return a->kind == MP_ACT_SWAP_IN ? net->tensors[a->tensor].bytes : a->bytes;
}

/* When an action's memory event happens (sim_run's event times). */
static double event_ms(const struct mp_action *a)
{
	return a->kind == MP_ACT_SWAP_OUT ? a->end_ms : a->start_ms;
}

/*
 * The allocations of s with their lifetimes as event ranks.  Returns the
 * number of items (*items malloc'd) and sets *m to the number of ranks.
 */
/* A persistent tensor first allocated (item f) whose last allocation (item
 * l, a swap-in) lives to the end of the iteration: l joins f as its second
 * lifetime.  Items are in action order.  Returns the items left. */
static uint32_t pin_persistent(const struct mp_net *net, const struct mp_schedule *s, struct item *it, uint32_t n_it,
			       uint32_t n_ev)
{
	int32_t *first = mp_xmalloc((net->n_tensors + 1) * sizeof(*first));
	int32_t *last = mp_xmalloc((net->n_tensors + 1) * sizeof(*last));
	uint8_t *gone = mp_xcalloc(n_it + 1, 1);
	uint32_t w = 0;

	for (uint32_t t = 0; t < net->n_tensors; t++)
		first[t] = last[t] = -1;
	for (uint32_t k = 0; k < n_it; k++) {
		int32_t t = s->a[it[k].act].tensor;

		if (first[t] < 0)
			first[t] = (int32_t)k;
		last[t] = (int32_t)k;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++) {
		struct item *f, *l;

		if (first[t] < 0 || first[t] == last[t] || !sched_persistent(&net->tensors[t]))
			continue;
		f = &it[first[t]];
		l = &it[last[t]];
		if (s->a[f->act].kind != MP_ACT_ALLOC || l->e != n_ev)
			continue;
		f->s2 = l->s;
		f->e2 = l->e;
		f->act2 = l->act;
		if (l->bytes > f->bytes)
			f->bytes = l->bytes;
		gone[last[t]] = 1;
	}
	for (uint32_t k = 0; k < n_it; k++)
		if (!gone[k])
			it[w++] = it[k];
	free(first);
	free(last);
	free(gone);
	return w;
}

static uint32_t lifetimes(const struct mp_net *net, const struct mp_schedule *s,
			  struct item **items, uint32_t *m)
{
	uint32_t n_it = 0, n_ev = 0;
	struct event *ev = mp_xmalloc((s->n + 1) * sizeof(*ev));
	int32_t *open = mp_xmalloc((net->n_tensors + 1) * sizeof(*open));
	struct item *it;

	for (uint32_t t = 0; t < net->n_tensors; t++)
		open[t] = -1;
	for (uint32_t i = 0; i < s->n; i++)
		if (s->a[i].kind == MP_ACT_ALLOC || s->a[i].kind == MP_ACT_SWAP_IN)
			n_it++;
	it = mp_xmalloc((n_it + 1) * sizeof(*it));
	n_it = 0;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];

		switch (a->kind) {
		case MP_ACT_ALLOC:
		case MP_ACT_SWAP_IN:
			it[n_it] = (struct item){ alloc_bytes(net, a), 0, UINT32_MAX, i, 0, 0, 0, 0 };
			open[a->tensor] = (int32_t)n_it;
			ev[n_ev++] = (struct event){ event_ms(a), i, n_it++, 1 };
			break;
		case MP_ACT_FREE:
		case MP_ACT_SWAP_OUT:
			/* a simulated schedule never ends what is not allocated */
			MP_ASSERT(open[a->tensor] >= 0);
			ev[n_ev++] = (struct event){ event_ms(a), i, (uint32_t)open[a->tensor], 0 };
			open[a->tensor] = -1;
			break;
		default:
			break;
		}
	}
	qsort(ev, n_ev, sizeof(*ev), event_cmp);
	for (uint32_t r = 0; r < n_ev; r++) {
		if (ev[r].start)
			it[ev[r].item].s = r;
		else
			it[ev[r].item].e = r;
	}
	for (uint32_t k = 0; k < n_it; k++) {
		if (it[k].e == UINT32_MAX)
			it[k].e = n_ev;       /* live to the end of the iteration */
		MP_ASSERT(it[k].s < it[k].e);
	}
	n_it = pin_persistent(net, s, it, n_it, n_ev);
	free(ev);
	free(open);
	*items = it;
	*m = n_ev;
	return n_it;
}

/* Longest-lived-and-largest first: bytes * lifetime, then size. */
static int item_area_cmp(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;
	double x = (double)a->bytes * (a->e - a->s + a->e2 - a->s2), y = (double)b->bytes * (b->e - b->s + b->e2 - b->s2);

	if (x != y)
		return x > y ? -1 : 1;
	return item_cmp(pa, pb);
}

/* Greedy by breadth (TFLite's other planner, as an order): the items live
 * at the busiest events first, largest first among those. */
static int item_breadth_cmp(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;

	if (a->breadth != b->breadth)
		return a->breadth > b->breadth ? -1 : 1;
	return item_cmp(pa, pb);
}

/* Each item's breadth: live bytes per event (a difference array), then the
 * maximum over the item's events from an iterative segment tree. */
static void breadths(struct item *it, uint32_t n_it, uint32_t m)
{
	uint64_t *tree = mp_xcalloc(2 * (size_t)m + 2, sizeof(*tree));
	int64_t *d = mp_xcalloc((size_t)m + 2, sizeof(*d));
	int64_t live = 0;

	for (uint32_t k = 0; k < n_it; k++) {
		d[it[k].s] += (int64_t)it[k].bytes;
		d[it[k].e] -= (int64_t)it[k].bytes;
		d[it[k].s2] += (int64_t)it[k].bytes;
		d[it[k].e2] -= (int64_t)it[k].bytes;
	}
	for (uint32_t r = 0; r < m; r++) {
		live += d[r];
		tree[m + r] = (uint64_t)live;
	}
	for (uint32_t r = m; r-- > 1;)
		tree[r] = tree[2 * r] > tree[2 * r + 1] ? tree[2 * r] : tree[2 * r + 1];
	for (uint32_t k = 0; k < n_it; k++) {
		uint64_t best = 0;

		for (int two = 0; two < 2; two++)
			for (uint32_t lo = (two ? it[k].s2 : it[k].s) + m, hi = (two ? it[k].e2 : it[k].e) + m; lo < hi;
			     lo >>= 1, hi >>= 1) {
				if (lo & 1 && tree[lo] > best)
					best = tree[lo];
				if (lo & 1)
					lo++;
				if (hi & 1 && tree[hi - 1] > best)
					best = tree[hi - 1];
			}
		it[k].breadth = best;
	}
	free(tree);
	free(d);
}

/* In allocation order, as a first-fit allocator would see them. */
static int item_start_cmp(const void *pa, const void *pb)
{
	const struct item *a = pa, *b = pb;

	if (a->s != b->s)
		return a->s < b->s ? -1 : 1;
	return item_cmp(pa, pb);
}

/* The placed allocations for the scan below, sorted by offset, a column per
 * field. */
struct placed {
	uint64_t *lo, *hi;
	uint32_t *s, *e, *s2, *e2;
};

/* meets() of cnt (at most 64) lifetimes at once (arena.h), four lanes
 * without branches: an empty second lifetime is [0, 0), which meets
 * nothing, so only the terms that can hold are computed.  The tail, and
 * builds without SSE2, ask meets() itself. */
uint64_t plan_arena_meets_mask(const uint32_t *ps, const uint32_t *pe, const uint32_t *ps2, const uint32_t *pe2,
			       bool any2, uint32_t cnt, uint32_t s, uint32_t e, uint32_t s2, uint32_t e2)
{
	uint32_t b = 0;
	uint64_t m = 0;

#ifdef __SSE2__
	/* four at a time (event ranks are under 2^31: signed compares serve) */
	bool two = s2 < e2;
	__m128i vs = _mm_set1_epi32((int)s), ve = _mm_set1_epi32((int)e), vs2 = _mm_set1_epi32((int)s2),
		ve2 = _mm_set1_epi32((int)e2);
#define MEETS(a, z, vs, ve) _mm_and_si128(_mm_cmplt_epi32(a, ve), _mm_cmplt_epi32(vs, z))
#define LOAD(col) _mm_loadu_si128((const __m128i *)(col + b))
#define MASK(c) ((uint64_t)(unsigned)_mm_movemask_ps(_mm_castsi128_ps(c)) << b)
	if (!two && !any2) {
		for (; b + 4 <= cnt; b += 4)
			m |= MASK(MEETS(LOAD(ps), LOAD(pe), vs, ve));
	} else if (!two) {
		for (; b + 4 <= cnt; b += 4)
			m |= MASK(_mm_or_si128(MEETS(LOAD(ps), LOAD(pe), vs, ve), MEETS(LOAD(ps2), LOAD(pe2), vs, ve)));
	} else {
		for (; b + 4 <= cnt; b += 4) {
			__m128i a = LOAD(ps), z = LOAD(pe), c = _mm_or_si128(MEETS(a, z, vs, ve), MEETS(a, z, vs2, ve2));

			if (any2) {
				a = LOAD(ps2), z = LOAD(pe2);
				c = _mm_or_si128(c, _mm_or_si128(MEETS(a, z, vs, ve), MEETS(a, z, vs2, ve2)));
			}
			m |= MASK(c);
		}
	}
#undef MEETS
#undef LOAD
#undef MASK
#endif
	for (; b < cnt; b++)
		m |= (uint64_t)meets(s, e, s2, e2, ps[b], pe[b], any2 ? ps2[b] : 0, any2 ? pe2[b] : 0) << b;
	return m;
}

/*
 * place() for small schedules: the placed allocations kept sorted by offset;
 * each new one finds, 64 at a time, a mask of those that meet it in time,
 * then merges their byte ranges into the union in offset order, one set bit
 * after another (a range above the union's top opens a gap).  O(n^2) in
 * all, but a few instructions per pair: the four orders of greedy's plans
 * of U-Net at 70 and 50% (262 and 1163 allocations) place 3.0x faster than
 * with the segment tree, DenseNet-121's (2212) 2.2x; the tree wins on
 * residual nets of 500 blocks (2442 allocations) by 1.4x
 * (bench/plan-quality.md, "Planning time").  Same rule, same offsets
 * (test_planners compares the two).
 */
static uint64_t place_scan(struct placed *pl, const struct item *it, uint32_t n_it, uint64_t *off_by_act,
			   uint64_t stop)
{
	uint64_t arena = 0;
	uint32_t n = 0, n_two = 0;  /* placed, and those with a second lifetime */

	for (uint32_t k = 0; k < n_it; k++) {
		uint64_t w = it[k].bytes, top = 0, best = UINT64_MAX, best_gap = UINT64_MAX, off;
		bool two = it[k].e2 > it[k].s2;
		uint32_t s = it[k].s, e = it[k].e, s2 = two ? it[k].s2 : 0, e2 = two ? it[k].e2 : 0, a, b;

		if (w == 0) {
			off_by_act[it[k].act] = 0;
			if (two)
				off_by_act[it[k].act2] = 0;
			continue;
		}
		/* top: the end of the union so far; a range above it opens a gap */
		for (uint32_t base = 0; base < n; base += 64) {
			uint32_t cnt = n - base < 64 ? n - base : 64;
			uint64_t m = plan_arena_meets_mask(pl->s + base, pl->e + base, pl->s2 + base, pl->e2 + base,
							   n_two, cnt, s, e, s2, e2);

			for (; m; m &= m - 1) {
				uint32_t j = base + (uint32_t)__builtin_ctzll(m);

				if (pl->lo[j] > top)
					gap_fit(top, pl->lo[j], w, &best, &best_gap);
				top = pl->hi[j] > top ? pl->hi[j] : top;
			}
		}
		off = best != UINT64_MAX ? best : align_up(top);
		MP_ASSERT(off + w > off);  /* sizes are <= 1 PiB: far from 2^64 */
		off_by_act[it[k].act] = off;
		if (two)
			off_by_act[it[k].act2] = off;
		if (off + w > arena)
			arena = off + w;
		if (arena >= stop)
			return arena;
		/* insert, sorted by offset */
		for (a = 0, b = n; a < b;) {
			uint32_t mid = a + (b - a) / 2;

			if (pl->lo[mid] <= off)
				a = mid + 1;
			else
				b = mid;
		}
#define PUT(col, v) (memmove(pl->col + a + 1, pl->col + a, (n - a) * sizeof(*pl->col)), pl->col[a] = (v))
		PUT(lo, off);
		PUT(hi, off + w);
		PUT(s, s);
		PUT(e, e);
		PUT(s2, s2);
		PUT(e2, e2);
#undef PUT
		n_two += two;
		n++;
	}
	return arena;
}

/* Where the placements run: the segment tree, or (scan) the sorted array. */
struct placer {
	bool scan;
	uint32_t m;
	struct segtree T;     /* built by the first placement (a memo may answer all) */
	struct placed pl;     /* columns of [n_it] when scan */
};

/* Up to this many allocations place_scan places (and the search runs): the
 * faster on residual nets up to some 2000 allocations; on DenseNet-121's 2212
 * the scan is still the faster, but a larger limit would change which
 * schedules are searched, so plans. */
#define ARENA_SCAN_MAX 2048

static void placer_init(struct placer *P, uint32_t n_it, uint32_t m, int force)
{
	memset(P, 0, sizeof(*P));
	P->scan = force ? force > 0 : n_it <= ARENA_SCAN_MAX;
	P->m = m;
	if (P->scan) {
		MP_ASSERT(m <= INT32_MAX);  /* plan_arena_meets_mask compares ranks signed */
		P->pl.lo = mp_xmalloc(2 * ((size_t)n_it + 1) * sizeof(*P->pl.lo));
		P->pl.hi = P->pl.lo + n_it + 1;
		P->pl.s = mp_xmalloc(4 * ((size_t)n_it + 1) * sizeof(*P->pl.s));
		P->pl.e = P->pl.s + n_it + 1;
		P->pl.s2 = P->pl.e + n_it + 1;
		P->pl.e2 = P->pl.s2 + n_it + 1;
	}
}

static void placer_release(struct placer *P)
{
	if (P->scan) {
		free(P->pl.lo);
		free(P->pl.s);
	} else if (P->T.cover)
		seg_give(&P->T);
}

/* Place items in the given order (best fit over the placed ones that meet
 * each in time); offsets by action into off.  Returns the arena size, or,
 * once the arena reaches stop (the order cannot beat one placed before),
 * that much or more with the offsets unfinished. */
static uint64_t place(struct placer *P, const struct item *it, uint32_t n_it, uint64_t *off_by_act, uint64_t stop)
{
	struct segtree *T = &P->T;
	uint64_t arena = 0;

	if (P->scan)
		return place_scan(&P->pl, it, n_it, off_by_act, stop);
	if (!T->cover)
		seg_take(T, P->m);
	else
		seg_clear(T);
	for (uint32_t k = 0; k < n_it; k++) {
		uint64_t w = it[k].bytes, top, best, off;

		if (w == 0) {
			off_by_act[it[k].act] = 0;
			if (it[k].e2 > it[k].s2)
				off_by_act[it[k].act2] = 0;
			continue;
		}
		best = seg_fit(T, &it[k], &top);
		off = best != UINT64_MAX ? best : align_up(top);
		MP_ASSERT(off + w > off);  /* sizes are <= 1 PiB: far from 2^64 */
		off_by_act[it[k].act] = off;
		if (off + w > arena)
			arena = off + w;
		if (arena >= stop)
			return arena;
		seg_insert(T, it[k].s, it[k].e, off, off + w);
		if (it[k].e2 > it[k].s2) {
			off_by_act[it[k].act2] = off;
			seg_insert(T, it[k].s2, it[k].e2, off, off + w);
		}
	}
	return arena;
}

/*
 * Local search over the placement order, from the best of the fixed orders:
 * swap one to three pairs of items at most ARENA_SWAP_REACH apart (the first
 * of each pair nearer the front, where the large items are, more often) and
 * place again, keeping the new order when its arena is no larger (ties walk
 * the plateau).  Greedy's recompute plans of U-Net at 70% of liveness (655.3
 * MiB): a 653.7 MiB peak packs in 693.6 MiB with the four orders, 676.3 after
 * the search; a 632.5 MiB peak in 691.6, and 655.3 after it (it fits).
 * Only schedules the scan places (ARENA_SCAN_MAX), at most ARENA_TRIES
 * placements and ARENA_PAIRS pairs of items in all (about 0.05 s), and it
 * ends after ARENA_STALE tries without a smaller arena.  The generator is
 * seeded: the same schedule always gets the same offsets.  Returns the
 * placements it tried.
 */
#define ARENA_TRIES 1000
#define ARENA_PAIRS 50000000.0
#define ARENA_STALE 200
#define ARENA_MIN_TRIES 50
#define ARENA_SWAP_REACH 20

static uint64_t xorshift(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static uint32_t search(struct placer *P, struct item *it, uint32_t n_it, uint64_t *best_off, uint64_t *arena,
		       uint64_t goal, size_t n_act)
{
	struct item *try = mp_xmalloc((n_it + 1) * sizeof(*try));
	uint64_t *off = mp_xmalloc((n_act + 1) * sizeof(*off)), rng = 0x9e3779b97f4a7c15ull;
	double fit = ARENA_PAIRS / ((double)n_it * n_it / 2 + 1);
	uint32_t tries = fit < ARENA_TRIES ? (uint32_t)fit : ARENA_TRIES, stale = 0, k;

	if (!P->scan || tries < ARENA_MIN_TRIES)
		tries = 0; /* too large to search in the time */
	memcpy(off, best_off, n_act * sizeof(*off)); /* what is not an item keeps its mark */
	for (k = 0; k < tries && *arena > goal && stale < ARENA_STALE && n_it > 1; k++) {
		uint32_t swaps = 1 + (uint32_t)(xorshift(&rng) % 3);
		uint64_t a;

		memcpy(try, it, n_it * sizeof(*it));
		for (uint32_t q = 0; q < swaps; q++) {
			double u = (double)(xorshift(&rng) >> 11) / 9007199254740992.0;
			uint32_t i = (uint32_t)(u * u * n_it);
			int64_t j = (int64_t)i + (int64_t)(xorshift(&rng) % (2 * ARENA_SWAP_REACH + 1)) - ARENA_SWAP_REACH;
			struct item x;

			j = j < 0 ? 0 : j >= n_it ? n_it - 1 : j;
			x = try[i];
			try[i] = try[j];
			try[j] = x;
		}
		/* (an order over the best arena is not kept: it stops there) */
		a = place(P, try, n_it, off, *arena + 1);
		stale = a < *arena ? 0 : stale + 1;
		if (a <= *arena) {
			*arena = a;
			memcpy(it, try, n_it * sizeof(*it));
			memcpy(best_off, off, n_act * sizeof(*off));
		}
	}
	free(try);
	free(off);
	return k;
}

/*
 * Greedy by size is the first order tried; greedy by size times lifetime,
 * plain allocation order (a first-fit allocator's) and greedy by breadth
 * follow, and the smallest arena wins.  No order dominates: a swapped-in
 * tensor placed by size can strand a gap that allocation order fills; by
 * breadth, what is live at the peak is packed first (it let greedy's plan
 * of AlexNet at 1.4 GiB fit without re-planning).  Four placements cost four
 * times one.  When none packs in enough
 * bytes (a budget: plan_assign_arena_within), the local search above goes on
 * from the best.
 */
int plan_arena_placer;

#define ARENA_ORDERS 4

/*
 * The last large schedule placed, and each order's offsets: the planners
 * ask for a schedule's arena (pl_arena_bytes), then plan_run and cmd_plan
 * assign the one they keep, which is often the same, and a placement of a
 * 10^4-layer schedule costs tenths of a second.  Recognised by its items,
 * compared field by field (a placement depends on nothing else), so a hit
 * gives the offsets placing again would.
 */
static struct {
	size_t n_act;
	uint32_t n_it;
	int placer;
	struct item *it;                /* [n_it] as lifetimes() and breadths() gave them */
	uint64_t arena[ARENA_ORDERS];
	uint64_t *off[ARENA_ORDERS];    /* [n_act] by action; NULL: order not placed */
} memo;

static bool item_same(const struct item *a, const struct item *b)
{
	return a->bytes == b->bytes && a->s == b->s && a->e == b->e && a->act == b->act && a->breadth == b->breadth &&
	       a->s2 == b->s2 && a->e2 == b->e2 && a->act2 == b->act2;
}

/* Make the memo the one of these items, emptied unless it already was. */
static void memo_use(const struct item *it, uint32_t n_it, size_t n_act)
{
	bool same = memo.it && memo.n_act == n_act && memo.n_it == n_it && memo.placer == plan_arena_placer;

	for (uint32_t k = 0; same && k < n_it; k++)
		same = item_same(&memo.it[k], &it[k]);
	if (same)
		return;
	for (int o = 0; o < ARENA_ORDERS; o++) {
		free(memo.off[o]);
		memo.off[o] = NULL;
	}
	free(memo.it);
	memo.it = mp_xmalloc((n_it + 1) * sizeof(*memo.it));
	memcpy(memo.it, it, n_it * sizeof(*it));
	memo.n_it = n_it;
	memo.n_act = n_act;
	memo.placer = plan_arena_placer;
}

/*
 * The searched placements of small schedules, by their items: greedy asks
 * again for the arenas of schedules it built before (plan_run plans greedy
 * again, weighing raw, both ways, as with the default algorithms, and each
 * run repeats its first passes), and a search is up to ARENA_TRIES
 * placements.  Recognised by the items as lifetimes() and breadths() gave
 * them, the number of actions, the budget and the peak (a placement and the
 * search depend on nothing else), compared field by field, so a hit gives
 * the offsets searching again would.  Every planner on U-Net at 70, 50 and 33%
 * of liveness: 274 of 628, 408 of 819 and 67 of 102 searches answered from
 * those kept; the 42 cells of bench/plan-quality.md's session 27 planned in
 * 71.2 s against 99.4 s, the same plans.  At most ARENA_SEARCHED searches
 * and ARENA_SEARCHED_BYTES of items and offsets are kept (or the fewer that
 * plan_arena_keep_at_most asks for), the oldest dropped first (U-Net: some
 * 8 MiB); a search of over a quarter of the bytes is not kept.
 */
#define ARENA_SEARCHED 1024
#define ARENA_SEARCHED_BYTES (64u << 20)

static struct searched {
	uint64_t key, enough, peak, arena;
	size_t n_act;
	uint32_t n_it;
	int placer;
	struct item *it;   /* [n_it]; NULL: empty */
	uint64_t *off;     /* [n_act] */
} searches[ARENA_SEARCHED];
static uint32_t searched_next;
static size_t searched_bytes;  /* what the kept items and offsets hold */
static uint32_t searched_max = ARENA_SEARCHED;
static size_t searched_max_bytes = ARENA_SEARCHED_BYTES;
static uint64_t searched_key_mask = UINT64_MAX;
struct plan_arena_stats plan_arena_stats;

static size_t searched_size(const struct searched *m)
{
	return m->it ? m->n_it * sizeof(*m->it) + m->n_act * sizeof(*m->off) : 0;
}

static void searched_drop(struct searched *m)
{
	searched_bytes -= searched_size(m);
	plan_arena_stats.kept_bytes = searched_bytes;
	free(m->it);
	free(m->off);
	m->it = NULL;
	m->off = NULL;
}

void plan_arena_forget(void)
{
	for (uint32_t k = 0; k < ARENA_SEARCHED; k++)
		searched_drop(&searches[k]);
	searched_next = 0;
}

void plan_arena_keep_at_most(uint32_t n, size_t bytes, uint64_t key_mask)
{
	plan_arena_forget();
	searched_max = n && n < ARENA_SEARCHED ? n : ARENA_SEARCHED;
	searched_max_bytes = bytes && bytes < ARENA_SEARCHED_BYTES ? bytes : ARENA_SEARCHED_BYTES;
	searched_key_mask = key_mask;
}

static uint64_t items_key(const struct item *it, uint32_t n_it)
{
	uint64_t h = MP_FNV_OFFSET;

	for (uint32_t k = 0; k < n_it; k++) {
		uint64_t v[4] = { it[k].bytes, (uint64_t)it[k].s << 32 | it[k].e, (uint64_t)it[k].s2 << 32 | it[k].e2,
				  (uint64_t)it[k].act << 32 | it[k].act2 };

		h = mp_fnv_words(h, v, 4);
	}
	return h & searched_key_mask;
}

/* The kept search of these items for this goal, or NULL. */
static struct searched *searched_find(const struct item *it, uint32_t n_it, size_t n_act, uint64_t key,
				      uint64_t enough, uint64_t peak)
{
	for (uint32_t k = 0; k < searched_max; k++) {
		struct searched *m = &searches[k];
		bool same = m->it && m->key == key && m->n_it == n_it && m->n_act == n_act && m->enough == enough &&
			    m->peak == peak && m->placer == plan_arena_placer;

		for (uint32_t j = 0; same && j < n_it; j++)
			same = item_same(&m->it[j], &it[j]);
		if (same)
			return m;
	}
	return NULL;
}

static void searched_keep(const struct item *it, uint32_t n_it, size_t n_act, uint64_t key, uint64_t enough,
			  uint64_t peak, uint64_t arena, const uint64_t *off)
{
	struct searched *m = &searches[searched_next];
	size_t need = n_it * sizeof(*it) + n_act * sizeof(*off);

	if (need > searched_max_bytes / 4)
		return;
	searched_next = (searched_next + 1) % searched_max;
	searched_drop(m);
	/* over the bytes: the oldest go first (from the slot after m on) */
	for (uint32_t k = searched_next; searched_bytes + need > searched_max_bytes; k = (k + 1) % searched_max)
		searched_drop(&searches[k]);
	searched_bytes += need;
	plan_arena_stats.kept_bytes = searched_bytes;
	*m = (struct searched){ key, enough, peak, arena, n_act, n_it, plan_arena_placer, NULL, NULL };
	m->it = mp_xmalloc((n_it + 1) * sizeof(*it));
	memcpy(m->it, it, n_it * sizeof(*it));
	m->off = mp_xmalloc((n_act + 1) * sizeof(*off));
	memcpy(m->off, off, n_act * sizeof(*off));
}

void plan_assign_arena(const struct mp_net *net, struct mp_plan *p)
{
	plan_assign_arena_within(net, p, 0);
}

void plan_assign_arena_within(const struct mp_net *net, struct mp_plan *p, uint64_t enough)
{
	static int (*const orders[ARENA_ORDERS])(const void *, const void *) = {
		item_cmp, item_area_cmp, item_start_cmp, item_breadth_cmp,
	};
	const struct mp_schedule *s = &p->sched;
	struct item *it;
	uint32_t m, n_it = lifetimes(net, s, &it, &m);
	uint64_t *off = mp_xmalloc((s->n + 1) * sizeof(*off)), goal, key = 0;
	size_t won = 0;
	struct placer P;
	struct item *given = NULL;    /* it as lifetimes() gave it, where a search may be kept */
	struct searched *was;
	bool searchable;	      /* a budget to meet that this peak can meet */

	breadths(it, n_it, m);
	placer_init(&P, n_it, m, plan_arena_placer);
	if (!P.scan)
		memo_use(it, n_it, s->n);
	free(p->offset);
	p->offset = mp_xmalloc((s->n + 1) * sizeof(*p->offset));
	for (uint32_t i = 0; i < s->n; i++)
		p->offset[i] = off[i] = UINT64_MAX;
	p->arena_bytes = UINT64_MAX;
	p->max_live_bytes = p->sim.peak_bytes;
	goal = enough > p->max_live_bytes ? enough : p->max_live_bytes;
	/* only for a budget to meet does the search run (a plan whose peak is
	 * over it cannot fit however it packs) */
	searchable = enough && p->max_live_bytes <= enough;
	/* (only a search that tried orders is kept: the four fixed orders
	 * alone cost four placements) */
	if (P.scan && searchable) {
		key = items_key(it, n_it);
		if ((was = searched_find(it, n_it, s->n, key, enough, p->max_live_bytes))) {
			plan_arena_stats.kept_hits++;
			p->arena_bytes = was->arena;
			memcpy(p->offset, was->off, s->n * sizeof(*off));
			goto out;
		}
		given = mp_xmalloc((n_it + 1) * sizeof(*given));
		memcpy(given, it, n_it * sizeof(*it));
	}
	for (size_t o = 0; o < ARENA_ORDERS; o++) {
		uint64_t arena;

		if (!P.scan && memo.off[o]) {
			arena = memo.arena[o];
			memcpy(off, memo.off[o], s->n * sizeof(*off));
		} else {
			qsort(it, n_it, sizeof(*it), orders[o]);
			/* an order that reaches the best arena so far loses: it
			 * stops there (and is not remembered) */
			arena = place(&P, it, n_it, off, p->arena_bytes);
			if (!P.scan && arena < p->arena_bytes) {
				memo.arena[o] = arena;
				memo.off[o] = mp_xmalloc((s->n + 1) * sizeof(*off));
				memcpy(memo.off[o], off, s->n * sizeof(*off));
			}
		}
		if (arena < p->arena_bytes) {
			p->arena_bytes = arena;
			won = o;
			memcpy(p->offset, off, s->n * sizeof(*off));
		}
		if (p->arena_bytes <= goal)
			break; /* the lower bound, or small enough for the caller */
	}
	if (searchable && p->arena_bytes > goal && p->arena_bytes != UINT64_MAX) {
		qsort(it, n_it, sizeof(*it), orders[won]);
		if (search(&P, it, n_it, p->offset, &p->arena_bytes, goal, s->n) && given) {
			plan_arena_stats.searches++;
			searched_keep(given, n_it, s->n, key, enough, p->max_live_bytes, p->arena_bytes, p->offset);
		}
	}
out:
	free(given);
	placer_release(&P);
	if (p->arena_bytes == UINT64_MAX)
		p->arena_bytes = 0;
	free(off);
	free(it);
}

int plan_check_arena(const struct mp_net *net, const struct mp_plan *p, struct mp_error *err)
{
	const struct mp_schedule *s = &p->sched;
	struct item *it;
	struct segtree T;
	uint32_t m, n_it = lifetimes(net, s, &it, &m);
	uint64_t high = 0;
	int rc = -1;

	seg_init(&T, m);
	for (uint32_t k = 0; k < n_it; k++) {
		uint32_t i = it[k].act;
		uint64_t o = p->offset[i], w = it[k].bytes;

		if (o == UINT64_MAX || o > MP_MAX_BYTES) {
			mp_error_set(err, "schedule[%u]: %s '%s' has no offset in the arena", i,
				     mp_act_name(s->a[i].kind), net->tensors[s->a[i].tensor].name);
			goto out;
		}
		if (o % PLAN_ARENA_ALIGN) {
			mp_error_set(err, "schedule[%u].offset: %llu is not a multiple of %u", i,
				     (unsigned long long)o, PLAN_ARENA_ALIGN);
			goto out;
		}
		if (it[k].e2 > it[k].s2 && p->offset[it[k].act2] != o) {
			mp_error_set(err, "schedule[%u].offset: '%s' ends the iteration at %llu, and the next iteration "
				     "expects it where schedule[%u] allocates it, at %llu (the steady state, memplan-plan(5))",
				     it[k].act2, net->tensors[s->a[i].tensor].name,
				     (unsigned long long)p->offset[it[k].act2], i, (unsigned long long)o);
			goto out;
		}
		if (w == 0)
			continue;
		if (o + w > high)
			high = o + w;
		if (seg_meets(&T, it[k].s, it[k].e, o, o + w) ||
		    (it[k].e2 > it[k].s2 && seg_meets(&T, it[k].s2, it[k].e2, o, o + w))) {
			/* name the other allocation: a linear scan, on failure only */
			for (uint32_t j = 0; j < k; j++) {
				uint64_t oj = p->offset[it[j].act], wj = it[j].bytes;

				if (meets(it[k].s, it[k].e, it[k].s2, it[k].e2, it[j].s, it[j].e, it[j].s2, it[j].e2) && wj &&
				    oj < o + w && o < oj + wj) {
					mp_error_set(err, "schedule[%u].offset: '%s' at [%llu, %llu) overlaps '%s' "
						     "(schedule[%u]) at [%llu, %llu) while both are live", i,
						     net->tensors[s->a[i].tensor].name, (unsigned long long)o,
						     (unsigned long long)(o + w), net->tensors[s->a[it[j].act].tensor].name,
						     it[j].act, (unsigned long long)oj, (unsigned long long)(oj + wj));
					goto out;
				}
			}
			MP_ASSERT(0);
		}
		seg_insert(&T, it[k].s, it[k].e, o, o + w);
		if (it[k].e2 > it[k].s2)
			seg_insert(&T, it[k].s2, it[k].e2, o, o + w);
	}
	if (high > p->arena_bytes) {
		mp_error_set(err, "arena.bytes: %llu, but allocations reach %llu",
			     (unsigned long long)p->arena_bytes, (unsigned long long)high);
		goto out;
	}
	/* the arena ends where its highest allocation does: more is an edit,
	 * and an absurd one would make an executor ask for memory in vain */
	if (high < p->arena_bytes) {
		mp_error_set(err, "arena.bytes: %llu, but allocations reach only %llu (the arena ends at its highest "
			     "allocation)", (unsigned long long)p->arena_bytes, (unsigned long long)high);
		goto out;
	}
	rc = 0;
out:
	seg_release(&T);
	free(it);
	return rc;
}

void plan_smallest_arena(const struct mp_net *net, struct mp_plan *p, uint64_t budget)
{
	uint64_t *had = p->offset, had_bytes = p->arena_bytes;

	p->offset = NULL;
	plan_assign_arena(net, p);
	if (p->arena_bytes > had_bytes) { /* plan_run's search did better */
		free(p->offset);
		p->offset = had;
		p->arena_bytes = had_bytes;
	} else {
		free(had);
	}
	plan_metrics(p, budget);
}
