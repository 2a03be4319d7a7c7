/*
 * Event simulation of a Schedule (DESIGN.md "Simulator"; TENSILE IV-B Alg. 1
 * generalised to three engines).  One pass issues actions in program order on
 * their engines; memory events come in three streams (compute-ordered, h2d,
 * d2h), each already sorted by time, and are merged: O(actions).  The
 * compute-ordered events are read back from the issued actions themselves,
 * not stored: a schedule may hold millions of actions.
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ST_ABSENT, ST_RESIDENT, ST_IN_FLIGHT, ST_HOST };

struct event {
	double t;
	int64_t delta;    /* bytes */
	uint32_t seq;     /* action index * 2 + sub: program order at equal time */
	int32_t dlive;    /* tensors */
	int32_t step;     /* compute end marker: its step; else -1 */
	int32_t tensor;   /* memory events: the tensor; else -1 */
};

struct stream {
	uint32_t n, cap;
	struct event *ev;
};

static void emit(struct stream *s, double t, uint32_t seq, int64_t delta,
		 int32_t dlive, int32_t step, int32_t tensor)
{
	mp_grow((void **)&s->ev, &s->cap, s->n + 1, sizeof(*s->ev));
	s->ev[s->n++] = (struct event){ t, delta, seq, dlive, step, tensor };
}

static int before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/*
 * The compute-ordered events, read back in program order from the actions
 * once all are issued (with their times): each action's but the swaps',
 * which the copy engines' streams hold.  held[t] follows what t reserves as
 * the issuing did (an alloc its bytes, a swap-in the tensor's), for the free
 * that gives it back.
 */
struct cursor {
	const struct mp_net *net;
	const struct mp_schedule *s;
	uint64_t *held;           /* [n_tensors] */
	uint32_t i, sub;          /* the next action, and its next event */
	uint32_t step;            /* compute actions passed */
};

/* The next compute-ordered event into *e; 0 after the last. */
static int cursor_next(struct cursor *c, struct event *e)
{
	for (; c->i < c->s->n; c->i++, c->sub = 0) {
		const struct mp_action *a = &c->s->a[c->i];
		uint32_t seq = 2 * c->i;
		int32_t t = a->tensor;

		switch (a->kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE:
			if (!c->sub) { /* its start, then its end */
				c->sub = 1;
				*e = (struct event){ a->start_ms, 0, seq, 0, -1, -1 };
				return 1;
			}
			*e = (struct event){ a->end_ms, 0, seq + 1, 0,
					     a->kind == MP_ACT_COMPUTE ? (int32_t)c->step++ : -1, -1 };
			break;
		case MP_ACT_ALLOC:
			c->held[t] = a->bytes;
			*e = (struct event){ a->start_ms, (int64_t)a->bytes, seq, 1, -1, t };
			break;
		case MP_ACT_FREE:
			*e = (struct event){ a->start_ms, -(int64_t)c->held[t], seq, -1, -1, t };
			c->held[t] = 0;
			break;
		case MP_ACT_WAIT:
			*e = (struct event){ a->start_ms, 0, seq, 0, -1, -1 };
			break;
		case MP_ACT_SWAP_IN:
			c->held[t] = c->net->tensors[t].bytes;
			continue;
		case MP_ACT_SWAP_OUT:
			c->held[t] = 0;
			continue;
		}
		c->i++;
		c->sub = 0;
		return 1;
	}
	return 0;
}

/* Three-way merge of the compute-ordered events and the two copy streams,
 * each sorted by (time, seq). */
struct merge {
	struct cursor c;
	struct event ce;          /* the cursor's next event, when c_has */
	int c_has;
	const struct stream *s[2];
	uint32_t i[2];
};

static void merge_init(struct merge *m, const struct mp_net *net, const struct mp_schedule *s,
		       const struct stream *h2d, const struct stream *d2h)
{
	memset(m, 0, sizeof(*m));
	m->c.net = net;
	m->c.s = s;
	m->c.held = mp_xcalloc(net->n_tensors, sizeof(*m->c.held));
	m->c_has = cursor_next(&m->c, &m->ce);
	m->s[0] = h2d;
	m->s[1] = d2h;
}

static void merge_release(struct merge *m)
{
	free(m->c.held);
}

/* The next event in (time, seq) order into *e; 0 after the last. */
static int merge_next(struct merge *m, struct event *e)
{
	const struct event *best = m->c_has ? &m->ce : NULL;
	int from = -1;

	for (int k = 0; k < 2; k++)
		if (m->i[k] < m->s[k]->n && (!best || before(&m->s[k]->ev[m->i[k]], best))) {
			best = &m->s[k]->ev[m->i[k]];
			from = k;
		}
	if (!best)
		return 0;
	*e = *best;
	if (from >= 0)
		m->i[from]++;
	else
		m->c_has = cursor_next(&m->c, &m->ce);
	return 1;
}

static const char *act_label(const struct mp_net *net, const struct mp_action *a, char *buf, size_t n)
{
	if (a->op >= 0)
		snprintf(buf, n, "%s '%s'", mp_act_name(a->kind), net->ops[a->op].name);
	else
		snprintf(buf, n, "%s '%s'", mp_act_name(a->kind), net->tensors[a->tensor].name);
	return buf;
}

/* "'conv1.fwd'" for version w (op + 1), "the iteration's start" for 0. */
static void version_name(const struct mp_net *net, int32_t w, char *buf, size_t n)
{
	if (w)
		snprintf(buf, n, "'%s'", net->ops[w - 1].name);
	else
		snprintf(buf, n, "the iteration's start");
}

/* What the simulation knows while it issues the schedule in program order. */
struct sim_state {
	const struct mp_net *net;
	const struct mp_device *dev;
	struct mp_schedule *s;
	struct mp_sim *out;
	struct mp_error *err;
	uint8_t *st;               /* [n_tensors] ST_* */
	uint8_t *done;             /* [n_ops] computed once */
	uint8_t *swapped_once;     /* [n_tensors] */
	/* valid[t]: t holds data (written since its allocation, or resident
	 * from before the iteration); host_valid[t]: the host copy does */
	uint8_t *valid, *host_valid;
	/* Versions, as op + 1 (0: none, or contents from before the
	 * iteration): origw[t] the last compute (not recompute) to write t,
	 * curw[t] the writer of the bytes t holds now, hostw[t] of its host
	 * copy; readw[in_at[o] + k] what op o's input k held when o was first
	 * computed.  A compute must read what the program order left (origw), a
	 * recompute what its first run read: rebuilding the wrong version (a
	 * batch norm's output without the in-place relu that overwrote it) is
	 * an error here, not silent. */
	int32_t *origw, *curw, *hostw, *readw;
	uint32_t *in_at;           /* [n_ops + 1] */
	double *ready;             /* [n_tensors] device data ready */
	double *host_ready;        /* [n_tensors] */
	uint64_t *held;            /* [n_tensors] bytes reserved */
	struct stream hs, ds;      /* h2d, d2h events */
	double tc, th, td;         /* when each engine is next free */
	uint32_t step;             /* compute actions issued */
	char lab[300];
};

static void sim_state_init(struct sim_state *S, const struct mp_net *net, const struct mp_device *dev,
			   struct mp_schedule *s, struct mp_sim *out, struct mp_error *err)
{
	uint32_t nt = net->n_tensors;

	memset(S, 0, sizeof(*S));
	S->net = net;
	S->dev = dev;
	S->s = s;
	S->out = out;
	S->err = err;
	S->swapped_once = mp_xcalloc(nt, 1);
	S->valid = mp_xcalloc(nt, 1);
	S->host_valid = mp_xcalloc(nt, 1);
	S->origw = mp_xcalloc(nt, sizeof(*S->origw));
	S->curw = mp_xcalloc(nt, sizeof(*S->curw));
	S->hostw = mp_xcalloc(nt, sizeof(*S->hostw));
	S->in_at = mp_xmalloc(((size_t)net->n_ops + 1) * sizeof(*S->in_at));
	S->st = mp_xcalloc(nt, 1);
	S->done = mp_xcalloc(net->n_ops ? net->n_ops : 1, 1);
	S->ready = mp_xcalloc(nt, sizeof(*S->ready));
	S->host_ready = mp_xcalloc(nt, sizeof(*S->host_ready));
	S->held = mp_xcalloc(nt, sizeof(*S->held));
	S->in_at[0] = 0;
	for (uint32_t o = 0; o < net->n_ops; o++)
		S->in_at[o + 1] = S->in_at[o] + net->ops[o].n_in;
	S->readw = mp_xcalloc((size_t)S->in_at[net->n_ops] + 1, sizeof(*S->readw));
	memset(out, 0, sizeof(*out));
	out->steps = mp_xcalloc(net->n_ops ? net->n_ops : 1, sizeof(*out->steps));
}

static void sim_state_release(struct sim_state *S)
{
	free(S->valid);
	free(S->host_valid);
	free(S->origw);
	free(S->curw);
	free(S->hostw);
	free(S->in_at);
	free(S->readw);
	free(S->swapped_once);
	free(S->st);
	free(S->done);
	free(S->ready);
	free(S->host_ready);
	free(S->held);
	free(S->hs.ev);
	free(S->ds.ev);
}

static const char *sim_label(struct sim_state *S, uint32_t i)
{
	return act_label(S->net, &S->s->a[i], S->lab, sizeof(S->lab));
}

/* Action i's op may read each input: resident, written, and the version
 * its first run read (a recompute) or the program order left (a compute). */
static int sim_check_reads(struct sim_state *S, uint32_t i)
{
	const struct mp_net *net = S->net;
	const struct mp_action *a = &S->s->a[i];
	const struct mp_op *op = &net->ops[a->op];

	for (uint32_t k = 0; k < op->n_in; k++) {
		int32_t x = op->in[k];
		int32_t *seen = &S->readw[S->in_at[a->op] + k];
		int32_t want;

		if (S->st[x] != ST_RESIDENT) {
			mp_error_set(S->err, "schedule[%u] %s: reads '%s', which %s", i, sim_label(S, i),
				     net->tensors[x].name,
				     S->st[x] == ST_IN_FLIGHT ? "is still being swapped in (no wait)" :
				     S->st[x] == ST_HOST ? "is swapped out" : "is not resident");
			return -1;
		}
		if (!S->valid[x]) {
			mp_error_set(S->err, "schedule[%u] %s: reads '%s', which nothing has written since its allocation",
				     i, sim_label(S, i), net->tensors[x].name);
			return -1;
		}
		want = a->kind == MP_ACT_RECOMPUTE && S->done[a->op] ? *seen : S->origw[x];
		if (S->curw[x] != want) {
			char got[160], exp[160];

			version_name(net, S->curw[x], got, sizeof(got));
			version_name(net, want, exp, sizeof(exp));
			mp_error_set(S->err, "schedule[%u] %s: reads '%s' as %s left it, not as %s did", i,
				     sim_label(S, i), net->tensors[x].name, got, exp);
			return -1;
		}
		if (a->kind == MP_ACT_COMPUTE)
			*seen = S->curw[x];
	}
	return 0;
}

static int sim_check_writes(struct sim_state *S, uint32_t i)
{
	const struct mp_net *net = S->net;
	const struct mp_action *a = &S->s->a[i];
	const struct mp_op *op = &net->ops[a->op];

	for (uint32_t k = 0; k < op->n_out; k++) {
		int32_t x = op->out[k];

		if (S->st[x] != ST_RESIDENT) {
			mp_error_set(S->err, "schedule[%u] %s: writes '%s', which is not allocated", i,
				     sim_label(S, i), net->tensors[x].name);
			return -1;
		}
		/* gradients of a tensor read by several layers add up
		 * in one buffer (memplan-net(5)): a later writer adds
		 * to what the earlier ones left, which must be there */
		if (net->tensors[x].kind == MP_TK_GRADIENT && S->origw[x] && S->origw[x] - 1 != a->op &&
		    !S->valid[x]) {
			mp_error_set(S->err, "schedule[%u] %s: adds to '%s', whose sum so far ('%s' wrote it) was freed since",
				     i, sim_label(S, i), net->tensors[x].name, net->ops[S->origw[x] - 1].name);
			return -1;
		}
	}
	return 0;
}

/* Action i's micro-batches have valid algorithms and sum to the op's batch. */
static int sim_check_micro(struct sim_state *S, uint32_t i)
{
	const struct mp_action *a = &S->s->a[i];
	const struct mp_op *op = &S->net->ops[a->op];
	uint32_t sum = 0;

	if (a->micro <= 1)
		return 0;
	for (uint32_t k = 0; k < a->micro; k++) {
		const struct mp_micro *m = &S->s->micro[a->micro_at + k];

		if (m->algo >= (int32_t)op->n_algos || m->batch == 0) {
			mp_error_set(S->err, "schedule[%u] %s: bad micro-batch", i, sim_label(S, i));
			return -1;
		}
		sum += m->batch;
	}
	if (sum != op->batch) {
		mp_error_set(S->err, "schedule[%u] %s: micro-batches sum to %u, not the batch %u", i,
			     sim_label(S, i), sum, op->batch);
		return -1;
	}
	return 0;
}

/* compute and recompute: run the op on the compute engine after checking
 * what it reads, writes and needs as workspace. */
static int sim_compute(struct sim_state *S, uint32_t i)
{
	const struct mp_net *net = S->net;
	struct mp_action *a = &S->s->a[i];
	const struct mp_op *op = &net->ops[a->op];
	struct mp_sim *out = S->out;
	uint64_t ws;
	double ms;

	if (a->algo >= (int32_t)op->n_algos || a->micro < 1 ||
	    (a->micro > 1 && (uint64_t)a->micro_at + a->micro > S->s->n_micro)) {
		mp_error_set(S->err, "schedule[%u] %s: bad algorithm or micro-batch count", i, sim_label(S, i));
		return -1;
	}
	if (sim_check_reads(S, i) < 0 || sim_check_writes(S, i) < 0)
		return -1;
	sched_action_cost(net, S->s, a, &ms, &ws);
	if (sim_check_micro(S, i) < 0)
		return -1;
	if (ws > 0 && (op->ws < 0 || S->st[op->ws] != ST_RESIDENT || S->held[op->ws] < ws)) {
		mp_error_set(S->err, "schedule[%u] %s: its workspace '%s' is not allocated", i,
			     sim_label(S, i), op->ws >= 0 ? net->tensors[op->ws].name : "(none)");
		return -1;
	}
	if (a->kind == MP_ACT_COMPUTE) {
		if (S->done[a->op]) {
			mp_error_set(S->err, "schedule[%u] %s: op computed twice (use recompute)", i, sim_label(S, i));
			return -1;
		}
		S->done[a->op] = 1;
	} else if (!op->recomputable) {
		mp_error_set(S->err, "schedule[%u] %s: op cannot be recomputed", i, sim_label(S, i));
		return -1;
	}
	a->start_ms = S->tc;
	a->end_ms = S->tc + ms;
	S->tc = a->end_ms;
	for (uint32_t k = 0; k < op->n_out; k++) {
		S->ready[op->out[k]] = S->tc;
		S->valid[op->out[k]] = 1;
		S->curw[op->out[k]] = a->op + 1;
		if (a->kind == MP_ACT_COMPUTE)
			S->origw[op->out[k]] = a->op + 1;
	}
	if (a->kind == MP_ACT_COMPUTE) {
		out->steps[S->step++].op = a->op;
		out->compute_ms += ms;
	} else {
		out->recompute_ms += ms;
		out->n_recompute++;
	}
	return 0;
}

static int sim_alloc(struct sim_state *S, uint32_t i)
{
	struct mp_action *a = &S->s->a[i];
	int32_t t = a->tensor;

	if (S->st[t] != ST_ABSENT) {
		mp_error_set(S->err, "schedule[%u] %s: already %s", i, sim_label(S, i),
			     S->st[t] == ST_HOST ? "on the host (swap it in)" : "allocated");
		return -1;
	}
	S->st[t] = ST_RESIDENT;
	S->held[t] = a->bytes;
	/* resident from before the iteration: parameters, state, inputs */
	S->valid[t] = sched_persistent(&S->net->tensors[t]);
	if (!S->valid[t])
		S->curw[t] = 0;
	a->start_ms = a->end_ms = S->tc;
	return 0;
}

static int sim_free(struct sim_state *S, uint32_t i)
{
	struct mp_action *a = &S->s->a[i];
	int32_t t = a->tensor;

	if (S->st[t] != ST_RESIDENT) {
		mp_error_set(S->err, "schedule[%u] %s: not resident%s", i, sim_label(S, i),
			     S->st[t] == ST_IN_FLIGHT ? " (its swap-in was never waited for)" : "");
		return -1;
	}
	S->st[t] = ST_ABSENT;
	a->start_ms = a->end_ms = S->tc;
	S->held[t] = 0;
	return 0;
}

/* swap_out: a copy on the d2h engine; the memory is free when it ends. */
static int sim_swap_out(struct sim_state *S, uint32_t i)
{
	struct mp_action *a = &S->s->a[i];
	int32_t t = a->tensor;

	if (S->st[t] != ST_RESIDENT) {
		mp_error_set(S->err, "schedule[%u] %s: not resident", i, sim_label(S, i));
		return -1;
	}
	a->start_ms = fmax(fmax(S->td, S->tc), S->ready[t]);
	a->end_ms = a->start_ms + device_copy_ms(S->dev, S->net->tensors[t].bytes, false);
	S->td = a->end_ms;
	S->host_ready[t] = a->end_ms;
	S->st[t] = ST_HOST;
	S->host_valid[t] = S->valid[t];
	S->hostw[t] = S->curw[t];
	S->valid[t] = 0;
	S->swapped_once[t] = 1;
	S->out->d2h_bytes += S->net->tensors[t].bytes;
	S->out->n_swap_out++;
	emit(&S->ds, a->end_ms, 2 * i, -(int64_t)S->held[t], -1, -1, t);
	S->held[t] = 0;
	return 0;
}

/* swap_in: a copy on the h2d engine; the memory is held from its start. */
static int sim_swap_in(struct sim_state *S, uint32_t i)
{
	struct mp_action *a = &S->s->a[i];
	int32_t t = a->tensor;

	/* parameters and optimizer state may live on the host between
	 * iterations (TENSILE): their first swap-in needs no swap-out */
	if (S->st[t] == ST_ABSENT && sched_persistent(&S->net->tensors[t]) && !S->swapped_once[t]) {
		S->st[t] = ST_HOST;
		S->host_valid[t] = 1; /* lives on the host between iterations */
	}
	if (S->st[t] != ST_HOST) {
		mp_error_set(S->err, "schedule[%u] %s: %s", i, sim_label(S, i),
			     S->st[t] == ST_ABSENT ? "was never swapped out" : "is already on the device");
		return -1;
	}
	a->start_ms = fmax(fmax(S->th, S->tc), S->host_ready[t]);
	a->end_ms = a->start_ms + device_copy_ms(S->dev, S->net->tensors[t].bytes, true);
	S->th = a->end_ms;
	S->ready[t] = a->end_ms;
	S->st[t] = ST_IN_FLIGHT;
	S->valid[t] = S->host_valid[t];
	S->curw[t] = S->hostw[t];
	S->held[t] = S->net->tensors[t].bytes;
	S->out->h2d_bytes += S->held[t];
	S->out->n_swap_in++;
	emit(&S->hs, a->start_ms, 2 * i, (int64_t)S->held[t], 1, -1, t);
	return 0;
}

/* wait: compute stalls until t's swap-in (or swap-out) has finished. */
static int sim_wait(struct sim_state *S, uint32_t i)
{
	struct mp_action *a = &S->s->a[i];
	int32_t t = a->tensor;

	if (S->st[t] == ST_IN_FLIGHT) {
		if (S->ready[t] > S->tc) {
			S->out->stall_ms += S->ready[t] - S->tc;
			S->tc = S->ready[t];
		}
		S->st[t] = ST_RESIDENT;
	} else if (S->st[t] == ST_HOST && S->swapped_once[t]) {
		/* compute waits for the swap-out's copy: its memory
		 * is free from then on */
		if (S->host_ready[t] > S->tc) {
			S->out->stall_ms += S->host_ready[t] - S->tc;
			S->tc = S->host_ready[t];
		}
	} else if (S->st[t] != ST_RESIDENT) {
		mp_error_set(S->err, "schedule[%u] %s: nothing to wait for", i, sim_label(S, i));
		return -1;
	}
	a->start_ms = a->end_ms = S->tc;
	return 0;
}

static int sim_action(struct sim_state *S, uint32_t i)
{
	const struct mp_action *a = &S->s->a[i];
	int32_t t = a->tensor;

	if ((a->op >= 0 && (uint32_t)a->op >= S->net->n_ops) ||
	    (a->op < 0 && (t < 0 || (uint32_t)t >= S->net->n_tensors))) {
		mp_error_set(S->err, "schedule[%u] %s: no such op or tensor", i, mp_act_name(a->kind));
		return -1;
	}
	switch (a->kind) {
	case MP_ACT_COMPUTE:
	case MP_ACT_RECOMPUTE:
		return sim_compute(S, i);
	case MP_ACT_ALLOC:
		return sim_alloc(S, i);
	case MP_ACT_FREE:
		return sim_free(S, i);
	case MP_ACT_SWAP_OUT:
		return sim_swap_out(S, i);
	case MP_ACT_SWAP_IN:
		return sim_swap_in(S, i);
	case MP_ACT_WAIT:
		return sim_wait(S, i);
	}
	return 0;
}

/* After the last action: every op was computed, and, the steady state, what
 * the iteration made it gives back, or the next iteration (which makes it
 * again) leaks it. */
static int sim_check_end(struct sim_state *S)
{
	const struct mp_net *net = S->net;

	if (S->step != net->n_ops) {
		for (uint32_t o = 0; o < net->n_ops; o++)
			if (!S->done[o]) {
				mp_error_set(S->err, "schedule: op '%s' is never computed", net->ops[o].name);
				break;
			}
		return -1;
	}
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (S->st[t] != ST_ABSENT && !sched_persistent(&net->tensors[t])) {
			uint32_t i = S->s->n;

			while (i-- > 0 && S->s->a[i].tensor != (int32_t)t)
				;
			mp_error_set(S->err, "schedule[%u] %s: %s at the end of the iteration, and the next one makes it "
				     "again: a leak on every iteration (%s)", i, sim_label(S, i),
				     S->st[t] == ST_HOST ? "swapped out and never back in: its host copy outlives it"
							 : "still on the device",
				     S->st[t] == ST_HOST ? "free it instead of swapping it out" : "free it after its last reader");
			return -1;
		}
	return 0;
}

/* Merge the three sorted streams; attribute each event to the step whose
 * compute ends at or after it.  Fills the steps' bytes, each action's
 * resident bytes and the peak; returns the peak's position in the merge. */
static uint32_t sim_curve(struct sim_state *S)
{
	struct mp_sim *out = S->out;
	struct merge m;
	struct event ev, next;
	const struct event *e = &ev;
	uint32_t cur = 0, ord = 0, peak_ord = 0;
	int64_t res = 0;
	int32_t live = 0;
	int cur_seen = 0, any = 0, more;

	merge_init(&m, S->net, S->s, &S->hs, &S->ds);
	more = merge_next(&m, &next);
	while (more) {
		ev = next;
		more = merge_next(&m, &next);
		res += e->delta;
		live += e->dlive;
		MP_ASSERT(res >= 0 && live >= 0);
		S->s->a[e->seq / 2].resident_bytes = (uint64_t)res;
		/* a step's memory: the most resident after anything that
		 * allocates or starts an op inside it, and what is held
		 * between instants (through a stall, say); not the moments
		 * between several frees at one instant, which would depend on
		 * the order they are listed in */
		if ((e->delta > 0 || (e->delta == 0 && e->step < 0) || !more || next.t != e->t) &&
		    (!cur_seen || (uint64_t)res > out->steps[cur].bytes)) {
			out->steps[cur].bytes = (uint64_t)res;
			out->steps[cur].live = (uint32_t)live;
			cur_seen = 1;
		}
		if (!any || (uint64_t)res > out->peak_bytes) {
			out->peak_bytes = (uint64_t)res;
			out->peak_step = cur;
			out->live_at_peak = (uint32_t)live;
			out->peak_action = e->seq / 2;
			peak_ord = ord;
			any = 1;
		}
		ord++;
		if (e->step >= 0 && cur + 1 < S->step) {
			cur++;
			cur_seen = 0;
		}
	}
	merge_release(&m);
	return peak_ord;
}

/* Replay the merge up to event peak_ord to name the tensors resident there. */
static void sim_peak_tensors(struct sim_state *S, uint32_t peak_ord)
{
	struct mp_sim *out = S->out;
	struct merge m;
	struct event e;
	uint8_t *in = mp_xcalloc(S->net->n_tensors, 1);

	merge_init(&m, S->net, S->s, &S->hs, &S->ds);
	for (uint32_t k = 0; k <= peak_ord && merge_next(&m, &e); k++)
		if (e.tensor >= 0)
			in[e.tensor] = e.dlive > 0;
	merge_release(&m);
	out->peak_tensors = mp_xmalloc((out->live_at_peak + 1) * sizeof(int32_t));
	for (uint32_t t = 0; t < S->net->n_tensors; t++)
		if (in[t] && out->n_peak_tensors < out->live_at_peak)
			out->peak_tensors[out->n_peak_tensors++] = (int32_t)t;
	free(in);
}

int sim_run(const struct mp_net *net, const struct mp_device *dev,
	    struct mp_schedule *s, struct mp_sim *out, struct mp_error *err)
{
	struct sim_state S;
	int rc = -1;

	sim_state_init(&S, net, dev, s, out, err);
	for (uint32_t i = 0; i < s->n; i++)
		if (sim_action(&S, i) < 0)
			goto out;
	if (sim_check_end(&S) < 0)
		goto out;
	out->n_steps = S.step;
	out->time_ms = fmax(S.tc, fmax(S.th, S.td));
	out->tail_ms = out->time_ms - S.tc;
	sim_peak_tensors(&S, sim_curve(&S));
	rc = 0;
out:
	sim_state_release(&S);
	if (rc < 0)
		sim_release(out);
	return rc;
}

void sim_release(struct mp_sim *sim)
{
	free(sim->steps);
	free(sim->peak_tensors);
	memset(sim, 0, sizeof(*sim));
}

