/*
 * The replay engine of memplan verify (DESIGN.md "Verify"): a plan's
 * Schedule issued action by action to a backend (backend.h), with every rule
 * that does not depend on the device.  It owns the tensor states and their
 * versions, the live set, placement (the plan's arena offsets, or
 * SuperNeurons' first-fit pool, pool.c), what each copy must start after,
 * the checks and the words of every violation, the iteration loop, the
 * memory replay and the medians.  The executor follows TENSILE III-D:
 * compute issues the actions in order, hands swaps to the copy engines,
 * blocks on a swap-in only where the schedule waits, and at the end of an
 * iteration waits for every copy.
 *
 * What is checked: every tensor an op reads is resident and holds exactly the
 * bytes it was produced with.  A compute writes each output with a pattern
 * seeded by (tensor, op) and keeps its checksum; every read, every swap-out
 * and swap-in and every recompute takes the checksum again, compared when
 * the iteration ends.  Freed, swapped-out, unwritten or still-copying tensors
 * are refused by state as they are issued, an allocation beyond the arena by
 * bounds, and a tensor overwritten through an overlapping offset by its
 * checksum (naming the overlapping allocations).
 *
 * Ordering, as sim_run models it: a copy starts after the compute issued
 * before it (its mark) and after its engine's previous copy; a swap-in after
 * its tensor's swap-out; a wait blocks compute until its copy ends.  Because
 * arena offsets were assigned on simulated lifetimes, reuse of memory is
 * ordered too: a swap-in starts after the release (free or swap-out) of every
 * allocation holding bytes it writes, including those compute allocates
 * after the swap-in was issued that the plan placed there before its copy
 * starts, and it is handed to its engine, in order, once those releases are
 * issued; an allocation starts after the swap-outs still reading its bytes.
 * A wait for a swap-in that waits for a release after the wait is a
 * violation, not a hang.  The pool returns blocks as a free or swap-out is
 * issued, so its decisions follow the schedule, not the timing.
 *
 * Memory: the backend's start and end of each action place its memory event
 * (sim_run's rules: an allocation and a free at their time, a swap-in's
 * bytes from its copy's start, a swap-out's until its end); the events
 * replayed in time order give the live peak and each step's.
 *
 * Cost per iteration: O(actions x live allocations) issue bookkeeping,
 * O(actions log actions) for the memory replay.
 */
#include "backend.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- names and options ---- */

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

const char *mp_exec_clock_name(enum mp_exec_clock c)
{
	return c == MP_EXEC_VIRTUAL ? "virtual" : c == MP_EXEC_WALL ? "wall" : "?";
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
	o->clock = MP_EXEC_VIRTUAL;
}

void exec_result_release(struct mp_exec_result *r)
{
	free(r->iter_ms);
	free(r->act);
	free(r->step_bytes);
	memset(r, 0, sizeof(*r));
	r->failed_action = UINT32_MAX;
}

uint64_t replay_seed(int32_t t, int32_t op)
{
	return ((uint64_t)(uint32_t)t << 32) ^ (uint32_t)op ^ UINT64_C(0x9e3779b97f4a7c15);
}

/* ---- failures and versions ---- */

static const char *tname(const struct replay *R, int32_t t)
{
	return R->net->tensors[t].name;
}

void replay_fail(struct replay *R, uint32_t i, const char *fmt, ...)
{
	const struct mp_action *a = &R->s->a[i];
	char detail[800];
	va_list ap;

	if (R->failed)
		return;
	va_start(ap, fmt);
	vsnprintf(detail, sizeof(detail), fmt, ap);
	va_end(ap);
	mp_error_set(&R->err, "schedule[%u] %s '%s': %s", i, mp_act_name(a->kind),
		     a->op >= 0 ? R->net->ops[a->op].name : tname(R, a->tensor), detail);
	R->failed = true;
	R->fail_at = i;
}

void replay_dev_error(struct replay *R, const char *fmt, ...)
{
	va_list ap;

	if (R->dev_failed)
		return;
	va_start(ap, fmt);
	vsnprintf(R->err.msg, sizeof(R->err.msg), fmt, ap);
	va_end(ap);
	R->dev_failed = true;
}

static struct rp_ver ver_make(uint64_t sum, int32_t slot, int32_t writer)
{
	return (struct rp_ver){ sum, slot, writer, true };
}

static struct rp_ver ver_none(void)
{
	return (struct rp_ver){ 0, -1, -1, false };
}

/* The checksum of version v of tensor t (once the iteration's slots are back). */
static uint64_t ver_value(const struct replay *R, const struct rp_ver *v, int32_t t)
{
	return v->slot >= 0 ? R->be->slot_sum(R, v->slot, R->net->tensors[t].bytes) : v->sum;
}

/* "what 'conv.fwd' wrote" / "its initial contents" */
static const char *ver_what(const struct replay *R, const struct rp_ver *v, char *buf, size_t n)
{
	if (v->writer < 0)
		snprintf(buf, n, "its initial contents");
	else
		snprintf(buf, n, "what '%s' wrote", R->net->ops[v->writer].name);
	return buf;
}

static int32_t new_slot(struct replay *R, uint64_t bytes)
{
	MP_ASSERT(R->slot_next < R->n_slots);
	R->hashed += bytes;
	return (int32_t)R->slot_next++;
}

static void add_check(struct replay *R, uint32_t act, int32_t tensor, int32_t op, uint8_t kind, int32_t slot,
		      struct rp_ver want, char *extra)
{
	struct rp_check *c;

	mp_grow((void **)&R->ck, &R->cap_ck, R->n_ck + 1, sizeof(*R->ck));
	c = &R->ck[R->n_ck++];
	*c = (struct rp_check){ act, tensor, op, kind, slot, want, extra };
}

/* ---- the live set ---- */

static bool overlaps(uint64_t a, uint64_t an, uint64_t b, uint64_t bn)
{
	return an && bn && a < b + bn && b < a + an;
}

static void live_add(struct replay *R, uint32_t k)
{
	R->live_pos[k] = R->n_live;
	R->live[R->n_live++] = k;
}

static void live_remove(struct replay *R, uint32_t k)
{
	uint32_t pos = R->live_pos[k], last = R->live[--R->n_live];

	MP_ASSERT(pos != UINT32_MAX);
	R->live[pos] = last;
	R->live_pos[last] = pos;
	R->live_pos[k] = UINT32_MAX;
}

/* "; 'y' (schedule[k]) at [a, b) overlaps it" for the live allocations that
 * overlap [off, off + n) other than self: NULL when none, else malloc'd. */
static char *culprits(const struct replay *R, uint64_t off, uint64_t n, int32_t self)
{
	char buf[600];
	size_t used = 0;

	buf[0] = 0;
	for (uint32_t q = 0; q < R->n_live && used + 1 < sizeof(buf); q++) {
		uint32_t k = R->live[q];

		if ((int32_t)k == self || !overlaps(R->place_off[k], R->place_bytes[k], off, n))
			continue;
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "; '%s' (schedule[%u]) at [%llu, %llu) overlaps it",
					  tname(R, R->s->a[k].tensor), k, (unsigned long long)R->place_off[k],
					  (unsigned long long)(R->place_off[k] + R->place_bytes[k]));
	}
	return used ? mp_xstrdup(buf) : NULL;
}

static void push_dep(struct replay *R, uint32_t k)
{
	mp_grow((void **)&R->dep, &R->cap_dep, R->n_dep + 1, sizeof(*R->dep));
	R->dep[R->n_dep++] = k;
}

/* ---- placement ---- */

/* Take allocation i's bytes: at its plan offset (arena), pool_alloc's offset
 * (pool: a violation when no free run is long enough), or from the backend
 * (async).  0, or -1 after a violation or a backend error. */
static int place(struct replay *R, uint32_t i, uint64_t bytes)
{
	uint64_t off = 0, end;
	char why[200];

	switch (R->o.alloc) {
	case MP_EXEC_ARENA:
		off = R->p->offset ? R->p->offset[i] : UINT64_MAX;
		if (off == UINT64_MAX) {
			replay_fail(R, i, "has no offset in the arena");
			return -1;
		}
		if (mp_add_u64(off, bytes, &end) < 0 || end > R->mem_bytes) {
			replay_fail(R, i, "[%llu, %llu) lies beyond the arena (%llu bytes)", (unsigned long long)off,
				    (unsigned long long)(off + bytes), (unsigned long long)R->mem_bytes);
			return -1;
		}
		if (off % R->be->align) {
			replay_fail(R, i, "offset %llu is not %u-byte aligned", (unsigned long long)off, R->be->align);
			return -1;
		}
		if (end > R->arena_high)
			R->arena_high = end;
		break;
	case MP_EXEC_POOL:
		/* a persistent tensor the last iteration left on the device is still
		 * in the pool where it was (iteration_reset kept its blocks) */
		if (R->t[R->s->a[i].tensor].carry && R->s->a[i].kind == MP_ACT_ALLOC) {
			struct rp_tensor *T = &R->t[R->s->a[i].tensor];

			if (T->carry_bytes == bytes) {
				off = T->carry_off;
				break;
			}
			pool_free(&R->pool, T->carry_off, T->carry_bytes); /* resized: a new place */
		}
		off = pool_alloc(&R->pool, bytes);
		if (off == UINT64_MAX) {
			replay_fail(R, i, "%s", pool_refusal(&R->pool, bytes, why, sizeof(why)));
			return -1;
		}
		break;
	case MP_EXEC_ASYNC:
		if (R->be->place(R, i, bytes, &off) < 0)
			return -1;
		break;
	}
	R->place_off[i] = off;
	R->place_bytes[i] = bytes;
	R->rel[i] = -1;
	live_add(R, i);
	return 0;
}

/* Action i (a free or a swap-out) releases tensor T's allocation: the pool's
 * blocks are free again at once, in issue order (what takes bytes a
 * swap-out is still reading waits for that copy). */
static int release(struct replay *R, uint32_t i, struct rp_tensor *T)
{
	const uint32_t k = (uint32_t)T->cur;

	R->rel[k] = (int32_t)i;
	R->rel_of[i] = (int32_t)k;
	live_remove(R, k);
	T->cur = -1;
	if (R->o.alloc == MP_EXEC_POOL)
		pool_free(&R->pool, R->place_off[k], R->place_bytes[k]);
	return R->be->release ? R->be->release(R, i, k) : 0;
}

/* The latest swap-out issued at or after dq entry `from` whose bytes overlap
 * [off, off + n) or whose tensor is t (t -1: none); -1 if none. */
static int32_t last_swap_out(const struct replay *R, uint32_t from, uint64_t off, uint64_t n, int32_t t)
{
	for (uint32_t q = R->n_dq; q-- > from;)
		if (R->dq[q].tensor == t || overlaps(R->dq[q].off, R->dq[q].held, off, n))
			return (int32_t)q;
	return -1;
}

/* Hand the pending swap-ins, in order, to the backend while every
 * dependency of the next one has been released.  Its copy starts after its
 * mark, after those releases, and after the swap-outs still reading its
 * bytes or writing its host buffer. */
static int issue_pending(struct replay *R)
{
	while (R->head_pq < R->n_pq) {
		struct rp_pend *j = &R->pq[R->head_pq];
		struct rp_copy c;
		uint32_t n_after = 0;
		int32_t q;

		for (uint32_t d = 0; d < j->n_dep; d++)
			if (R->rel[R->dep[j->dep_at + d]] < 0)
				return 0;
		mp_grow((void **)&R->after, &R->cap_after, j->n_dep + 1, sizeof(*R->after));
		for (uint32_t d = 0; d < j->n_dep; d++)
			R->after[n_after++] = (uint32_t)R->rel[R->dep[j->dep_at + d]];
		q = last_swap_out(R, R->h2d_waited_dq, j->off, j->bytes, j->tensor);
		if (q >= 0) {
			R->after[n_after++] = R->dq[q].act;
			R->h2d_waited_dq = (uint32_t)q + 1;
		}
		c = (struct rp_copy){ j->act, j->tensor, j->off, j->bytes, j->bytes, R->after, n_after, -1 };
		if (j->want.valid && R->checking) {
			c.slot = new_slot(R, j->bytes);
			add_check(R, j->act, j->tensor, -1, RP_CK_IN, c.slot, j->want, NULL);
			R->swaps++;
		}
		if (R->be->copy_in(R, &c) < 0)
			return -1;
		R->issued[j->act] = 1;
		R->head_pq++;
	}
	return 0;
}

/* A pending swap-in that cannot be issued: its first unreleased dependency
 * (allocation index), searching pending swap-ins up to `upto` (UINT32_MAX:
 * all).  Sets *job.  -1 if none. */
static int64_t blocked_dep(const struct replay *R, uint32_t upto, const struct rp_pend **job)
{
	for (uint32_t q = R->head_pq; q < R->n_pq; q++) {
		const struct rp_pend *j = &R->pq[q];

		for (uint32_t d = 0; d < j->n_dep; d++) {
			uint32_t k = R->dep[j->dep_at + d];

			if (R->rel[k] < 0) {
				*job = j;
				return k;
			}
		}
		if (j->act == upto)
			break;
	}
	return -1;
}

/* ---- the actions ---- */

static int do_alloc(struct replay *R, uint32_t i)
{
	const struct mp_action *a = &R->s->a[i];
	const int32_t t = a->tensor;
	const struct mp_tensor *tt = &R->net->tensors[t];
	struct rp_tensor *T = &R->t[t];
	int32_t q;

	if (T->ls != RP_ABSENT) {
		replay_fail(R, i, T->ls == RP_OUT ? "already allocated, and on the host (swap it in)" : "already allocated");
		return -1;
	}
	if (a->bytes < tt->bytes && tt->kind != MP_TK_WORKSPACE) {
		replay_fail(R, i, "reserves %llu bytes for a tensor of %llu", (unsigned long long)a->bytes,
			    (unsigned long long)tt->bytes);
		return -1;
	}
	if (place(R, i, a->bytes) < 0)
		return -1;
	/* bytes a swap-out is still reading are not free yet (async: the
	 * backend's allocator orders its own reuse) */
	q = R->o.alloc == MP_EXEC_ASYNC ? -1 : last_swap_out(R, R->cs_waited_dq, R->place_off[i], a->bytes, -1);
	if (q >= 0)
		R->cs_waited_dq = (uint32_t)q + 1;
	if (R->be->alloc(R, i, q >= 0 ? (int32_t)R->dq[q].act : -1) < 0)
		return -1;
	T->ls = RP_ALLOC;
	T->cur = (int32_t)i;
	T->at_alloc = (int32_t)i;
	if (sched_persistent(tt)) {
		/* resident from the start: weights stay on the device between
		 * iterations, so a persistent tensor found where the last
		 * iteration left it keeps its bytes; else it gets its initial ones */
		if (!(T->carry && T->carry_off == R->place_off[i] && T->carry_bytes == a->bytes && T->expect.valid)) {
			int32_t slot = new_slot(R, tt->bytes);

			if (R->be->fill(R, i, R->place_off[i], tt->bytes, replay_seed(t, -1), slot) < 0)
				return -1;
			T->expect = ver_make(0, slot, -1);
		}
		T->ls = RP_RES;
	}
	T->carry = false;
	return 0;
}

static int do_free(struct replay *R, uint32_t i)
{
	struct rp_tensor *T = &R->t[R->s->a[i].tensor];

	switch (T->ls) {
	case RP_ALLOC:
	case RP_RES:
		break;
	case RP_IN:
		replay_fail(R, i, "not resident (its swap-in at schedule[%d] was never waited for)", T->at_in);
		return -1;
	case RP_OUT:
		replay_fail(R, i, "not resident (swapped out at schedule[%d])", T->at_out);
		return -1;
	default:
		if (T->at_free >= 0)
			replay_fail(R, i, "not resident (already freed at schedule[%d])", T->at_free);
		else
			replay_fail(R, i, "not resident (never allocated)");
		return -1;
	}
	if (R->be->free(R, i) < 0 || release(R, i, T) < 0)
		return -1;
	T->ls = RP_ABSENT;
	T->at_free = (int32_t)i;
	return issue_pending(R);
}

static int do_swap_out(struct replay *R, uint32_t i)
{
	const struct mp_action *a = &R->s->a[i];
	const int32_t t = a->tensor;
	struct rp_tensor *T = &R->t[t];
	struct rp_copy c;
	struct rp_ver want;

	if (T->ls != RP_ALLOC && T->ls != RP_RES) {
		replay_fail(R, i, "not resident%s", T->ls == RP_IN ? " (its swap-in was never waited for)" :
			    T->ls == RP_OUT ? " (already swapped out)" : "");
		return -1;
	}
	c = (struct rp_copy){ i, t, R->place_off[T->cur], 0, R->place_bytes[T->cur], NULL, 0, -1 };
	c.bytes = R->net->tensors[t].bytes < c.held ? R->net->tensors[t].bytes : c.held;
	want = T->ls == RP_RES ? T->expect : ver_none();
	if (want.valid && R->checking) {
		c.slot = new_slot(R, c.bytes);
		add_check(R, i, t, -1, RP_CK_OUT, c.slot, want, NULL);
		R->swaps++;
	}
	if (R->be->mark(R, i) < 0 || R->be->copy_out(R, &c) < 0)
		return -1;
	mp_grow((void **)&R->dq, &R->cap_dq, R->n_dq + 1, sizeof(*R->dq));
	R->dq[R->n_dq++] = (struct rp_dout){ i, t, c.off, c.held };
	T->host_ver = want;
	if (release(R, i, T) < 0)
		return -1;
	T->ls = RP_OUT;
	T->at_out = (int32_t)i;
	return issue_pending(R);
}

static int do_swap_in(struct replay *R, uint32_t i)
{
	const struct mp_action *a = &R->s->a[i];
	const int32_t t = a->tensor;
	struct rp_tensor *T = &R->t[t];
	const uint64_t bytes = R->net->tensors[t].bytes;
	struct rp_pend j;

	memset(&j, 0, sizeof(j));
	if (T->ls == RP_OUT) {
		j.want = T->expect;
	} else if (T->ls == RP_ABSENT && T->at_out < 0 && T->at_free < 0 && T->host && T->host_ver.valid &&
		   sched_persistent(&R->net->tensors[t])) {
		/* TENSILE: a parameter or optimizer state that starts the
		 * iteration on the host */
		T->expect = T->host_ver;
		j.want = T->host_ver;
	} else if (T->ls == RP_ABSENT) {
		if (T->at_free >= 0)
			replay_fail(R, i, "was never swapped out (freed at schedule[%d])", T->at_free);
		else
			replay_fail(R, i, "was never swapped out");
		return -1;
	} else {
		replay_fail(R, i, "is already on the device");
		return -1;
	}
	/* in the arena, it waits for the live allocations holding the bytes it
	 * writes ... (the pool and an allocator never hand out bytes a live
	 * allocation holds) */
	j.dep_at = R->n_dep;
	if (R->o.alloc == MP_EXEC_ARENA && R->p->offset && R->p->offset[i] != UINT64_MAX)
		for (uint32_t q = 0; q < R->n_live; q++) {
			uint32_t k = R->live[q];

			if (overlaps(R->place_off[k], R->place_bytes[k], R->p->offset[i], bytes))
				push_dep(R, k);
		}
	/* the compute issued before it (before place: an allocator's swap-in
	 * allocates after it) */
	if (R->be->mark(R, i) < 0 || place(R, i, bytes) < 0)
		return -1;
	j.act = i;
	j.tensor = t;
	j.off = R->place_off[i];
	j.bytes = bytes;
	/* ... and for those compute allocates after this issue that the plan's
	 * simulation placed (and ended) in these bytes before the copy starts:
	 * a copy waiting for its engine starts late, and the arena reuses the
	 * bytes meanwhile.  Compute-side actions are in time order.  (Its
	 * tensor's own swap-out and every overlapping one are waited for when
	 * the copy is issued.) */
	for (uint32_t k = i + 1; R->o.alloc == MP_EXEC_ARENA && k < R->s->n; k++) {
		const struct mp_action *b = &R->s->a[k];

		if (b->kind == MP_ACT_SWAP_IN || b->kind == MP_ACT_SWAP_OUT)
			continue;
		if (b->start_ms >= a->start_ms)
			break;
		if (b->kind == MP_ACT_ALLOC && R->p->offset[k] != UINT64_MAX && overlaps(R->p->offset[k], b->bytes, j.off, bytes))
			push_dep(R, k);
	}
	j.n_dep = R->n_dep - j.dep_at;
	mp_grow((void **)&R->pq, &R->cap_pq, R->n_pq + 1, sizeof(*R->pq));
	R->pq[R->n_pq++] = j;
	T->ls = RP_IN;
	T->cur = (int32_t)i;
	T->at_in = (int32_t)i;
	return issue_pending(R);
}

static int do_wait(struct replay *R, uint32_t i)
{
	struct rp_tensor *T = &R->t[R->s->a[i].tensor];

	if (T->ls == RP_RES || T->ls == RP_ALLOC)
		return R->be->wait(R, i, -1);
	/* a swapped-out tensor: for its swap-out's copy, whose end frees the
	 * memory */
	if (T->ls == RP_OUT && T->at_out >= 0)
		return R->be->wait(R, i, T->at_out);
	if (T->ls != RP_IN) {
		replay_fail(R, i, "nothing to wait for");
		return -1;
	}
	if (!R->issued[T->at_in]) {
		const struct rp_pend *j = NULL;
		int64_t k;

		if (issue_pending(R) < 0)
			return -1;
		if (!R->issued[T->at_in] && (k = blocked_dep(R, (uint32_t)T->at_in, &j)) >= 0) {
			replay_fail(R, i, "its swap-in (schedule[%u]) copies '%s' into [%llu, %llu), which "
				    "'%s' (schedule[%u]) still holds, and compute would free it only after this wait",
				    j->act, tname(R, j->tensor), (unsigned long long)j->off,
				    (unsigned long long)(j->off + j->bytes), tname(R, R->s->a[k].tensor), (uint32_t)k);
			return -1;
		}
		MP_ASSERT(R->issued[T->at_in]);
	}
	if (R->be->wait(R, i, T->at_in) < 0)
		return -1;
	T->ls = T->expect.valid ? RP_RES : RP_ALLOC;
	return 0;
}

/* Is x readable by action i? */
static int check_readable(struct replay *R, uint32_t i, int32_t x)
{
	const struct rp_tensor *T = &R->t[x];

	switch (T->ls) {
	case RP_RES:
		return 0;
	case RP_ALLOC:
		replay_fail(R, i, "reads '%s', which nothing has written since its allocation at schedule[%d]", tname(R, x),
			    T->at_alloc);
		return -1;
	case RP_IN:
		replay_fail(R, i, "reads '%s' while its swap-in (schedule[%d]) may still be copying: no wait before the read",
			    tname(R, x), T->at_in);
		return -1;
	case RP_OUT:
		replay_fail(R, i, "reads '%s', which was swapped out at schedule[%d] and not swapped back in", tname(R, x),
			    T->at_out);
		return -1;
	default:
		if (T->at_free >= 0)
			replay_fail(R, i, "reads '%s', which was freed at schedule[%d]", tname(R, x), T->at_free);
		else
			replay_fail(R, i, "reads '%s', which is not allocated", tname(R, x));
		return -1;
	}
}

/* What compute (or recompute) i needs before it runs: computed once (or
 * recomputable), its inputs readable, its outputs and workspace allocated
 * in full.  Fills *ms, *ws and *wsoff (the workspace's offset). */
static int compute_ready(struct replay *R, uint32_t i, double *ms, uint64_t *ws, uint64_t *wsoff)
{
	const struct mp_action *a = &R->s->a[i];
	const struct mp_op *op = &R->net->ops[a->op];
	const bool re = a->kind == MP_ACT_RECOMPUTE, first = !R->computed[a->op];

	if (!re && !first) {
		replay_fail(R, i, "op computed twice (use recompute)");
		return -1;
	}
	if (re && !op->recomputable) {
		replay_fail(R, i, "op cannot be recomputed");
		return -1;
	}
	for (uint32_t k = 0; k < op->n_in; k++)
		if (check_readable(R, i, op->in[k]) < 0)
			return -1;
	for (uint32_t k = 0; k < op->n_out; k++) {
		uint8_t ls = R->t[op->out[k]].ls;

		if (ls != RP_ALLOC && ls != RP_RES) {
			replay_fail(R, i, "writes '%s', which is not %s", tname(R, op->out[k]),
				    ls == RP_IN ? "resident yet (no wait for its swap-in)" : "allocated");
			return -1;
		}
	}
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		int32_t x = k < op->n_in ? op->in[k] : op->out[k - op->n_in];

		if (R->place_bytes[R->t[x].cur] < R->net->tensors[x].bytes) {
			replay_fail(R, i, "'%s' has %llu bytes allocated, less than its %llu", tname(R, x),
				    (unsigned long long)R->place_bytes[R->t[x].cur],
				    (unsigned long long)R->net->tensors[x].bytes);
			return -1;
		}
	}
	sched_action_cost(R->net, R->s, a, ms, ws);
	if (R->o.op_factor)
		*ms *= R->o.op_factor[a->op];
	if (*ws > 0) {
		const struct rp_tensor *W = op->ws >= 0 ? &R->t[op->ws] : NULL;

		if (!W || (W->ls != RP_ALLOC && W->ls != RP_RES) || R->place_bytes[W->cur] < *ws) {
			replay_fail(R, i, "its workspace '%s' is not allocated", op->ws >= 0 ? tname(R, op->ws) : "(none)");
			return -1;
		}
		*wsoff = R->place_off[W->cur];
	}
	return 0;
}

/* Hash what compute i reads (when checking): every input, whose bytes must
 * be what the program wrote last (a recompute: what the op read the first
 * time), and a gradient another op wrote this iteration, which it adds to
 * (memplan-net(5)). */
static int hash_reads(struct replay *R, uint32_t i)
{
	const struct mp_action *a = &R->s->a[i];
	const int32_t o = a->op;
	const struct mp_op *op = &R->net->ops[o];
	const bool re = a->kind == MP_ACT_RECOMPUTE, first = !R->computed[o];
	struct rp_ver *inv = &R->in_ver[R->in_at[o]];

	for (uint32_t k = 0; R->checking && k < op->n_in; k++) {
		const int32_t x = op->in[k];
		const struct rp_tensor *T = &R->t[x];
		struct rp_ver want = re && !first ? inv[k] : T->expect;
		uint64_t off = R->place_off[T->cur], n = R->net->tensors[x].bytes;
		int32_t slot;

		if (!re)
			inv[k] = want;
		if (!want.valid)
			continue;
		slot = new_slot(R, n);
		if (R->be->hash(R, i, RP_ENGINE_COMPUTE, off, n, slot) < 0)
			return -1;
		add_check(R, i, x, o, RP_CK_READ, slot, want, culprits(R, off, n, T->cur));
		R->reads++;
	}
	for (uint32_t k = 0; R->checking && !re && k < op->n_out; k++) {
		const int32_t x = op->out[k];
		const struct rp_tensor *T = &R->t[x];
		uint64_t off = R->place_off[T->cur], n = R->net->tensors[x].bytes;
		int32_t slot;

		if (R->net->tensors[x].kind != MP_TK_GRADIENT || !T->expect.valid || T->expect.writer == o)
			continue;
		slot = new_slot(R, n);
		if (R->be->hash(R, i, RP_ENGINE_COMPUTE, off, n, slot) < 0)
			return -1;
		add_check(R, i, x, o, RP_CK_ADD, slot, T->expect, culprits(R, off, n, T->cur));
		R->reads++;
	}
	return 0;
}

/* Compute i's k-th output: a timed op (!real) writes it with its pattern, a
 * real kernel has written it; its checksum becomes what later reads
 * expect.  A recompute must rebuild what the first run wrote. */
static int write_output(struct replay *R, uint32_t i, uint32_t k, int real)
{
	const struct mp_action *a = &R->s->a[i];
	const int32_t o = a->op;
	const int32_t x = R->net->ops[o].out[k];
	const bool re = a->kind == MP_ACT_RECOMPUTE, first = !R->computed[o];
	struct rp_ver *outv = &R->out_ver[R->out_at[o]];
	struct rp_tensor *T = &R->t[x];
	uint64_t off = R->place_off[T->cur], n = R->net->tensors[x].bytes;
	int32_t h = R->checking ? new_slot(R, n) : -1, again = -1;

	if (!real && R->be->fill(R, i, off, n, replay_seed(x, o), h) < 0)
		return -1;
	if (real && h >= 0 && R->be->hash(R, i, RP_ENGINE_COMPUTE, off, n, h) < 0)
		return -1;
	if (h < 0) {
		/* an iteration that takes no checksum (check_first: those after
		 * the first) still wrote it: a swap-in brings it back resident,
		 * and a weight updated here is carried into the next iteration.
		 * Its sum (0, no slot) is never compared: every checking
		 * iteration comes before every other (replay_run) */
		if (!re)
			T->expect = outv[k] = ver_make(0, -1, o);
	} else if (re) {
		struct rp_ver want = !first && outv[k].valid ? outv[k] : ver_make(0, h, o);

		/* a pattern is read back (an overlapping copy may have
		 * written over it); a kernel's output was hashed as
		 * written.  A rebuild that runs otherwise than the first
		 * run (timed against real, other conv algorithms, which
		 * round differently; dropout, whose mask differs by
		 * design) is not compared: later reads expect what the
		 * rebuild wrote. */
		if (!real && (again = new_slot(R, n), R->be->hash(R, i, RP_ENGINE_COMPUTE, off, n, again) < 0))
			return -1;
		if (!R->be->same_run || R->be->same_run(R, i)) {
			add_check(R, i, x, o, RP_CK_REBUILT, real ? h : again, want, culprits(R, off, n, T->cur));
			R->recomputes++;
		} else {
			T->expect = ver_make(0, h, o);
		}
	} else {
		T->expect = ver_make(0, h, o);
		outv[k] = T->expect;
	}
	T->ls = RP_RES;
	return 0;
}

/* Compute or recompute i: what it reads and writes must be there, and
 * (checking) every read is hashed, every output written or hashed. */
static int do_compute(struct replay *R, uint32_t i)
{
	const int32_t o = R->s->a[i].op;
	const struct mp_op *op = &R->net->ops[o];
	uint64_t ws = 0, wsoff = 0;
	double ms = 0;
	int real = 0;

	if (compute_ready(R, i, &ms, &ws, &wsoff) < 0)
		return -1;
	if (R->be->op_begin(R, i) < 0)
		return -1;
	if (hash_reads(R, i) < 0)
		return -1;
	if (R->be->op_run && (real = R->be->op_run(R, i, wsoff)) < 0)
		return -1;
	for (uint32_t k = 0; k < op->n_out; k++)
		if (write_output(R, i, k, real) < 0)
			return -1;
	if (!real && ws > 0 && R->be->fill(R, i, wsoff, ws, replay_seed(op->ws, o), -1) < 0)
		return -1;
	R->computed[o] = 1;
	return R->be->op_end(R, i, ms);
}

/* ---- iterations ---- */

/* The first failed checksum, by action index: 0 if none before `before`. */
static int compare_checks(struct replay *R, uint32_t before)
{
	const struct rp_check *bad = NULL;
	uint64_t got = 0, want = 0;
	char w1[200];
	const char *extra;

	for (uint32_t c = 0; c < R->n_ck; c++) {
		const struct rp_check *k = &R->ck[c];
		uint64_t g = R->be->slot_sum(R, k->slot, R->net->tensors[k->tensor].bytes);
		uint64_t w = ver_value(R, &k->want, k->tensor);

		if (g != w && k->act < before && (!bad || k->act < bad->act)) {
			bad = k;
			got = g;
			want = w;
		}
	}
	if (!bad)
		return 0;
	extra = bad->extra ? bad->extra : "";
	R->failed = false; /* the checksum came first */
	switch (bad->kind) {
	case RP_CK_READ:
		replay_fail(R, bad->act, "'%s' does not hold %s (checksum %016llx, expected %016llx)%s", tname(R, bad->tensor),
			    ver_what(R, &bad->want, w1, sizeof(w1)), (unsigned long long)got, (unsigned long long)want, extra);
		break;
	case RP_CK_ADD:
		replay_fail(R, bad->act, "adds to '%s', which does not hold %s (checksum %016llx, expected %016llx)%s",
			    tname(R, bad->tensor), ver_what(R, &bad->want, w1, sizeof(w1)), (unsigned long long)got,
			    (unsigned long long)want, extra);
		break;
	case RP_CK_REBUILT:
		replay_fail(R, bad->act, "rebuilt '%s' does not hold what '%s' wrote (checksum %016llx, expected %016llx)%s",
			    tname(R, bad->tensor), R->net->ops[bad->op].name, (unsigned long long)got,
			    (unsigned long long)want, extra);
		break;
	case RP_CK_OUT:
		replay_fail(R, bad->act, "'%s' does not hold %s (checksum %016llx, expected %016llx)", tname(R, bad->tensor),
			    ver_what(R, &bad->want, w1, sizeof(w1)), (unsigned long long)got, (unsigned long long)want);
		break;
	default:
		replay_fail(R, bad->act, "the copy does not hold %s (checksum %016llx, expected %016llx)",
			    ver_what(R, &bad->want, w1, sizeof(w1)), (unsigned long long)got, (unsigned long long)want);
		break;
	}
	return -1;
}

static void iteration_reset(struct replay *R)
{
	const uint32_t n = R->s->n;

	for (uint32_t c = 0; c < R->n_ck; c++)
		free(R->ck[c].extra);
	R->n_ck = R->n_dep = R->n_live = R->n_pq = R->head_pq = R->n_dq = 0;
	R->cs_waited_dq = R->h2d_waited_dq = 0;
	R->slot_next = 0;
	R->reads = R->swaps = R->recomputes = R->hashed = 0;
	memset(R->issued, 0, n);
	for (uint32_t i = 0; i < n; i++) {
		R->live_pos[i] = UINT32_MAX;
		R->rel[i] = -1;
	}
	memset(R->computed, 0, R->net->n_ops);
	for (uint32_t t = 0; t < R->net->n_tensors; t++) {
		struct rp_tensor *T = &R->t[t];

		T->ls = RP_ABSENT;
		T->cur = T->at_alloc = T->at_free = T->at_out = T->at_in = -1;
		if (!T->carry)
			T->expect = ver_none();
	}
	if (R->o.alloc == MP_EXEC_POOL) {
		/* the pool is emptied but for the persistent tensors the last
		 * iteration left on the device: they stay where they are, as on a
		 * device, and carry their bytes into this iteration */
		pool_reset(&R->pool);
		for (uint32_t t = 0; t < R->net->n_tensors; t++)
			if (R->t[t].carry) {
				int rc = pool_take(&R->pool, R->t[t].carry_off, R->t[t].carry_bytes);

				MP_ASSERT(rc == 0); /* live together at the end: disjoint */
			}
	}
}

/*
 * The steady state (memplan-plan(5)): iterations run back to back, so what an
 * iteration leaves is what the next one starts from, and a persistent tensor
 * (a parameter, optimizer state, an input) must outlive it.  One that the
 * schedule first allocates must end the iteration on the device, not freed
 * nor left on the host; one it first swaps in must end it on the host,
 * swapped out after its last change.  The first violation, at the action
 * that broke the rule; 0 if none.
 */
static int steady_state(struct replay *R)
{
	for (uint32_t t = 0; t < R->net->n_tensors; t++) {
		const struct rp_tensor *T = &R->t[t];
		const int32_t f = R->first[t];
		const bool live = T->ls == RP_ALLOC || T->ls == RP_RES || T->ls == RP_IN;
		const char *what = tname(R, (int32_t)t);

		if (f < 0 || !sched_persistent(&R->net->tensors[t]))
			continue;
		if (R->s->a[f].kind == MP_ACT_SWAP_IN) {
			/* it starts the next iteration on the host */
			if (T->ls == RP_OUT)
				continue;
			if (live)
				replay_fail(R, (uint32_t)T->cur, "'%s' is still on the device at the end of the iteration, and the "
					    "next one swaps it in from the host (schedule[%d]): its last swap-out is missing", what, f);
			else
				replay_fail(R, (uint32_t)T->at_free, "'%s' is lost: freed, and the next iteration swaps it in "
					    "from the host (schedule[%d]), where its last bytes never went", what, f);
			return -1;
		}
		if (R->s->a[f].kind != MP_ACT_ALLOC)
			continue;
		if (T->ls == RP_IN) {
			replay_fail(R, (uint32_t)T->cur, "'%s' is swapped in and never waited for, and the next iteration "
				    "expects it on the device from schedule[%d] on (wait for its swap-in)", what, f);
			return -1;
		}
		if (live)
			continue;
		/* it starts the next iteration on the device */
		if (T->ls == RP_OUT)
			replay_fail(R, (uint32_t)T->at_out, "'%s' is swapped out and never back in, and the next iteration "
				    "expects it on the device from schedule[%d] on", what, f);
		else
			replay_fail(R, (uint32_t)T->at_free, "'%s' is lost: freed, and the next iteration expects it on the "
				    "device from schedule[%d] on (parameters, optimizer state, kept gradients and inputs outlive the iteration)",
				    what, f);
		return -1;
	}
	return 0;
}

/* A memory event or a compute-end marker on the measured timelines. */
struct mev {
	double t;
	uint32_t seq;              /* action * 2 + sub */
	int64_t delta;
	int32_t step;              /* compute end: its step; else -1 */
};

static int mev_cmp(const void *pa, const void *pb)
{
	const struct mev *a = pa, *b = pb;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

/* The memory events of the measured iteration in time order, as sim_run
 * replays its own: the live peak, its action, each step's most bytes and
 * each action's resident bytes.  A release measured before what it releases
 * was placed is a backend whose streams ran out of the plan's order (a wait
 * missing): a violation at the release, -1. */
static int memory_replay(struct replay *R, struct rp_iter *rec)
{
	const struct mp_schedule *s = R->s;
	const uint32_t n_steps = R->p->sim.n_steps;
	struct mev *log = mp_xmalloc((2 * (size_t)s->n + 1) * sizeof(*log));
	uint32_t n_log = 0, cur = 0;
	int64_t res = 0;
	bool cur_seen = false;

	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		const struct mp_exec_act *m = &rec->act[i];

		switch (a->kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE:
			log[n_log++] = (struct mev){ m->start_ms, 2 * i, 0, -1 };
			log[n_log++] = (struct mev){ m->end_ms, 2 * i + 1, 0,
						     a->kind == MP_ACT_RECOMPUTE ? -1 : R->step_of[i] };
			break;
		case MP_ACT_ALLOC:
		case MP_ACT_SWAP_IN:
			log[n_log++] = (struct mev){ m->start_ms, 2 * i, (int64_t)R->place_bytes[i], -1 };
			break;
		case MP_ACT_FREE:
		case MP_ACT_SWAP_OUT: {
			const uint32_t j = (uint32_t)R->rel_of[i];

			if (j < i && m->end_ms < rec->act[j].start_ms) {
				replay_fail(R, i, "released at %.3f ms of the measured iteration, before the %s of its "
					    "bytes (schedule[%u]) at %.3f ms: the device ran the plan out of order",
					    m->end_ms, mp_act_name(s->a[j].kind), j, rec->act[j].start_ms);
				free(log);
				return -1;
			}
			log[n_log++] = (struct mev){ m->end_ms, 2 * i, -(int64_t)R->place_bytes[j], -1 };
			break;
		}
		case MP_ACT_WAIT:
			log[n_log++] = (struct mev){ m->end_ms, 2 * i, 0, -1 };
			break;
		}
	}
	qsort(log, n_log, sizeof(*log), mev_cmp);
	rec->peak = 0;
	rec->peak_action = 0;
	memset(rec->step_bytes, 0, (n_steps ? n_steps : 1) * sizeof(*rec->step_bytes));
	for (uint32_t k = 0; k < n_log; k++) {
		const struct mev *e = &log[k];

		res += e->delta;
		MP_ASSERT(res >= 0);  /* every release after what it releases (above) */
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
	free(log);
	return 0;
}

/* Issue one iteration, wait for it, compare its checksums and, when rec is
 * given, take its measurements.  0, or -1 (R->failed: a violation; else a
 * backend error). */
static int run_iteration(struct replay *R, struct rp_iter *rec)
{
	const struct mp_schedule *s = R->s;
	int rc = 0;

	iteration_reset(R);
	if (R->be->iter_begin(R, rec != NULL) < 0)
		return -1;
	for (uint32_t i = 0; i < s->n; i++) {
		switch (s->a[i].kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE:
			rc = do_compute(R, i);
			break;
		case MP_ACT_ALLOC:
			rc = do_alloc(R, i);
			break;
		case MP_ACT_FREE:
			rc = do_free(R, i);
			break;
		case MP_ACT_SWAP_OUT:
			rc = do_swap_out(R, i);
			break;
		case MP_ACT_SWAP_IN:
			rc = do_swap_in(R, i);
			break;
		case MP_ACT_WAIT:
			rc = do_wait(R, i);
			break;
		}
		if (rc < 0)
			break;
		if (R->be->issued)
			R->be->issued(R, i);
	}
	/* the end of an iteration waits for every copy (TENSILE III-D): a
	 * swap-in still pending waits for a release that never comes */
	if (rc == 0 && issue_pending(R) == 0 && R->head_pq < R->n_pq) {
		const struct rp_pend *j = NULL;
		int64_t k = blocked_dep(R, UINT32_MAX, &j);

		MP_ASSERT(k >= 0);
		replay_fail(R, j->act, "copies into [%llu, %llu), which '%s' (schedule[%u]) still holds at the end of the iteration",
			    (unsigned long long)j->off, (unsigned long long)(j->off + j->bytes), tname(R, R->s->a[k].tensor),
			    (uint32_t)k);
	}
	/* what was issued ends before anything is read back (also after a
	 * violation: the buffers must outlive it) */
	if (R->be->iter_end(R) < 0 || R->dev_failed)
		return -1;
	if (compare_checks(R, R->failed ? R->fail_at : UINT32_MAX) < 0 || R->failed || steady_state(R) < 0)
		return -1;
	/* what the device computed this iteration becomes known for the next;
	 * persistent tensors resident now keep their bytes into it */
	for (uint32_t t = 0; t < R->net->n_tensors; t++) {
		struct rp_tensor *T = &R->t[t];

		if (T->expect.valid && T->expect.slot >= 0)
			T->expect = ver_make(ver_value(R, &T->expect, (int32_t)t), -1, T->expect.writer);
		if (T->host_ver.valid && T->host_ver.slot >= 0)
			T->host_ver = ver_make(ver_value(R, &T->host_ver, (int32_t)t), -1, T->host_ver.writer);
		T->carry = T->ls == RP_RES && T->cur >= 0 && sched_persistent(&R->net->tensors[t]);
		if (T->carry) {
			T->carry_off = R->place_off[T->cur];
			T->carry_bytes = R->place_bytes[T->cur];
		}
	}
	if (R->be->measure(R, rec) < 0)
		return -1;
	if (rec && memory_replay(R, rec) < 0)
		return -1;
	return 0;
}

/* ---- setup ---- */

static void replay_free(struct replay *R)
{
	if (R->be && R->ctx)
		R->be->close(R);
	pool_release(&R->pool);
	for (uint32_t c = 0; c < R->n_ck; c++)
		free(R->ck[c].extra);
	free(R->ck);
	free(R->swapped);
	free(R->first);
	free(R->t);
	free(R->step_of);
	free(R->in_at);
	free(R->out_at);
	free(R->in_ver);
	free(R->out_ver);
	free(R->computed);
	free(R->place_off);
	free(R->place_bytes);
	free(R->rel);
	free(R->rel_of);
	free(R->issued);
	free(R->live_pos);
	free(R->live);
	free(R->dep);
	free(R->after);
	free(R->pq);
	free(R->dq);
}

/* The bookkeeping of R for its plan; the backend not yet open. */
static void replay_init(struct replay *R)
{
	const struct mp_net *net = R->net;
	const struct mp_schedule *s = R->s;
	const uint32_t n = s->n, n1 = n ? n : 1, nt1 = net->n_tensors ? net->n_tensors : 1;
	uint32_t ni = 0, no = 0;
	int32_t step = 0;

	if (R->o.alloc == MP_EXEC_POOL) {
		R->mem_bytes = exec_pool_bytes(R->req, R->p, &R->o);
		pool_init(&R->pool, R->mem_bytes);
	} else if (R->o.alloc == MP_EXEC_ARENA) {
		R->mem_bytes = R->p->arena_bytes;
	}
	/* a checksum slot per read, output, rebuild, copy and initial fill */
	R->n_slots = 1;
	R->swapped = mp_xcalloc(nt1, 1);
	for (uint32_t i = 0; i < n; i++) {
		const struct mp_action *a = &s->a[i];

		if (a->kind == MP_ACT_COMPUTE || a->kind == MP_ACT_RECOMPUTE)
			R->n_slots += net->ops[a->op].n_in + 2 * net->ops[a->op].n_out;
		else if (a->kind != MP_ACT_FREE && a->kind != MP_ACT_WAIT)
			R->n_slots++;
		if ((a->kind == MP_ACT_SWAP_OUT || a->kind == MP_ACT_SWAP_IN) && !R->swapped[a->tensor]) {
			R->swapped[a->tensor] = 1;
			R->host_bytes += net->tensors[a->tensor].bytes;
		}
	}
	R->t = mp_xcalloc(nt1, sizeof(*R->t));
	R->first = mp_xmalloc(nt1 * sizeof(*R->first));
	for (uint32_t t = 0; t < net->n_tensors; t++) {
		R->t[t].expect = R->t[t].host_ver = ver_none();
		R->first[t] = -1;
	}
	for (uint32_t i = n; i-- > 0;) {
		const struct mp_action *a = &s->a[i];

		if (a->kind == MP_ACT_ALLOC || a->kind == MP_ACT_SWAP_IN || a->kind == MP_ACT_SWAP_OUT)
			R->first[a->tensor] = (int32_t)i;
	}
	R->step_of = mp_xmalloc(n1 * sizeof(*R->step_of));
	for (uint32_t i = 0; i < n; i++)
		R->step_of[i] = s->a[i].kind == MP_ACT_COMPUTE ? step++ : -1;
	R->in_at = mp_xcalloc(net->n_ops + 1, sizeof(*R->in_at));
	R->out_at = mp_xcalloc(net->n_ops + 1, sizeof(*R->out_at));
	for (uint32_t k = 0; k < net->n_ops; k++) {
		R->in_at[k] = ni;
		R->out_at[k] = no;
		ni += net->ops[k].n_in;
		no += net->ops[k].n_out;
	}
	R->in_ver = mp_xcalloc(ni + 1, sizeof(*R->in_ver));
	R->out_ver = mp_xcalloc(no + 1, sizeof(*R->out_ver));
	R->computed = mp_xcalloc(net->n_ops + 1, 1);
	R->place_off = mp_xcalloc(n1, sizeof(*R->place_off));
	R->place_bytes = mp_xcalloc(n1, sizeof(*R->place_bytes));
	R->rel = mp_xmalloc(n1 * sizeof(*R->rel));
	R->rel_of = mp_xcalloc(n1, sizeof(*R->rel_of));
	R->issued = mp_xcalloc(n1, 1);
	R->live_pos = mp_xmalloc(n1 * sizeof(*R->live_pos));
	R->live = mp_xmalloc(n1 * sizeof(*R->live));
}

/* A persistent tensor whose first swap-related action is a swap-in starts
 * the iteration on the host with its initial contents. */
static void host_initial(struct replay *R)
{
	const struct mp_schedule *s = R->s;
	uint8_t *seen = mp_xcalloc(R->net->n_tensors ? R->net->n_tensors : 1, 1);

	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];
		const int32_t t = a->tensor;

		if (a->kind != MP_ACT_ALLOC && a->kind != MP_ACT_SWAP_IN && a->kind != MP_ACT_SWAP_OUT)
			continue;
		if (!seen[t] && a->kind == MP_ACT_SWAP_IN && sched_persistent(&R->net->tensors[t]))
			R->t[t].host_ver = ver_make(R->be->host_fill(R, R->t[t].host, R->net->tensors[t].bytes,
								      replay_seed(t, -1)), -1, -1);
		seen[t] = 1;
	}
	free(seen);
}

/* The measured iterations' median (by wall time) into out. */
static void take_median(const struct replay *R, struct rp_iter *recs, struct mp_exec_result *out)
{
	const struct mp_exec_opts *o = &R->o;
	const struct mp_schedule *s = R->s;
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
	out->clock = o->clock;
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
	out->mem_bytes = R->mem_bytes;
	out->arena_high_bytes = o->alloc == MP_EXEC_ARENA ? R->arena_high : 0;
	out->pool_high_bytes = o->alloc == MP_EXEC_POOL ? R->pool.high_blocks * POOL_BLOCK_BYTES : 0;
	out->peak_bytes = o->alloc == MP_EXEC_POOL    ? out->pool_high_bytes
			: o->alloc == MP_EXEC_ASYNC ? out->cuda.reserved_high_bytes
						    : out->live_peak_bytes;
	for (uint32_t i = 0; i < s->n; i++) {
		const struct mp_action *a = &s->a[i];

		if (a->kind == MP_ACT_SWAP_IN) {
			out->h2d_bytes += R->net->tensors[a->tensor].bytes;
			out->n_h2d++;
		} else if (a->kind == MP_ACT_SWAP_OUT) {
			out->d2h_bytes += R->net->tensors[a->tensor].bytes;
			out->n_d2h++;
		}
	}
	out->n_act = s->n;
	out->act = recs[med].act;
	recs[med].act = NULL;
	out->n_steps = R->p->sim.n_steps;
	out->step_bytes = recs[med].step_bytes;
	recs[med].step_bytes = NULL;
}

int replay_run(const struct backend_i *be, const struct mp_net *net, const struct mp_plan_req *req,
	       const struct mp_plan *p, const struct mp_exec_opts *o, struct mp_exec_result *out,
	       struct mp_error *err)
{
	const uint32_t n1 = p->sched.n ? p->sched.n : 1, n_steps = p->sim.n_steps;
	struct replay R;
	struct rp_iter *recs = NULL;
	uint32_t bad, first;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	out->failed_action = UINT32_MAX;
	if (!(o->time_scale > 0) || !isfinite(o->time_scale) || o->iters < 1) {
		mp_error_set(err, "internal: bad executor options");
		return -1;
	}
	if (exec_check_shape(net, &p->sched, &bad, err) < 0) {
		out->failed_action = bad;
		return -1;
	}
	memset(&R, 0, sizeof(R));
	R.be = be;
	R.net = net;
	R.req = req;
	R.p = p;
	R.s = &p->sched;
	R.o = *o;
	R.fail_at = UINT32_MAX;
	replay_init(&R);
	if ((rc = be->open(&R, out)) != 0) {
		*err = R.err;
		goto done;
	}
	rc = -1;
	host_initial(&R);
	recs = mp_xcalloc(o->iters, sizeof(*recs));
	for (uint32_t k = 0; k < o->iters; k++) {
		recs[k].act = mp_xcalloc(n1, sizeof(*recs[k].act));
		recs[k].step_bytes = mp_xcalloc(n_steps ? n_steps : 1, sizeof(*recs[k].step_bytes));
	}
	/* check_first: the checks run in one more iteration first, and the
	 * warm-up and measured iterations take no checksum */
	first = R.check_first ? 1 : 0;
	for (uint32_t it = 0; it < first + o->warmup + o->iters; it++) {
		struct rp_iter *rec = it >= first + o->warmup ? &recs[it - first - o->warmup] : NULL;

		/* (the checking iterations first: write_output's unchecked
		 * versions are never compared) */
		R.checking = !first || it == 0;
		if (run_iteration(&R, rec) < 0) {
			*err = R.err;
			if (R.failed && !R.dev_failed)
				out->failed_action = R.fail_at;
			goto done;
		}
		if (it == 0) {
			/* per-iteration counts are the same in every checking iteration */
			out->reads_checked = R.reads;
			out->swaps_checked = R.swaps;
			out->recomputes_checked = R.recomputes;
			out->bytes_hashed = R.hashed;
		}
	}
	if (be->finish && be->finish(&R, out) < 0) {
		*err = R.err;
		goto done;
	}
	take_median(&R, recs, out);
	rc = 0;
done:
	if (recs)
		for (uint32_t k = 0; k < o->iters; k++) {
			free(recs[k].act);
			free(recs[k].step_bytes);
		}
	free(recs);
	replay_free(&R);
	if (rc < 0) {
		uint32_t f = out->failed_action;
		struct mp_exec_cuda c = out->cuda;

		exec_result_release(out);
		out->failed_action = f;
		out->cuda = c;
	}
	return rc;
}
