/*
 * Fixed strategies (SuperNeurons 3.2-3.4) as schedules.  baseline and liveness
 * are direct; offload and recompute choose swaps and recompute entries, then
 * the generic emitter (sched.c) derives every alloc and free.  Cost-aware
 * recomputation: per segment between checkpoints, speed-centric when its
 * memory stays under l_peak, memory-centric otherwise.  O(n) in ops and tensor
 * uses, plus the recompute entries emitted.
 */
#include "policy.h"

#include <stdlib.h>
#include <string.h>

/* Memory-centric recomputation re-runs a segment for each of its backward
 * ops: quadratic in its length.  A segment longer than this many forward ops
 * (a net without checkpoint layers: transformers, LSTMs, MLPs) ends at the
 * next cut of the forward graph instead, so analysis stays near-linear. */
#define POLICY_MAX_SEGMENT 16

static const char *const strat_names[MP_STRAT__COUNT] = {
	"baseline", "liveness", "offload", "recompute",
};

const char *mp_strategy_name(enum mp_strategy s)
{
	return s < MP_STRAT__COUNT ? strat_names[s] : "?";
}

int mp_strategy_parse(const char *s)
{
	for (int i = 0; i < MP_STRAT__COUNT; i++)
		if (!strcmp(s, strat_names[i]))
			return i;
	return -1;
}

void policy_opts_default(struct mp_policy_opts *o)
{
	o->checkpoints = 1u << MP_L_CONV;
	o->loose_rebuild = false;
}

uint64_t policy_op_bytes(const struct mp_net *net, int32_t o)
{
	const struct mp_op *op = &net->ops[o];
	uint64_t b = 0, ws = sched_ws_bytes(net, o, -1);

	for (uint32_t k = 0; k < op->n_in; k++)
		b += net->tensors[op->in[k]].bytes;
	for (uint32_t k = 0; k < op->n_out; k++) {
		int32_t t = op->out[k];
		int also_in = 0;

		for (uint32_t j = 0; j < op->n_in; j++)
			also_in |= op->in[j] == t;
		if (!also_in)
			b += net->tensors[t].bytes;
	}
	for (uint32_t a = 0; a < op->n_algos; a++)
		if (op->algos[a].workspace_bytes < ws)
			ws = op->algos[a].workspace_bytes;
	return b + ws;
}

void policy_layer_min(const struct mp_net *net, const struct mp_route *r,
		      struct mp_layer_min *out)
{
	memset(out, 0, sizeof(*out));
	out->op = r->n ? r->op[0] : -1;
	for (uint32_t i = 0; i < r->n; i++) {
		uint64_t b = policy_op_bytes(net, r->op[i]);

		if (b > out->bytes) {
			out->bytes = b;
			out->step = i;
			out->op = r->op[i];
		}
	}
}

static void build_baseline(const struct mp_net *net, const struct mp_route *r,
			   struct mp_schedule *out)
{
	for (uint32_t t = 0; t < net->n_tensors; t++)
		sched_push(out, MP_ACT_ALLOC, -1, (int32_t)t, net->tensors[t].bytes);
	for (uint32_t i = 0; i < r->n; i++)
		sched_push(out, MP_ACT_COMPUTE, r->op[i], -1, 0);
	sched_close(net, out);
}

static uint32_t checkpoint_swaps(const struct mp_net *net, const struct mp_policy_opts *o,
				 const struct mp_entry *e, uint32_t n_e, uint32_t bwd,
				 struct mp_swap **swaps);

int policy_is_checkpoint(const struct mp_net *net, const struct mp_policy_opts *o, int32_t op)
{
	return op >= 0 && (o->checkpoints >> net->ops[op].type) & 1;
}

static int is_checkpoint(const struct mp_net *net, const struct mp_policy_opts *o, int32_t op)
{
	return op >= 0 && (o->checkpoints >> net->ops[op].type) & 1;
}

/* Is tensor t swappable under the checkpoint rule: written in forward by a
 * checkpoint op, not resident for the whole iteration. */
static int ckpt_tensor(const struct mp_net *net, const struct mp_policy_opts *o, int32_t t)
{
	const struct mp_tensor *x = &net->tensors[t];

	return !sched_persistent(x) && x->kind != MP_TK_WORKSPACE &&
	       net->ops[x->producer].phase == MP_PHASE_FWD && is_checkpoint(net, o, x->producer);
}

/*
 * Swaps for checkpoint tensors on a compute sequence whose backward begins at
 * entry bwd: out after the last forward touch, in at the last checkpoint
 * backward entry before the first backward touch (one checkpoint ahead), wait
 * before that touch.  Returns the count; *swaps is malloc'd.
 */
uint32_t policy_checkpoint_swaps(const struct mp_net *net, const struct mp_policy_opts *o,
				 const struct mp_entry *e, uint32_t n_e, uint32_t bwd,
				 struct mp_swap **swaps)
{
	return checkpoint_swaps(net, o, e, n_e, bwd, swaps);
}

static uint32_t checkpoint_swaps(const struct mp_net *net, const struct mp_policy_opts *o,
				 const struct mp_entry *e, uint32_t n_e, uint32_t bwd,
				 struct mp_swap **swaps)
{
	uint32_t nt = net->n_tensors, n = 0;
	int64_t *last_fwd = mp_xmalloc(nt * sizeof(*last_fwd)), *first_bwd = mp_xmalloc(nt * sizeof(*first_bwd));
	int64_t *prev_ckpt = mp_xmalloc((n_e + 1) * sizeof(*prev_ckpt));

	for (uint32_t t = 0; t < nt; t++)
		last_fwd[t] = first_bwd[t] = -1;
	for (uint32_t i = 0; i < n_e; i++) {
		const struct mp_op *op = &net->ops[e[i].op];

		for (int pass = 0; pass < 2; pass++)
			for (uint32_t k = 0; k < (pass ? op->n_out : op->n_in); k++) {
				int32_t t = pass ? op->out[k] : op->in[k];

				if (i < bwd)
					last_fwd[t] = i;
				else if (first_bwd[t] < 0)
					first_bwd[t] = i;
			}
	}
	/* prev_ckpt[i]: latest checkpoint backward entry strictly before i */
	prev_ckpt[bwd < n_e ? bwd : n_e] = -1;
	for (uint32_t i = bwd; i < n_e; i++)
		prev_ckpt[i + 1] = (!e[i].recompute && net->ops[e[i].op].phase == MP_PHASE_BWD &&
				    is_checkpoint(net, o, net->ops[e[i].op].fwd)) ? (int64_t)i : prev_ckpt[i];
	*swaps = mp_xmalloc((nt + 1) * sizeof(**swaps));
	for (uint32_t t = 0; t < nt; t++) {
		int64_t a = last_fwd[t], u = first_bwd[t], p;

		if (a < 0 || u < 0 || !ckpt_tensor(net, o, (int32_t)t))
			continue;
		p = prev_ckpt[u];
		if (p < (int64_t)bwd)
			p = bwd;
		(*swaps)[n++] = (struct mp_swap){ (int32_t)t, (uint32_t)a, (uint32_t)p, (uint32_t)u, 0 };
	}
	free(last_fwd);
	free(first_bwd);
	free(prev_ckpt);
	return n;
}

static struct mp_entry *route_entries(const struct mp_route *r, uint32_t extra)
{
	struct mp_entry *e = mp_xmalloc((r->n + extra + 1) * sizeof(*e));

	for (uint32_t i = 0; i < r->n; i++)
		e[i] = (struct mp_entry){ r->op[i], false, -1 };
	return e;
}

void policy_writers_build(const struct mp_net *net, const struct mp_route *r, struct mp_writers *w)
{
	uint32_t nt = net->n_tensors, *fill;

	w->start = mp_xcalloc(nt + 2, sizeof(*w->start));
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_out; k++)
			w->start[op->out[k] + 1]++;
	}
	for (uint32_t t = 0; t < nt; t++)
		w->start[t + 1] += w->start[t];
	w->list = mp_xmalloc((w->start[nt] + 1) * sizeof(*w->list));
	fill = mp_xcalloc(nt + 1, sizeof(*fill));
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t t = op->out[k];

			w->list[w->start[t] + fill[t]++] = (uint32_t)r->op[i];
		}
	}
	free(fill);
}

struct rc_frame {
	int32_t t;
	uint32_t wi, ki;
};

struct rc_state {
	const struct mp_net *net;
	struct mp_writers w;
	uint8_t *dropped, *avail, *temp, *on_stack;
	uint8_t *cut_kept;     /* [nt] cuts that end an over-long segment */
	uint32_t max_e;        /* stop past this many entries (0: no limit) */
	const uint8_t *keep;   /* the caller's keep set: each rebuilt tensor's own
				* flag says whether it is dropped after the reader */
	const uint32_t *keep_from; /* [nt] or NULL: a kept tensor is kept only when
				    * rebuilt for a reader at this route step or
				    * later, and dropped after readers before it */
	uint32_t step;         /* route step of the backward op being served */
	int32_t *tmp_list;
	uint32_t n_tmp;
	struct mp_entry *e;
	uint32_t n_e, cap_e;
	struct rc_frame *stack;
};

static void push_entry(struct rc_state *S, int32_t op, bool re)
{
	mp_grow((void **)&S->e, &S->cap_e, S->n_e + 1, sizeof(*S->e));
	S->e[S->n_e++] = (struct mp_entry){ op, re, -1 };
}

/* Must input x of a writer of t be rebuilt first? */
static bool needs_rebuild(const struct rc_state *S, int32_t x, int32_t t)
{
	return x != t && S->dropped[x] && !S->avail[x] && !S->on_stack[x];
}

/* The last forward op to write y (its final version's writer). */
static uint32_t last_writer(const struct rc_state *S, int32_t y)
{
	return S->w.list[S->w.start[y + 1] - 1];
}

/* Recompute dropped tensor t and what it needs (post-order, iterative). */
static void ensure(struct rc_state *S, int32_t target, bool temporary)
{
	const struct mp_net *net = S->net;
	uint32_t sp = 0;

	if (S->avail[target])
		return;
	S->stack[sp++] = (struct rc_frame){ target, 0, 0 };
	S->on_stack[target] = 1;
	while (sp) {
		struct rc_frame *f = &S->stack[sp - 1];
		int32_t t = f->t;

		if (S->avail[t] || f->wi == S->w.start[t + 1] - S->w.start[t]) {
			S->on_stack[t] = 0;
			sp--;
			continue;
		}
		const uint32_t oi = S->w.list[S->w.start[t] + f->wi];
		const struct mp_op *op = &net->ops[oi];
		int pushed = 0;

		while (f->ki < op->n_in) {
			int32_t x = op->in[f->ki++];

			if (needs_rebuild(S, x, t)) {
				S->on_stack[x] = 1;
				S->stack[sp++] = (struct rc_frame){ x, 0, 0 };
				pushed = 1;
				break;
			}
		}
		if (pushed)
			continue;
		/* rebuilding a later input may have re-run the writer of an
		 * earlier one (below): look again before op runs */
		for (uint32_t k = 0; k < op->n_in && !pushed; k++)
			if (needs_rebuild(S, op->in[k], t)) {
				f->ki = 0;
				pushed = 1;
			}
		if (pushed)
			continue;
		push_entry(S, (int32_t)oi, true);
		/* re-running op overwrites its outputs: one that a later forward
		 * op updates in place (a batch norm's output after its relu) now
		 * holds op's version, and is rebuilt again when next read; one
		 * op writes last is back, t once its last writer re-ran, and a
		 * sibling at once (a dropout's mask, re-run on the way to the
		 * output the relu after it updates: not re-run again for the
		 * mask) */
		for (uint32_t k = 0; k < op->n_out; k++) {
			int32_t y = op->out[k];

			if (last_writer(S, y) != oi) {
				S->avail[y] = 0;
			} else if (S->dropped[y] && !S->avail[y]) {
				S->avail[y] = 1;
				if ((S->keep ? !S->keep[y] || (S->keep_from && S->step < S->keep_from[y]) : temporary) &&
				    !S->temp[y]) {
					S->temp[y] = 1;
					S->tmp_list[S->n_tmp++] = y;
				}
			}
		}
		f->wi++;
		f->ki = 0;
	}
}

/* Segments of the forward ops, each with its recomputation mode. */
struct rc_segs {
	uint32_t n;
	uint32_t *of_op;       /* [n_ops] segment of each forward op */
	uint32_t *start;       /* [n + 1] each segment's forward ops in ops (CSR) */
	uint32_t *ops;         /* [n_fwd] in route order */
	uint8_t *speed;        /* [n] speed-centric, else memory-centric */
};

/* Segments: forward ops between consecutive checkpoints, and (cut) a segment
 * longer than POLICY_MAX_SEGMENT ends at the next cut of the forward graph,
 * which is kept as a checkpoint's output is (never dropped: S->cut_kept). */
static void rc_segments(struct rc_state *S, const struct mp_route *r, const struct mp_policy_opts *o,
			bool cut, struct rc_segs *G)
{
	const struct mp_net *net = S->net;
	uint32_t *at = mp_xmalloc((r->n_fwd + 1) * sizeof(*at)), nb, b = 0, len = 0, *f;
	int32_t *in = mp_xmalloc((2 * r->n_fwd + 2) * sizeof(*in));

	G->of_op = mp_xcalloc(net->n_ops + 1, sizeof(*G->of_op));
	nb = cut ? route_bounds(net, r, 1, at, in) : 0;
	G->n = 0;
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		if (is_checkpoint(net, o, r->op[i])) {
			G->n++;
			len = 0;
		}
		G->of_op[r->op[i]] = G->n;
		len++;
		while (b < nb && at[b] < i)
			b++;
		if (b < nb && at[b] == i && len >= POLICY_MAX_SEGMENT) {
			S->cut_kept[in[2 * b]] = 1;
			G->n++;
			len = 0;
		}
	}
	free(at);
	free(in);
	G->n++;
	G->start = mp_xcalloc(G->n + 2, sizeof(*G->start));
	G->ops = mp_xmalloc((r->n_fwd + 1) * sizeof(*G->ops));
	for (uint32_t i = 0; i < r->n_fwd; i++)
		G->start[G->of_op[r->op[i]] + 1]++;
	for (uint32_t sg = 0; sg < G->n; sg++)
		G->start[sg + 1] += G->start[sg];
	f = mp_xcalloc(G->n + 1, sizeof(*f));
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		uint32_t sg = G->of_op[r->op[i]];

		G->ops[G->start[sg] + f[sg]++] = (uint32_t)r->op[i];
	}
	free(f);
}

/* May t, written by forward step i, be dropped (SuperNeurons' rule, see
 * rc_decide_dropped)?  need and interval as there. */
static int rc_droppable(const struct rc_state *S, const struct mp_policy_opts *o, const struct mp_route *r,
			uint32_t i, int32_t t, const uint32_t *need, const uint32_t *interval,
			struct mp_recompute_info *info)
{
	const struct mp_net *net = S->net;
	const struct mp_tensor *x = &net->tensors[t];
	int ok = need[t] != UINT32_MAX && !S->dropped[t] && !S->cut_kept[t] && x->kind == MP_TK_ACTIVATION &&
		 !sched_persistent(x) && S->w.list[S->w.start[t]] == (uint32_t)r->op[i];

	for (uint32_t j = S->w.start[t]; ok && j < S->w.start[t + 1]; j++) {
		const struct mp_op *wop = &net->ops[S->w.list[j]];

		ok = wop->recomputable && !is_checkpoint(net, o, (int32_t)S->w.list[j]);
		for (uint32_t k = 0; ok && k < wop->n_in; k++) {
			int32_t in = wop->in[k];
			int moved = S->dropped[in] || ckpt_tensor(net, o, in);

			if (in == t || sched_persistent(&net->tensors[in]))
				continue;
			/* the input must be kept for backward anyway, and
			 * if it is itself moved (offloaded or rebuilt),
			 * needed in the same checkpoint interval */
			ok = need[in] != UINT32_MAX &&
			     (!moved || o->loose_rebuild ||
			      interval[need[in]] == interval[need[t]]);
			if (!ok && need[in] != UINT32_MAX && info)
				info->rule_blocked++;
		}
	}
	/* rebuilding re-runs the writers whole: it must not overwrite
	 * another of their outputs that a later forward op updates in
	 * place, unless that one is rebuilt too (a dropout's mask under
	 * the relu that updates its output: re-running the dropout would
	 * apply it again) */
	for (uint32_t j = S->w.start[t]; ok && j < S->w.start[t + 1]; j++) {
		const struct mp_op *wop = &net->ops[S->w.list[j]];

		for (uint32_t k = 0; ok && k < wop->n_out; k++) {
			int32_t y = wop->out[k];

			ok = y == t || S->dropped[y] || last_writer(S, y) == S->w.list[j];
		}
	}
	/* and it must not
	 * materialise more than it rebuilds (a dead-end batch
	 * norm's large output for its small statistics) */
	for (uint32_t j = S->w.start[t]; ok && j < S->w.start[t + 1]; j++) {
		const struct mp_op *wop = &net->ops[S->w.list[j]];
		uint64_t extra = 0;

		for (uint32_t k = 0; k < wop->n_out; k++)
			if (wop->out[k] != t && !S->dropped[wop->out[k]])
				extra += net->tensors[wop->out[k]].bytes;
		ok = extra <= x->bytes;
	}
	return ok;
}

/* dropped: saved for backward, written in forward only by recomputable,
 * non-checkpoint ops whose inputs are themselves dropped, resident, or
 * saved for backward anyway.  Rebuilding a tensor from an input that
 * would otherwise be dead by then only trades one tensor for another
 * (a non-in-place relu after a conv), so such tensors are kept.  One pass
 * in forward order decides, as inputs come before outputs. */
static void rc_decide_dropped(struct rc_state *S, const struct mp_route *r, const struct mp_policy_opts *o,
			      struct mp_recompute_info *info)
{
	const struct mp_net *net = S->net;
	uint32_t nt = net->n_tensors;
	/* need[t]: first backward step reading t; interval[step]: the
	 * number of checkpoint backward ops before it.  An offloaded input
	 * is prefetched at the checkpoint before its first use, so
	 * rebuilding t from it costs no extra residency only when both
	 * first uses fall between the same two checkpoints. */
	uint32_t *need = mp_xmalloc((nt + 1) * sizeof(*need));
	uint32_t *interval = mp_xcalloc(r->n + 1, sizeof(*interval));

	for (uint32_t t = 0; t < nt; t++)
		need[t] = UINT32_MAX;
	for (uint32_t i = r->n_fwd; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		interval[i + 1] = interval[i] + (op->phase == MP_PHASE_BWD && is_checkpoint(net, o, op->fwd));
		for (uint32_t k = 0; k < op->n_in; k++)
			if (need[op->in[k]] == UINT32_MAX)
				need[op->in[k]] = i;
	}
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *fop = &net->ops[r->op[i]];

		for (uint32_t m = 0; m < fop->n_out; m++)
			if (rc_droppable(S, o, r, i, fop->out[m], need, interval, info))
				S->dropped[fop->out[m]] = 1;
	}
	free(need);
	free(interval);
}

/* Cost-aware choice per segment: sum of its dropped tensors plus the
 * largest backward op of the segment, against l_peak (SuperNeurons 3.4).
 * With the caller's keep set (keep_in) every segment stays memory-centric. */
static void rc_segment_modes(const struct rc_state *S, const struct mp_route *r, struct rc_segs *G,
			     const uint8_t *keep_in, struct mp_recompute_info *info)
{
	const struct mp_net *net = S->net;
	struct mp_layer_min lmin;
	uint64_t *seg_bytes = mp_xcalloc(G->n, sizeof(*seg_bytes));
	uint64_t *seg_lb = mp_xcalloc(G->n, sizeof(*seg_lb));

	policy_layer_min(net, r, &lmin);
	G->speed = mp_xcalloc(G->n, 1);
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (S->dropped[t])
			seg_bytes[G->of_op[net->tensors[t].producer]] += net->tensors[t].bytes;
	for (uint32_t i = r->n_fwd; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		if (op->phase == MP_PHASE_BWD && op->fwd >= 0) {
			uint32_t sg = G->of_op[op->fwd];
			uint64_t b = policy_op_bytes(net, r->op[i]);

			if (b > seg_lb[sg])
				seg_lb[sg] = b;
		}
	}
	for (uint32_t sg = 0; sg < G->n && !keep_in; sg++) {
		if (!seg_bytes[sg])
			continue;
		G->speed[sg] = seg_bytes[sg] + seg_lb[sg] <= lmin.bytes;
		if (info) {
			if (G->speed[sg])
				info->segments_speed++;
			else
				info->segments_memory++;
		}
	}
	free(seg_bytes);
	free(seg_lb);
}

/* Speed-centric: rebuild the whole of segment sg once and keep it. */
static void rc_rebuild_segment(struct rc_state *S, const struct rc_segs *G, uint32_t sg)
{
	const struct mp_net *net = S->net;

	for (uint32_t j = G->start[sg]; j < G->start[sg + 1]; j++) {
		const struct mp_op *f = &net->ops[G->ops[j]];

		for (uint32_t m = 0; m < f->n_out; m++)
			if (S->dropped[f->out[m]] && !S->avail[f->out[m]] &&
			    G->of_op[net->tensors[f->out[m]].producer] == sg)
				ensure(S, f->out[m], false);
	}
}

/* The sequence: forward as routed, then each backward op preceded by the
 * recomputation of what it reads and is not there.  Past S->max_e entries,
 * S->e is NULL and S->n_e UINT32_MAX. */
static void rc_sequence(struct rc_state *S, const struct mp_route *r, const struct rc_segs *G,
			const uint8_t *keep_in)
{
	const struct mp_net *net = S->net;

	for (uint32_t i = 0; i < r->n_fwd; i++)
		push_entry(S, r->op[i], false);
	for (uint32_t i = r->n_fwd; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		S->step = i;
		for (uint32_t k = 0; k < op->n_in; k++) {
			int32_t t = op->in[k];
			uint32_t sg;

			if (!S->dropped[t] || S->avail[t])
				continue;
			sg = G->of_op[net->tensors[t].producer];
			if (keep_in) {
				ensure(S, t, !keep_in[t]);
				continue;
			}
			if (G->speed[sg])
				rc_rebuild_segment(S, G, sg);
			ensure(S, t, !G->speed[sg]);
		}
		push_entry(S, r->op[i], false);
		if (S->max_e && S->n_e > S->max_e) {
			free(S->e);
			S->e = NULL;
			S->n_e = UINT32_MAX;
			break;
		}
		/* memory-centric results are dropped again after their reader */
		while (S->n_tmp) {
			int32_t t = S->tmp_list[--S->n_tmp];

			S->avail[t] = 0;
			S->temp[t] = 0;
		}
	}
}

/*
 * The recompute sequence.  dropped == NULL: SuperNeurons' rule (tensors of
 * non-checkpoint layers, decided below) with cost-aware segment modes; else
 * the caller's dropped set, keep[t] saying whether a rebuilt tensor stays
 * until its last use (speed-centric) or is dropped after its reader
 * (memory-centric).  Returns the entries (malloc'd) and their count.
 */
static uint32_t recompute_core(const struct mp_net *net, const struct mp_route *r,
			       const struct mp_policy_opts *o, const uint8_t *dropped_in,
			       const uint8_t *keep_in, const uint32_t *keep_from, uint32_t max_entries,
			       struct mp_entry **entries, struct mp_recompute_info *info, uint8_t *dropped_out,
			       uint8_t *keep_out)
{
	uint32_t nt = net->n_tensors;
	struct rc_state S = { 0 };
	struct rc_segs G = { 0 };

	S.net = net;
	S.max_e = max_entries;
	policy_writers_build(net, r, &S.w);
	S.dropped = mp_xcalloc(nt, 1);
	S.avail = mp_xcalloc(nt, 1);
	S.temp = mp_xcalloc(nt, 1);
	S.on_stack = mp_xcalloc(nt, 1);
	S.tmp_list = mp_xmalloc((nt + 1) * sizeof(*S.tmp_list));
	S.stack = mp_xmalloc((nt + 1) * sizeof(*S.stack));
	S.cut_kept = mp_xcalloc(nt + 1, 1);
	rc_segments(&S, r, o, !dropped_in, &G);
	S.keep = keep_in;
	S.keep_from = keep_in ? keep_from : NULL;
	if (dropped_in)
		memcpy(S.dropped, dropped_in, nt);
	else
		rc_decide_dropped(&S, r, o, info);
	rc_segment_modes(&S, r, &G, keep_in, info);
	rc_sequence(&S, r, &G, keep_in);
	if (info && S.n_e != UINT32_MAX)
		info->extra_ops = S.n_e - r->n;
	*entries = S.e;
	if (dropped_out)
		memcpy(dropped_out, S.dropped, nt);
	if (keep_out)
		for (uint32_t t = 0; t < nt; t++)
			keep_out[t] = S.dropped[t] && (keep_in ? keep_in[t] :
						       G.speed[G.of_op[net->tensors[t].producer]]);
	free(G.of_op);
	free(G.start);
	free(G.ops);
	free(G.speed);
	free(S.w.start);
	free(S.w.list);
	free(S.dropped);
	free(S.avail);
	free(S.temp);
	free(S.on_stack);
	free(S.cut_kept);
	free(S.tmp_list);
	free(S.stack);
	return S.n_e;
}

uint32_t policy_recompute_seq(const struct mp_net *net, const struct mp_route *r,
			      const uint8_t *dropped, const uint8_t *keep, const uint32_t *keep_from,
			      uint32_t max_entries, struct mp_entry **entries)
{
	struct mp_policy_opts o;

	policy_opts_default(&o);
	return recompute_core(net, r, &o, dropped, keep, keep_from, max_entries, entries, NULL, NULL, NULL);
}

void policy_recompute_set(const struct mp_net *net, const struct mp_route *r,
			  const struct mp_policy_opts *o, uint8_t *dropped, uint8_t *keep)
{
	struct mp_entry *e = NULL;

	recompute_core(net, r, o, NULL, NULL, NULL, 0, &e, NULL, dropped, keep);
	free(e);
}

static void build_recompute(const struct mp_net *net, const struct mp_route *r,
			    const struct mp_policy_opts *o, struct mp_schedule *out,
			    struct mp_recompute_info *info)
{
	struct mp_entry *e = NULL;
	struct mp_swap *swaps;
	uint32_t n_e = recompute_core(net, r, o, NULL, NULL, NULL, 0, &e, info, NULL, NULL), n_swaps;

	n_swaps = checkpoint_swaps(net, o, e, n_e, r->n_fwd, &swaps);
	sched_emit(net, e, n_e, swaps, n_swaps, out);
	free(swaps);
	free(e);
}

void policy_build(const struct mp_net *net, const struct mp_route *r,
		  enum mp_strategy s, const struct mp_policy_opts *o,
		  struct mp_schedule *out, struct mp_recompute_info *info)
{
	struct mp_entry *e;
	struct mp_swap *swaps = NULL;
	uint32_t n_swaps = 0;

	if (info)
		memset(info, 0, sizeof(*info));
	switch (s) {
	case MP_STRAT_BASELINE:
		build_baseline(net, r, out);
		return;
	case MP_STRAT_RECOMPUTE:
		build_recompute(net, r, o, out, info);
		return;
	case MP_STRAT_LIVENESS:
	case MP_STRAT_OFFLOAD:
	default:
		e = route_entries(r, 0);
		if (s == MP_STRAT_OFFLOAD)
			n_swaps = checkpoint_swaps(net, o, e, r->n, r->n_fwd, &swaps);
		sched_emit(net, e, r->n, swaps, n_swaps, out);
		free(e);
		free(swaps);
		return;
	}
}
