/*
 * Event simulation of a Schedule (DESIGN.md "Simulator"; TENSILE IV-B Alg. 1
 * generalised to three engines).  One pass issues actions in program order on
 * their engines; memory events are produced in three streams (compute-ordered,
 * h2d, d2h), each already sorted by time, and merged: O(actions).
 */
#include "sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { ST_ABSENT, ST_RESIDENT, ST_IN_FLIGHT, ST_HOST };

struct event {
	double t;
	uint32_t seq;     /* action index * 2 + sub: program order at equal time */
	int64_t delta;    /* bytes */
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
	s->ev[s->n++] = (struct event){ t, seq, delta, dlive, step, tensor };
}

static int before(const struct event *a, const struct event *b)
{
	return a->t < b->t || (a->t == b->t && a->seq < b->seq);
}

/* Three-way merge of streams each sorted by (time, seq). */
struct merge {
	struct stream *s[3];
	uint32_t i[3];
};

static const struct event *merge_next(struct merge *m)
{
	int best = -1;

	for (int k = 0; k < 3; k++)
		if (m->i[k] < m->s[k]->n &&
		    (best < 0 || before(&m->s[k]->ev[m->i[k]], &m->s[best]->ev[m->i[best]])))
			best = k;
	return best < 0 ? NULL : &m->s[best]->ev[m->i[best]++];
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

int sim_run(const struct mp_net *net, const struct mp_device *dev,
	    struct mp_schedule *s, struct mp_sim *out, struct mp_error *err)
{
	uint32_t nt = net->n_tensors;
	uint8_t *swapped_once = mp_xcalloc(nt, 1);
	/* valid[t]: t holds data (written since its allocation, or resident
	 * from before the iteration); host_valid[t]: the host copy does */
	uint8_t *valid = mp_xcalloc(nt, 1), *host_valid = mp_xcalloc(nt, 1);
	/* Versions, as op + 1 (0: none, or contents from before the
	 * iteration): origw[t] the last compute (not recompute) to write t,
	 * curw[t] the writer of the bytes t holds now, hostw[t] of its host
	 * copy; readw[in_at[o] + k] what op o's input k held when o was first
	 * computed.  A compute must read what the program order left (origw), a
	 * recompute what its first run read: rebuilding the wrong version (a
	 * batch norm's output without the in-place relu that overwrote it) is
	 * an error here, not silent. */
	int32_t *origw = mp_xcalloc(nt, sizeof(*origw)), *curw = mp_xcalloc(nt, sizeof(*curw));
	int32_t *hostw = mp_xcalloc(nt, sizeof(*hostw));
	uint32_t *in_at = mp_xmalloc(((size_t)net->n_ops + 1) * sizeof(*in_at));
	int32_t *readw;
	uint8_t *st = mp_xcalloc(nt, 1), *done = mp_xcalloc(net->n_ops ? net->n_ops : 1, 1);
	double *ready = mp_xcalloc(nt, sizeof(*ready));   /* device data ready */
	double *host_ready = mp_xcalloc(nt, sizeof(*host_ready));
	uint64_t *held = mp_xcalloc(nt, sizeof(*held));   /* bytes reserved */
	struct stream cs = { 0 }, hs = { 0 }, ds = { 0 };
	double tc = 0, th = 0, td = 0;
	uint32_t step = 0;
	char lab[300];
	int rc = -1;

	in_at[0] = 0;
	for (uint32_t o = 0; o < net->n_ops; o++)
		in_at[o + 1] = in_at[o] + net->ops[o].n_in;
	readw = mp_xcalloc((size_t)in_at[net->n_ops] + 1, sizeof(*readw));
	memset(out, 0, sizeof(*out));
	out->steps = mp_xcalloc(net->n_ops ? net->n_ops : 1, sizeof(*out->steps));
	for (uint32_t i = 0; i < s->n; i++) {
		struct mp_action *a = &s->a[i];
		int32_t t = a->tensor;

		if ((a->op >= 0 && (uint32_t)a->op >= net->n_ops) ||
		    (a->op < 0 && (t < 0 || (uint32_t)t >= nt))) {
			mp_error_set(err, "schedule[%u] %s: no such op or tensor", i, mp_act_name(a->kind));
			goto out;
		}
		switch (a->kind) {
		case MP_ACT_COMPUTE:
		case MP_ACT_RECOMPUTE: {
			const struct mp_op *op = &net->ops[a->op];
			uint64_t ws;
			double ms;

			if (a->algo >= (int32_t)op->n_algos || a->micro < 1 ||
			    (a->micro > 1 && (uint64_t)a->micro_at + a->micro > s->n_micro)) {
				mp_error_set(err, "schedule[%u] %s: bad algorithm or micro-batch count", i, act_label(net, a, lab, sizeof(lab)));
				goto out;
			}
			for (uint32_t k = 0; k < op->n_in; k++) {
				int32_t x = op->in[k];

				if (st[x] != ST_RESIDENT) {
					mp_error_set(err, "schedule[%u] %s: reads '%s', which %s", i, act_label(net, a, lab, sizeof(lab)),
						     net->tensors[x].name,
						     st[x] == ST_IN_FLIGHT ? "is still being swapped in (no wait)" :
						     st[x] == ST_HOST ? "is swapped out" : "is not resident");
					goto out;
				}
				if (!valid[x]) {
					mp_error_set(err, "schedule[%u] %s: reads '%s', which nothing has written since its allocation",
						     i, act_label(net, a, lab, sizeof(lab)), net->tensors[x].name);
					goto out;
				}
				{
					int32_t *seen = &readw[in_at[a->op] + k];
					int32_t want = a->kind == MP_ACT_RECOMPUTE && done[a->op] ? *seen : origw[x];

					if (curw[x] != want) {
						char got[160], exp[160];

						version_name(net, curw[x], got, sizeof(got));
						version_name(net, want, exp, sizeof(exp));
						mp_error_set(err, "schedule[%u] %s: reads '%s' as %s left it, not as %s did", i,
							     act_label(net, a, lab, sizeof(lab)), net->tensors[x].name, got, exp);
						goto out;
					}
					if (a->kind == MP_ACT_COMPUTE)
						*seen = curw[x];
				}
			}
			for (uint32_t k = 0; k < op->n_out; k++) {
				int32_t x = op->out[k];

				if (st[x] != ST_RESIDENT) {
					mp_error_set(err, "schedule[%u] %s: writes '%s', which is not allocated", i,
						     act_label(net, a, lab, sizeof(lab)), net->tensors[x].name);
					goto out;
				}
				/* gradients of a tensor read by several layers add up
				 * in one buffer (memplan-net(5)): a later writer adds
				 * to what the earlier ones left, which must be there */
				if (net->tensors[x].kind == MP_TK_GRADIENT && origw[x] && origw[x] - 1 != a->op &&
				    !valid[x]) {
					mp_error_set(err, "schedule[%u] %s: adds to '%s', whose sum so far ('%s' wrote it) was freed since",
						     i, act_label(net, a, lab, sizeof(lab)), net->tensors[x].name,
						     net->ops[origw[x] - 1].name);
					goto out;
				}
			}
			sched_action_cost(net, s, a, &ms, &ws);
			if (a->micro > 1) {
				uint32_t sum = 0;

				for (uint32_t k = 0; k < a->micro; k++) {
					const struct mp_micro *m = &s->micro[a->micro_at + k];

					if (m->algo >= (int32_t)op->n_algos || m->batch == 0) {
						mp_error_set(err, "schedule[%u] %s: bad micro-batch", i, act_label(net, a, lab, sizeof(lab)));
						goto out;
					}
					sum += m->batch;
				}
				if (sum != op->batch) {
					mp_error_set(err, "schedule[%u] %s: micro-batches sum to %u, not the batch %u", i,
						     act_label(net, a, lab, sizeof(lab)), sum, op->batch);
					goto out;
				}
			}
			if (ws > 0 && (op->ws < 0 || st[op->ws] != ST_RESIDENT || held[op->ws] < ws)) {
				mp_error_set(err, "schedule[%u] %s: its workspace '%s' is not allocated", i,
					     act_label(net, a, lab, sizeof(lab)), op->ws >= 0 ? net->tensors[op->ws].name : "(none)");
				goto out;
			}
			if (a->kind == MP_ACT_COMPUTE) {
				if (done[a->op]) {
					mp_error_set(err, "schedule[%u] %s: op computed twice (use recompute)", i, act_label(net, a, lab, sizeof(lab)));
					goto out;
				}
				done[a->op] = 1;
			} else if (!op->recomputable) {
				mp_error_set(err, "schedule[%u] %s: op cannot be recomputed", i, act_label(net, a, lab, sizeof(lab)));
				goto out;
			}
			a->start_ms = tc;
			a->end_ms = tc + ms;
			tc = a->end_ms;
			for (uint32_t k = 0; k < op->n_out; k++) {
				ready[op->out[k]] = tc;
				valid[op->out[k]] = 1;
				curw[op->out[k]] = a->op + 1;
				if (a->kind == MP_ACT_COMPUTE)
					origw[op->out[k]] = a->op + 1;
			}
			emit(&cs, a->start_ms, 2 * i, 0, 0, -1, -1);
			if (a->kind == MP_ACT_COMPUTE) {
				out->steps[step].op = a->op;
				emit(&cs, a->end_ms, 2 * i + 1, 0, 0, (int32_t)step++, -1);
				out->compute_ms += ms;
			} else {
				emit(&cs, a->end_ms, 2 * i + 1, 0, 0, -1, -1);
				out->recompute_ms += ms;
				out->n_recompute++;
			}
			break;
		}
		case MP_ACT_ALLOC:
			if (st[t] != ST_ABSENT) {
				mp_error_set(err, "schedule[%u] %s: already %s", i, act_label(net, a, lab, sizeof(lab)),
					     st[t] == ST_HOST ? "on the host (swap it in)" : "allocated");
				goto out;
			}
			st[t] = ST_RESIDENT;
			held[t] = a->bytes;
			/* resident from before the iteration: parameters, state, inputs */
			valid[t] = sched_persistent(&net->tensors[t]);
			if (!valid[t])
				curw[t] = 0;
			a->start_ms = a->end_ms = tc;
			emit(&cs, tc, 2 * i, (int64_t)a->bytes, 1, -1, t);
			break;
		case MP_ACT_FREE:
			if (st[t] != ST_RESIDENT) {
				mp_error_set(err, "schedule[%u] %s: not resident%s", i, act_label(net, a, lab, sizeof(lab)),
					     st[t] == ST_IN_FLIGHT ? " (its swap-in was never waited for)" : "");
				goto out;
			}
			st[t] = ST_ABSENT;
			a->start_ms = a->end_ms = tc;
			emit(&cs, tc, 2 * i, -(int64_t)held[t], -1, -1, t);
			held[t] = 0;
			break;
		case MP_ACT_SWAP_OUT:
			if (st[t] != ST_RESIDENT) {
				mp_error_set(err, "schedule[%u] %s: not resident", i, act_label(net, a, lab, sizeof(lab)));
				goto out;
			}
			a->start_ms = fmax(fmax(td, tc), ready[t]);
			a->end_ms = a->start_ms + device_copy_ms(dev, net->tensors[t].bytes, false);
			td = a->end_ms;
			host_ready[t] = a->end_ms;
			st[t] = ST_HOST;
			host_valid[t] = valid[t];
			hostw[t] = curw[t];
			valid[t] = 0;
			swapped_once[t] = 1;
			out->d2h_bytes += net->tensors[t].bytes;
			out->n_swap_out++;
			emit(&ds, a->end_ms, 2 * i, -(int64_t)held[t], -1, -1, t);
			held[t] = 0;
			break;
		case MP_ACT_SWAP_IN:
			/* parameters and optimizer state may live on the host between
			 * iterations (TENSILE): their first swap-in needs no swap-out */
			if (st[t] == ST_ABSENT && sched_persistent(&net->tensors[t]) && !swapped_once[t]) {
				st[t] = ST_HOST;
				host_valid[t] = 1; /* lives on the host between iterations */
			}
			if (st[t] != ST_HOST) {
				mp_error_set(err, "schedule[%u] %s: %s", i, act_label(net, a, lab, sizeof(lab)),
					     st[t] == ST_ABSENT ? "was never swapped out" : "is already on the device");
				goto out;
			}
			a->start_ms = fmax(fmax(th, tc), host_ready[t]);
			a->end_ms = a->start_ms + device_copy_ms(dev, net->tensors[t].bytes, true);
			th = a->end_ms;
			ready[t] = a->end_ms;
			st[t] = ST_IN_FLIGHT;
			valid[t] = host_valid[t];
			curw[t] = hostw[t];
			held[t] = net->tensors[t].bytes;
			out->h2d_bytes += held[t];
			out->n_swap_in++;
			emit(&hs, a->start_ms, 2 * i, (int64_t)held[t], 1, -1, t);
			break;
		case MP_ACT_WAIT:
			if (st[t] == ST_IN_FLIGHT) {
				if (ready[t] > tc) {
					out->stall_ms += ready[t] - tc;
					tc = ready[t];
				}
				st[t] = ST_RESIDENT;
			} else if (st[t] == ST_HOST && swapped_once[t]) {
				/* compute waits for the swap-out's copy: its memory
				 * is free from then on */
				if (host_ready[t] > tc) {
					out->stall_ms += host_ready[t] - tc;
					tc = host_ready[t];
				}
			} else if (st[t] != ST_RESIDENT) {
				mp_error_set(err, "schedule[%u] %s: nothing to wait for", i, act_label(net, a, lab, sizeof(lab)));
				goto out;
			}
			a->start_ms = a->end_ms = tc;
			emit(&cs, tc, 2 * i, 0, 0, -1, -1);
			break;
		}
	}
	if (step != net->n_ops) {
		for (uint32_t o = 0; o < net->n_ops; o++)
			if (!done[o]) {
				mp_error_set(err, "schedule: op '%s' is never computed", net->ops[o].name);
				break;
			}
		goto out;
	}
	/* the steady state: what the iteration made, it gives back, or the
	 * next iteration (which makes it again) leaks it */
	for (uint32_t t = 0; t < nt; t++)
		if (st[t] != ST_ABSENT && !sched_persistent(&net->tensors[t])) {
			uint32_t i = s->n;

			while (i-- > 0 && s->a[i].tensor != (int32_t)t)
				;
			mp_error_set(err, "schedule[%u] %s: %s at the end of the iteration, and the next one makes it "
				     "again: a leak on every iteration (%s)", i, act_label(net, &s->a[i], lab, sizeof(lab)),
				     st[t] == ST_HOST ? "swapped out and never back in: its host copy outlives it"
						      : "still on the device",
				     st[t] == ST_HOST ? "free it instead of swapping it out" : "free it after its last reader");
			goto out;
		}
	out->n_steps = step;
	out->time_ms = fmax(tc, fmax(th, td));
	/* merge the three sorted streams; attribute each event to the step whose
	 * compute ends at or after it */
	{
		struct merge m = { { &cs, &hs, &ds }, { 0, 0, 0 } };
		const struct event *e;
		uint32_t cur = 0, ord = 0, peak_ord = 0;
		int64_t res = 0;
		int32_t live = 0;
		int cur_seen = 0, any = 0;

		const struct event *next = merge_next(&m);

		while ((e = next)) {
			next = merge_next(&m);
			res += e->delta;
			live += e->dlive;
			MP_ASSERT(res >= 0 && live >= 0);
			s->a[e->seq / 2].resident_bytes = (uint64_t)res;
			/* a step's memory: the most resident after anything that
			 * allocates or starts an op inside it, and what is held
			 * between instants (through a stall, say); not the moments
			 * between several frees at one instant, which would depend on
			 * the order they are listed in */
			if ((e->delta > 0 || (e->delta == 0 && e->step < 0) || !next || next->t != e->t) &&
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
			if (e->step >= 0 && cur + 1 < step) {
				cur++;
				cur_seen = 0;
			}
		}
		/* replay to the peak to name the tensors resident there */
		{
			uint8_t *in = mp_xcalloc(nt, 1);

			m = (struct merge){ { &cs, &hs, &ds }, { 0, 0, 0 } };
			for (uint32_t k = 0; k <= peak_ord && (e = merge_next(&m)); k++)
				if (e->tensor >= 0)
					in[e->tensor] = e->dlive > 0;
			out->peak_tensors = mp_xmalloc((out->live_at_peak + 1) * sizeof(int32_t));
			for (uint32_t t = 0; t < nt; t++)
				if (in[t] && out->n_peak_tensors < out->live_at_peak)
					out->peak_tensors[out->n_peak_tensors++] = (int32_t)t;
			free(in);
		}
	}
	rc = 0;
out:
	free(valid);
	free(host_valid);
	free(origw);
	free(curw);
	free(hostw);
	free(in_at);
	free(readw);
	free(swapped_once);
	free(st);
	free(done);
	free(ready);
	free(host_ready);
	free(held);
	free(cs.ev);
	free(hs.ev);
	free(ds.ev);
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

