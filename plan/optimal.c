/*
 * optimal: the exact reference planner, Checkmate's MILP (Jain et al. 2020,
 * "Checkmate: Breaking the Memory Wall with Optimal Tensor
 * Rematerialization", section 4) over memplan's own memory rules, solved by
 * CBC (COIN-OR branch and cut; GLPK found no integer solution of U-Net's
 * model in 60 s where CBC's feasibility pump found one in 2 s).
 *
 * Stages are route steps: stage t re-runs some forward ops, then runs route
 * op t.  Variables (all binary but U):
 *   R[t][m]     block m re-runs in stage t (Checkmate's R);
 *   S[t][x]     tensor x is resident when stage t starts (S);
 *   F[t][x][k]  x is freed after position k of stage t (FREE);
 *   U[t][k]     bytes of the tracked tensors resident after position k
 *               allocates (U).
 * A block is a set of forward ops that write the same tensors (an in-place
 * relu and its producer): it re-runs whole, in route order, so every tensor
 * it rebuilds holds the version the original run left.  Tracked tensors are
 * the non-persistent ones a forward op writes; every other tensor's lifetime
 * is fixed by the route and enters each position's budget as a constant, as
 * do workspaces.  min sum R[t][m] ms(m) subject to
 *   a position runs only when what it reads is resident:
 *     A(k) <= S[t][x] + R[t][block(x)]            (Checkmate 1b, 1c)
 *   a tensor stays only if it was there or was rebuilt:
 *     S[t+1][x] <= S[t][x] + R[t][block(x)]         (1d)
 *   a tensor is freed only after its last reader of the stage, and only if
 *   the next stage does not keep it:
 *     F <= A(k), F <= 1 - S[t+1][x], F <= 1 - A(j) for later readers j
 *   memory: U[t][0] = sum_x S[t][x] b(x) + A(0) alloc(0),
 *     U[t][k] = U[t][k-1] - sum_x F[t][x][k-1] b(x) + A(k) alloc(k),
 *     U[t][k] + A(k) ws(k) <= budget - fixed(t, k).
 * A(k) is R[t][block of position k], or 1 for route op t.  Stage t
 * considers only the blocks route op t needs, directly or through other
 * re-runs (a re-run nothing in its stage reads moves to the next stage
 * that does without raising any peak).  The shared emitter frees each
 * tensor at its last touch, never later than the model does, so the
 * schedule's simulated peak is at most the model's and its time is the
 * model's objective plus the route's time: the optimum is exact for plans
 * that recompute and do not swap.
 *
 * The solver starts from the fastest fitting plan of chain, greedy (without
 * swaps), chen and checkpoint-blocks, so it never returns worse, and its
 * bound says how far that plan may be from the optimum.  Where CBC's root
 * LP alone would take more than a third of the time limit, only the LP
 * relaxation is solved, by Clp (lp.h), and that start plan is
 * returned as it is, with the relaxation's optimum as its bound.  It runs in a child
 * process (solve_isolated): a crash or an overrun costs the answer, not
 * memplan.
 *
 * Size: O(stages x forward ops) variables.  CBC proves the optimum of a few
 * dozen ops in a second; past OPT_MAX_COLS variables the planner refuses.
 */
#include "planners.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lp.h"

#define NONE UINT32_MAX
/* The model counts KiB: byte coefficients of 10^10 strain a solver's
 * tolerances. */
#define KIB 1024.0

struct om {
	const struct pl_state *S;
	struct pl_blocks bl;        /* blocks (NONE: not a forward op's) */
	uint8_t *brc;               /* [bl.n] the block may re-run */
	uint32_t *bcols;            /* [bl.n] U and F columns a re-run of it adds (at most) */
	uint8_t *tracked;           /* [nt] */
	uint32_t *tblk;             /* [nt] block that writes a tracked tensor */
	uint32_t *tfirst;           /* [nt] route step of its first write */
	uint32_t *tlast;            /* [nt] last stage that may read it */
	uint64_t *alloc;            /* [n_ops] tracked bytes an op writes first */
	uint64_t *fixed;            /* [n] untracked bytes resident during re-runs of stage t */
	uint64_t *fixed_op;         /* [n] ... and during route op t */
	uint32_t *cand_start, *cand; /* per stage: blocks it may re-run (CSR) */
	uint64_t *op_ws;            /* [n_ops] */
};

/* The tracked tensors op touches: their tlast reaches stage t, and the
 * blocks of those it reads (other than self) that may re-run and are
 * complete before t are pushed once per stage: what a re-run in stage t
 * needs in turn. */
static void om_visit(struct om *M, const struct mp_op *op, uint32_t t, uint32_t self, uint32_t *stamp,
		     uint32_t *stack, uint32_t *sp)
{
	for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
		int32_t x = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
		uint32_t c;

		if (!M->tracked[x])
			continue;
		if (t > M->tlast[x])
			M->tlast[x] = t;
		c = M->tblk[x];
		if (k < op->n_in && c != self && M->brc[c] && M->bl.last[c] < t && stamp[c] != t) {
			stamp[c] = t;
			stack[(*sp)++] = c;
		}
	}
}

/* Tracked tensors, each op's time and workspace as the state runs it, and
 * the blocks: which may re-run, and the columns a re-run adds. */
static void om_blocks(struct om *M)
{
	const struct pl_state *S = M->S;
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	uint32_t nt = net->n_tensors;
	double *op_ms = mp_xmalloc((net->n_ops + 1) * sizeof(*op_ms));

	M->tracked = mp_xcalloc(nt + 1, 1);
	M->tblk = mp_xmalloc((nt + 1) * sizeof(*M->tblk));
	M->tfirst = mp_xmalloc((nt + 1) * sizeof(*M->tfirst));
	M->tlast = mp_xcalloc(nt + 1, sizeof(*M->tlast));
	M->alloc = mp_xcalloc(net->n_ops + 1, sizeof(*M->alloc));
	M->op_ws = mp_xmalloc((net->n_ops + 1) * sizeof(*M->op_ws));
	for (uint32_t o = 0; o < net->n_ops; o++) {
		/* time and workspace as the state runs the op */
		sched_op_cost(net, (int32_t)o, S->algo[o], S->micro[o], S->micro_n[o], &op_ms[o], &M->op_ws[o]);
		if (net->ops[o].ws < 0)
			M->op_ws[o] = 0;
	}
	for (uint32_t t = 0; t < nt; t++) {
		const struct mp_tensor *x = &net->tensors[t];

		M->tblk[t] = M->tfirst[t] = NONE;
		/* written by an op of the forward steps (a merged net of several
		 * jobs has forward ops after them too: those stay fixed) */
		M->tracked[t] = !sched_persistent(x) && x->kind != MP_TK_WORKSPACE && x->producer >= 0 &&
				net->ops[x->producer].phase == MP_PHASE_FWD && r->pos[x->producer] < r->n_fwd;
		if (M->tracked[t])
			M->tfirst[t] = r->pos[x->producer];
	}
	pl_blocks_build(S, op_ms, &M->bl);
	free(op_ms);
	M->brc = mp_xmalloc(M->bl.n + 1);
	memset(M->brc, 1, M->bl.n + 1);
	M->bcols = mp_xcalloc(M->bl.n + 1, sizeof(*M->bcols));
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];
		uint32_t b = M->bl.of_op[r->op[i]];

		if (!op->recomputable)
			M->brc[b] = 0;
		M->bcols[b] += 1 + op->n_in + op->n_out;
	}
	for (uint32_t t = 0; t < nt; t++)
		if (M->tracked[t])
			M->tblk[t] = M->bl.of_op[net->tensors[t].producer];
}

/* What a re-run cannot reproduce: a tensor a later phase writes again (its
 * block stays, and so do its forward readers, who read a version only the
 * original run has), or a version a later write of its block replaces (the
 * reader's block stays).  Also the tracked bytes each forward op writes
 * first. */
static void om_rerun_limits(struct om *M)
{
	const struct mp_net *net = M->S->net;
	const struct mp_route *r = M->S->r;
	uint8_t *again = mp_xcalloc(net->n_tensors + 1, 1);

	for (uint32_t i = r->n_fwd; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_out; k++)
			if (M->tracked[op->out[k]]) {
				again[op->out[k]] = 1;
				M->brc[M->tblk[op->out[k]]] = 0;
			}
	}
	for (uint32_t i = 0; i < r->n_fwd; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];
		uint32_t b = M->bl.of_op[r->op[i]];

		for (uint32_t k = 0; k < op->n_in; k++) {
			int32_t x = op->in[k];

			if (M->tracked[x] && (again[x] || (M->tblk[x] != b && M->bl.last[M->tblk[x]] > i)))
				M->brc[b] = 0;
		}
		for (uint32_t k = 0; k < op->n_out; k++)
			if (M->tracked[op->out[k]] && net->tensors[op->out[k]].producer == r->op[i])
				M->alloc[r->op[i]] += net->tensors[op->out[k]].bytes;
	}
	free(again);
}

/* Fixed memory: persistent tensors, and the others no forward op writes,
 * each from its first write to its last touch (parameter gradients nobody
 * reads stay). */
static void om_fixed_memory(struct om *M)
{
	const struct mp_net *net = M->S->net;
	const struct mp_route *r = M->S->r;
	uint32_t nt = net->n_tensors;
	uint32_t *ufirst = mp_xmalloc((nt + 1) * sizeof(*ufirst)), *ulast = mp_xmalloc((nt + 1) * sizeof(*ulast));
	uint8_t *read = mp_xcalloc(nt + 1, 1);
	/* delta[i]: bytes allocated at step i; freed[i]: freed after it */
	uint64_t *delta = mp_xcalloc(r->n + 2, sizeof(*delta)), *freed = mp_xcalloc(r->n + 2, sizeof(*freed));
	uint64_t live = 0;

	for (uint32_t t = 0; t < nt; t++) {
		ufirst[t] = ulast[t] = NONE;
		if (sched_persistent(&net->tensors[t]))
			live += net->tensors[t].bytes;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		const struct mp_op *op = &net->ops[r->op[i]];

		for (uint32_t k = 0; k < op->n_in + op->n_out; k++) {
			int32_t t = k < op->n_in ? op->in[k] : op->out[k - op->n_in];
			const struct mp_tensor *x = &net->tensors[t];

			if (k < op->n_in)
				read[t] = 1;
			if (M->tracked[t] || sched_persistent(x) || x->kind == MP_TK_WORKSPACE)
				continue;
			if (ufirst[t] == NONE)
				ufirst[t] = i;
			ulast[t] = i;
		}
	}
	M->fixed = mp_xcalloc(r->n + 1, sizeof(*M->fixed));
	M->fixed_op = mp_xcalloc(r->n + 1, sizeof(*M->fixed_op));
	for (uint32_t t = 0; t < nt; t++) {
		if (ufirst[t] == NONE)
			continue;
		delta[ufirst[t]] += net->tensors[t].bytes;
		if (!(net->tensors[t].kind == MP_TK_PARAM_GRAD && !read[t]))
			freed[ulast[t]] += net->tensors[t].bytes;
	}
	for (uint32_t i = 0; i < r->n; i++) {
		M->fixed[i] = live;
		M->fixed_op[i] = live + delta[i];
		live = live + delta[i] - freed[i];
	}
	free(freed);
	free(delta);
	free(ufirst);
	free(ulast);
	free(read);
}

/* Candidates: the blocks route op t needs, through re-runs, in route order
 * of their last op (what a block reads of another is final once that
 * block's last op has run).  Returns the number of model columns. */
static uint64_t om_candidates(struct om *M)
{
	const struct mp_net *net = M->S->net;
	const struct mp_route *r = M->S->r;
	uint32_t *stamp = mp_xmalloc((M->bl.n + 1) * sizeof(*stamp));
	uint32_t *stack = mp_xmalloc((M->bl.n + 1) * sizeof(*stack));
	uint32_t cap = 0, n_cand = 0;
	uint64_t cols = 0;

	for (uint32_t b = 0; b <= M->bl.n; b++)
		stamp[b] = NONE;
	M->cand_start = mp_xcalloc(r->n + 2, sizeof(*M->cand_start));
	for (uint32_t t = 0; t < r->n; t++) {
		const struct mp_op *op = &net->ops[r->op[t]];
		uint32_t sp = 0, c0 = n_cand;

		/* (route op t's own block is never complete before t) */
		om_visit(M, op, t, NONE, stamp, stack, &sp);
		while (sp) {
			uint32_t b = stack[--sp];

			mp_grow((void **)&M->cand, &cap, n_cand + 1, sizeof(*M->cand));
			M->cand[n_cand++] = b;
			for (uint32_t j = M->bl.start[b]; j < M->bl.start[b + 1]; j++)
				om_visit(M, &net->ops[M->bl.ops[j]], t, b, stamp, stack, &sp);
		}
		for (uint32_t a = c0 + 1; a < n_cand; a++)
			for (uint32_t j = a; j > c0 && M->bl.last[M->cand[j - 1]] > M->bl.last[M->cand[j]]; j--) {
				uint32_t tmp = M->cand[j];

				M->cand[j] = M->cand[j - 1];
				M->cand[j - 1] = tmp;
			}
		M->cand_start[t + 1] = n_cand;
		/* R per block, U per position, F per touch (at most) */
		cols += 1 + op->n_in + op->n_out;
		for (uint32_t c = c0; c < n_cand; c++)
			cols += 1 + M->bcols[M->cand[c]];
	}
	free(stamp);
	free(stack);
	for (uint32_t t = 0; t < net->n_tensors; t++)
		if (M->tracked[t] && M->tlast[t] > M->tfirst[t])
			cols += M->tlast[t] - M->tfirst[t];
	return cols;
}

/* Blocks, tracked tensors, fixed memory and each stage's candidate blocks.
 * Returns the number of model columns (variables). */
static uint64_t om_build(struct om *M, const struct pl_state *S)
{
	memset(M, 0, sizeof(*M));
	M->S = S;
	om_blocks(M);
	om_rerun_limits(M);
	om_fixed_memory(M);
	return om_candidates(M);
}

static void om_free(struct om *M)
{
	pl_blocks_release(&M->bl);
	free(M->brc);
	free(M->bcols);
	free(M->tracked);
	free(M->tblk);
	free(M->tfirst);
	free(M->tlast);
	free(M->alloc);
	free(M->fixed);
	free(M->fixed_op);
	free(M->cand_start);
	free(M->cand);
	free(M->op_ws);
}

/* ---- the MILP ----------------------------------------------------------- */

/* The columns a solution is read from. */
struct cols {
	int *s0;        /* [nt] column of S[tfirst + 1][x]; 0: none */
	int *rc;        /* [cand] R of each stage's candidate block */
};

static int s_col(const struct om *M, const struct cols *C, int32_t x, uint32_t t)
{
	if (!M->tracked[x] || !C->s0[x] || t <= M->tfirst[x] || t > M->tlast[x])
		return 0;
	return C->s0[x] + (int)(t - M->tfirst[x] - 1);
}

static int r_col(const struct om *M, const struct cols *C, uint32_t t, uint32_t b)
{
	for (uint32_t c = M->cand_start[t]; c < M->cand_start[t + 1]; c++)
		if (M->cand[c] == b)
			return C->rc[c];
	return 0;
}

/* One position of a stage: an op and the column saying it runs (0: route
 * op t, which always does). */
struct pos {
	int32_t op;
	int a;
	uint32_t blk;
	int u;          /* U after it allocates */
};

/* A stage's touches (tensor, position), chained per tensor in position order. */
struct touch {
	int32_t x;
	uint32_t k;
	uint32_t next;  /* the tensor's next touch in the stage; NONE */
	int free_col;   /* F[t][x][k]; 0: a later position always touches x */
};

/* Every stage's positions and touches, stage after stage (the solution and
 * a start are read through them), and scratch. */
struct stage_buf {
	struct pos *p;
	uint32_t np, pcap, *p_start; /* stage t: p[p_start[t] .. p_start[t + 1]) */
	struct touch *q;
	uint32_t nq, qcap, *q_start;
	uint32_t *last, *stamp; /* [nt] the tensor's last touch in stage stamp */
	struct lp_row row;
};

/* Stage t's rows and its F and U columns.  Returns -1 when route op t
 * cannot run under the budget whatever is dropped. */
static int model_stage(struct lp *L, const struct om *M, const struct cols *C, uint32_t t, double budget_kib,
		       struct stage_buf *B)
{
	const struct mp_net *net = M->S->net;
	const struct mp_route *r = M->S->r;
	int prev_u = 0;
	uint32_t p0 = B->np, q_first = B->nq;

	B->p_start[t] = p0;
	B->q_start[t] = q_first;
	for (uint32_t c = M->cand_start[t]; c < M->cand_start[t + 1]; c++) {
		uint32_t b = M->cand[c];

		for (uint32_t j = M->bl.start[b]; j < M->bl.start[b + 1]; j++) {
			mp_grow((void **)&B->p, &B->pcap, B->np + 1, sizeof(*B->p));
			B->p[B->np++] = (struct pos){ (int32_t)M->bl.ops[j], C->rc[c], b, 0 };
		}
	}
	mp_grow((void **)&B->p, &B->pcap, B->np + 1, sizeof(*B->p));
	B->p[B->np++] = (struct pos){ r->op[t], 0, M->bl.of_op[r->op[t]], 0 };
	B->p_start[t + 1] = B->np;
	for (uint32_t k = p0; k < B->np; k++) {
		const struct mp_op *op = &net->ops[B->p[k].op];

		for (uint32_t i = 0; i < op->n_in + op->n_out; i++) {
			int32_t x = i < op->n_in ? op->in[i] : op->out[i - op->n_in];

			if (!M->tracked[x] || (B->stamp[x] == t && B->q[B->last[x]].k == k))
				continue; /* untracked, or read and written: one touch */
			mp_grow((void **)&B->q, &B->qcap, B->nq + 1, sizeof(*B->q));
			B->q[B->nq] = (struct touch){ x, k, NONE, 0 };
			if (B->stamp[x] == t)
				B->q[B->last[x]].next = B->nq;
			B->stamp[x] = t;
			B->last[x] = B->nq++;
		}
	}
	B->q_start[t + 1] = B->nq;
	for (uint32_t k = p0, q0 = q_first; k < B->np; k++) {
		struct pos *p = &B->p[k];
		const struct mp_op *op = &net->ops[p->op];
		bool route_op = k + 1 == B->np;
		double room = budget_kib - (double)(route_op ? M->fixed_op[t] : M->fixed[t]) / KIB;
		double ws = (double)M->op_ws[p->op] / KIB, alloc = (double)M->alloc[p->op] / KIB;
		int u;

		/* what it reads is resident: kept (S) or rebuilt before it in
		 * the stage (R of the block that writes it) */
		for (uint32_t i = 0; i < op->n_in + op->n_out; i++) {
			int32_t x = i < op->n_in ? op->in[i] : op->out[i - op->n_in];

			/* (a write is a read too unless it starts the tensor: a
			 * second writer of the route needs it resident) */
			if (!M->tracked[x] || (!route_op && M->tblk[x] == p->blk) ||
			    (i >= op->n_in && (!route_op || net->tensors[x].producer == p->op)))
				continue;
			lp_row_add(&B->row, s_col(M, C, x, t), 1.0);
			lp_row_add(&B->row, r_col(M, C, t, M->tblk[x]), 1.0);
			if (route_op) {
				lp_row_emit(L, &B->row, LP_GE, 1.0);
			} else {
				lp_row_add(&B->row, p->a, -1.0);
				lp_row_emit(L, &B->row, LP_GE, 0.0);
			}
		}
		/* U[t][k]: tracked bytes resident while k runs */
		if (route_op && room - ws < 0)
			return -1;
		u = lp_col(L, 'c', route_op ? room - ws : room, 0);
		lp_row_add(&B->row, u, 1.0);
		if (k == p0) {
			for (uint32_t x = 0; x < net->n_tensors; x++)
				lp_row_add(&B->row, s_col(M, C, (int32_t)x, t), -(double)net->tensors[x].bytes / KIB);
		} else {
			lp_row_add(&B->row, prev_u, -1.0);
			for (; q0 < B->nq && B->q[q0].k < k; q0++)
				if (B->q[q0].free_col)
					lp_row_add(&B->row, B->q[q0].free_col, (double)net->tensors[B->q[q0].x].bytes / KIB);
		}
		if (p->a) {
			lp_row_add(&B->row, p->a, -alloc);
			lp_row_emit(L, &B->row, LP_EQ, 0.0);
			if (room < alloc + ws) /* it can never run here */
				lp_row2(L, &B->row, LP_LE, 0.0, p->a, 1.0, 0, 0.0);
			else if (ws > 0)       /* with its workspace */
				lp_row2(L, &B->row, LP_LE, room, u, 1.0, p->a, ws);
		} else {
			lp_row_emit(L, &B->row, LP_EQ, alloc);
		}
		prev_u = p->u = u;
		/* F: the tensors k touches may go after it, unless a later
		 * position of the stage reads them or the next stage keeps them */
		for (uint32_t q = q0; q < B->nq && B->q[q].k == k; q++) {
			struct touch *tq = &B->q[q];
			bool always_later = false;
			int s1 = s_col(M, C, tq->x, t + 1);

			for (uint32_t j = tq->next; j != NONE; j = B->q[j].next)
				if (!B->p[B->q[j].k].a)
					always_later = true;
			if (always_later)
				continue;
			tq->free_col = lp_col(L, 'b', 1, 0);
			if (p->a)
				lp_row2(L, &B->row, LP_LE, 0.0, tq->free_col, 1.0, p->a, -1.0);
			if (s1)
				lp_row2(L, &B->row, LP_LE, 1.0, tq->free_col, 1.0, s1, 1.0);
			for (uint32_t j = tq->next; j != NONE; j = B->q[j].next)
				lp_row2(L, &B->row, LP_LE, 1.0, tq->free_col, 1.0, B->p[B->q[j].k].a, 1.0);
		}
	}
	return 0;
}

/*
 * A start for the solver from a sequence (a heuristic plan's): R from its
 * re-runs, then S, F and U as the model's rules give them.  Fills v
 * ([n_col]); false when the sequence is not of the model's form (a re-run
 * that is not a candidate block of its stage).
 */
static bool start_from(const struct om *M, const struct cols *C, const struct stage_buf *B,
		       const struct lp *L, const struct mp_entry *e, uint32_t n_e, double *v)
{
	const struct mp_net *net = M->S->net;
	const struct mp_route *r = M->S->r;
	uint32_t t = 0, nt = net->n_tensors, *later;
	uint8_t *need;
	bool ok = true;

	memset(v, 0, L->n_col * sizeof(*v));
	for (uint32_t i = 0; i < n_e && ok; i++) {
		int c;

		if (!e[i].recompute) {
			ok = r->pos[e[i].op] == t++;
			continue;
		}
		c = M->bl.of_op[e[i].op] == NONE ? 0 : r_col(M, C, t, M->bl.of_op[e[i].op]);
		if (!c)
			ok = false;
		else
			v[c - 1] = 1;
	}
	if (!ok || t != r->n)
		return false;
	need = mp_xcalloc(nt + 1, 1);
	later = mp_xmalloc((nt + 1) * sizeof(*later));
	for (uint32_t x = 0; x < nt; x++)
		later[x] = NONE;
	/* backward over stages: F from S[t+1], then S[t] */
	for (t = r->n; t-- > 0 && ok;) {
		for (uint32_t q = B->q_start[t + 1]; q-- > B->q_start[t];) {
			const struct touch *tq = &B->q[q];
			const struct pos *p = &B->p[tq->k];
			bool runs = !p->a || v[p->a - 1] > 0.5;

			if (tq->free_col)
				v[tq->free_col - 1] = runs && later[tq->x] != t && !need[tq->x];
			if (runs)
				later[tq->x] = t;
		}
		for (uint32_t q = B->q_start[t + 1]; q-- > B->q_start[t];) {
			const struct touch *tq = &B->q[q];
			const struct pos *p = &B->p[tq->k];

			if (p->a && v[p->a - 1] < 0.5)
				continue;
			need[tq->x] = net->tensors[tq->x].producer != p->op;
		}
		for (uint32_t x = 0; x < nt; x++) {
			int sc = s_col(M, C, (int32_t)x, t);

			if (sc)
				v[sc - 1] = need[x];
			else if (need[x] && M->tracked[x] && t <= M->tfirst[x])
				ok = false;
		}
	}
	/* U forward, stage by stage */
	for (t = 0; t < r->n && ok; t++) {
		double u = 0;

		for (uint32_t x = 0; x < nt; x++) {
			int sc = s_col(M, C, (int32_t)x, t);

			if (sc && v[sc - 1] > 0.5)
				u += (double)net->tensors[x].bytes / KIB;
		}
		for (uint32_t k = B->p_start[t], q = B->q_start[t]; k < B->p_start[t + 1]; k++) {
			const struct pos *p = &B->p[k];

			if (k > B->p_start[t])
				for (; q < B->q_start[t + 1] && B->q[q].k < k; q++)
					if (B->q[q].free_col && v[B->q[q].free_col - 1] > 0.5)
						u -= (double)net->tensors[B->q[q].x].bytes / KIB;
			if (!p->a || v[p->a - 1] > 0.5)
				u += (double)M->alloc[p->op] / KIB;
			v[p->u - 1] = u > 0 ? u : 0;
		}
	}
	free(need);
	free(later);
	return ok;
}

/* The fastest plan among the recomputing heuristics that fits the budget
 * (its simulated peak, and its arena before any that does not pack): chain,
 * greedy without swaps (its static pass, and with online its online pass,
 * whose re-runs the model's stages need not hold), chen,
 * checkpoint-blocks.  Its sequence in *e (malloc'd), its time in *ms; false
 * when none fits. */
static bool best_heuristic(const struct pl_state *S, bool online, struct mp_entry **e, uint32_t *n_e, double *ms,
			   const char **name)
{
	static const char *const names[] = { "chain", "greedy", "greedy-online", "chen", "checkpoint-blocks" };
	static int (*const fns[])(struct pl_state *, struct mp_plan *, struct mp_error *) = {
		plan_chain, plan_greedy_recompute, plan_greedy_dtr, plan_chen, plan_blocks,
	};
	bool found = false, packs = false;

	for (size_t i = 0; i < sizeof(fns) / sizeof(fns[0]); i++) {
		struct pl_state H;
		struct mp_plan hp;
		struct mp_error err;

		if (fns[i] == plan_greedy_dtr && !online)
			continue;
		plan_init(&hp);
		pl_init(&H, S->net, S->r, S->req);
		memcpy(H.algo, S->algo, S->net->n_ops * sizeof(*H.algo));
		memcpy(H.micro_n, S->micro_n, S->net->n_ops * sizeof(*H.micro_n));
		for (uint32_t o = 0; o < S->net->n_ops; o++)
			if (S->micro_n[o] > 1) {
				H.micro[o] = mp_xmalloc(S->micro_n[o] * sizeof(*H.micro[o]));
				memcpy(H.micro[o], S->micro[o], S->micro_n[o] * sizeof(*H.micro[o]));
			}
		if (fns[i](&H, &hp, &err) == 0 && H.sim.peak_bytes <= S->req->budget_bytes &&
		    !H.sim.d2h_bytes && !H.sim.h2d_bytes) {
			bool p = S->peak_only || pl_overflow(&H, S->req->budget_bytes) == 0;

			if (found && (packs > p || (packs == p && H.sim.time_ms >= *ms))) {
				pl_release(&H);
				plan_release(&hp);
				continue;
			}
			packs = p;
			free(*e);
			*e = mp_xmalloc((H.n_entries + 1) * sizeof(**e));
			memcpy(*e, H.entries, H.n_entries * sizeof(**e));
			*n_e = H.n_entries;
			*ms = H.sim.time_ms;
			*name = names[i];
			found = true;
		}
		pl_release(&H);
		plan_release(&hp);
	}
	return found;
}

/* Refuse a model past OPT_MAX_COLS columns (-1 with *err).  1: CBC's LP
 * relaxation alone would take more than a third of limit_s (it solves it
 * before it looks at the clock, and the estimate is rough: MobileNet-V2's
 * 105k columns, estimated at 145 s, outlived a 300 s limit by half), so only
 * the relaxation is solved, by Clp, for a bound on the best heuristic plan;
 * 0: the MILP. */
static int opt_check_size(const struct pl_state *S, uint64_t cols, double limit_s, struct mp_error *err)
{
	if (cols > OPT_MAX_COLS) {
		mp_error_set(err, "optimal: the net is too large for the exact planner (%u ops: about %llu "
			     "variables, the limit is %u); use chain or greedy", S->net->n_ops,
			     (unsigned long long)cols, OPT_MAX_COLS);
		return -1;
	}
	return S->req->opt_relax_only || (double)cols * (double)cols / OPT_LP_COLS2_PER_S > limit_s / 3;
}

/* The model: S and R columns, the rows S[t+1][x] <= S[t][x] +
 * R[t][block(x)], then each stage's.  Returns -1, or the first stage whose
 * route op cannot run under the budget whatever is dropped. */
static int opt_model(const struct pl_state *S, const struct om *M, struct lp *L, struct cols *C,
		     struct stage_buf *B)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	double budget_kib = (double)S->req->budget_bytes / KIB;

	C->s0 = mp_xcalloc(net->n_tensors + 1, sizeof(*C->s0));
	C->rc = mp_xcalloc(M->cand_start[r->n] + 1, sizeof(*C->rc));
	for (uint32_t x = 0; x < net->n_tensors; x++)
		if (M->tracked[x] && M->tlast[x] > M->tfirst[x])
			for (uint32_t t = M->tfirst[x] + 1; t <= M->tlast[x]; t++) {
				int c = lp_col(L, 'b', 1, 0);

				if (t == M->tfirst[x] + 1)
					C->s0[x] = c;
			}
	for (uint32_t c = 0; c < M->cand_start[r->n]; c++)
		C->rc[c] = lp_col(L, 'b', 1, M->bl.ms[M->cand[c]]);
	for (uint32_t x = 0; x < net->n_tensors; x++)
		for (uint32_t t = M->tfirst[x] + 1; M->tracked[x] && C->s0[x] && t < M->tlast[x]; t++) {
			lp_row_add(&B->row, s_col(M, C, (int32_t)x, t + 1), 1.0);
			lp_row_add(&B->row, s_col(M, C, (int32_t)x, t), -1.0);
			lp_row_add(&B->row, r_col(M, C, t, M->tblk[x]), -1.0);
			lp_row_emit(L, &B->row, LP_LE, 0.0);
		}
	B->p_start = mp_xcalloc(r->n + 2, sizeof(*B->p_start));
	B->q_start = mp_xcalloc(r->n + 2, sizeof(*B->q_start));
	B->last = mp_xmalloc((net->n_tensors + 1) * sizeof(*B->last));
	B->stamp = mp_xmalloc((net->n_tensors + 1) * sizeof(*B->stamp));
	for (uint32_t x = 0; x < net->n_tensors; x++)
		B->stamp[x] = NONE;
	for (uint32_t t = 0; t < r->n; t++)
		if (model_stage(L, M, C, t, budget_kib, B) < 0)
			return (int)t;
	return -1;
}

/* The solver's time: the limit, or what the attempts before this one left
 * of it (at least 1 s). */
static double opt_solve_s(const struct pl_state *S, double limit_s)
{
	double left;

	if (S->req->deadline_s <= 0)
		return limit_s;
	left = S->req->deadline_s - plan_now_s();
	return left < 1 ? 1 : left < limit_s ? left : limit_s;
}

/* The sequence of the solution rval: each stage's re-run blocks, then its
 * route op; into S->seq. */
static void opt_sequence(struct pl_state *S, const struct om *M, const uint8_t *rval)
{
	const struct mp_route *r = S->r;
	struct mp_entry *e = NULL;
	uint32_t n_e = 0, cap = 0;

	for (uint32_t t = 0; t < r->n; t++) {
		for (uint32_t c = M->cand_start[t]; c < M->cand_start[t + 1]; c++) {
			uint32_t b = M->cand[c];

			if (!rval[c])
				continue;
			for (uint32_t j = M->bl.start[b]; j < M->bl.start[b + 1]; j++) {
				mp_grow((void **)&e, &cap, n_e + 1, sizeof(*e));
				e[n_e++] = (struct mp_entry){ (int32_t)M->bl.ops[j], true, -1 };
			}
		}
		mp_grow((void **)&e, &cap, n_e + 1, sizeof(*e));
		e[n_e++] = (struct mp_entry){ r->op[t], false, -1 };
	}
	free(S->seq);
	S->seq = e;
	S->n_seq = n_e;
}

/* The note of a plan the solver gave (or, lost, the start's). */
static void opt_note(struct mp_plan *p, const struct lp_solve_out *so, const char *start, double limit_s,
		     double secs, const struct lp *L)
{
	if (so->status == LP_SOLVE_OPTIMAL)
		snprintf(p->note, sizeof(p->note), "proven optimal: %.3f ms recomputed (%u variables, "
			 "%u constraints, %.1f s)", so->obj, L->n_col, L->n_row, secs);
	else if (so->status == LP_SOLVE_LOST)
		snprintf(p->note, sizeof(p->note), "the solver %s: %s's plan, %.3f ms recomputed (%u "
			 "variables, %u constraints)", LP_SOLVE_LOST_WHY, start, so->obj, L->n_col, L->n_row);
	else
		snprintf(p->note, sizeof(p->note), "best found in the %g s limit%s%s: %.3f ms recomputed; "
			 "no plan recomputes less than %.3f ms (%u variables, %u constraints)", limit_s,
			 start ? ", from " : "", start ? start : "", so->obj, so->bound > 0 ? so->bound : 0.0,
			 L->n_col, L->n_row);
}

/* The start's re-runs (R from the start v) into rval; returns their
 * milliseconds. */
static double start_r(const struct om *M, const struct cols *C, const double *v, uint8_t *rval)
{
	double ms = 0;

	for (uint32_t c = 0; c < M->cand_start[M->S->r->n]; c++) {
		rval[c] = v[C->rc[c] - 1] > 0.5;
		ms += rval[c] ? M->bl.ms[M->cand[c]] : 0;
	}
	return ms;
}

/* The note of a model too large for an exact solve in the limit: the best
 * heuristic plan (start; NULL: none fits), and what the LP relaxation
 * proved. */
static void opt_relaxed_note(struct mp_plan *p, const struct lp_solve_out *so, const char *start, double limit_s,
			     double secs, const struct lp *L)
{
	char bound[200];

	if (so->status == LP_SOLVE_OPTIMAL)
		snprintf(bound, sizeof(bound), "its LP relaxation proves no plan recomputes less than %.3f ms",
			 so->bound);
	else if (so->status == LP_SOLVE_LOST || so->status == LP_SOLVE_TIME)
		snprintf(bound, sizeof(bound), "its LP relaxation %s",
			 so->status == LP_SOLVE_LOST ? LP_SOLVE_LOST_WHY : "did not finish in the limit");
	else /* LP_SOLVE_NONE, or infeasible beside a start that is a solution: numerical trouble */
		snprintf(bound, sizeof(bound), "its LP relaxation gave no bound (Clp status %d)", so->nodes);
	if (start)
		snprintf(p->note, sizeof(p->note), "too large to solve exactly in the %g s limit: %s's plan; %s "
			 "(%u variables, %u constraints, %.1f s)", limit_s, start, bound, L->n_col, L->n_row, secs);
	else
		snprintf(p->note, sizeof(p->note), "too large to solve exactly in the %g s limit, and no "
			 "heuristic plan that only recomputes fits; %s (%u variables, %u constraints, %.1f s)",
			 limit_s, bound, L->n_col, L->n_row, secs);
}

/* S's sequence becomes a copy of e[0..n) (what S->seq held is the
 * caller's). */
static void seq_copy(struct pl_state *S, const struct mp_entry *e, uint32_t n)
{
	S->seq = mp_xmalloc((n + 1) * sizeof(*S->seq));
	memcpy(S->seq, e, n * sizeof(*e));
	S->n_seq = n;
}

/* The model counts the simulated peak, not the arena: where its plan (built
 * in S, overflowing) does not pack in the budget and the start's (he) does,
 * the start stands (U-Net at 80%: the solver's plans fragmented, and
 * plan_run's re-plans lower ended at +8.8% where greedy's start packs at
 * +1.8%).  0, or -1 with *err. */
static int opt_prefer_packing_start(struct pl_state *S, struct mp_plan *p, const struct mp_entry *he,
				    uint32_t n_he, const char *start, const struct lp_solve_out *so,
				    const struct lp *L, struct mp_error *err)
{
	struct mp_entry *solved = S->seq;
	uint32_t n_solved = S->n_seq;
	double solved_ms = S->sim.recompute_ms;
	int rc;

	seq_copy(S, he, n_he);
	if ((rc = pl_build(S, err) < 0 ? -1 : 0) == 0 && pl_overflow(S, S->req->budget_bytes) == 0) {
		free(solved);
		snprintf(p->note, sizeof(p->note), "the %s (%.3f ms recomputed) does not pack in the arena; "
			 "%s's plan does: %.3f ms recomputed (%u variables, %u constraints)",
			 so->status == LP_SOLVE_OPTIMAL ? "proven optimum" : "solver's best plan", solved_ms, start,
			 S->sim.recompute_ms, L->n_col, L->n_row);
	} else if (rc == 0) {
		free(S->seq);
		S->seq = solved;
		S->n_seq = n_solved;
		rc = pl_build(S, err) < 0 ? -1 : 0;
	} else {
		free(solved);
	}
	return rc;
}

/*
 * Solve and leave S built on the result.  A net that fits as it is stays;
 * one whose model has more than OPT_MAX_COLS variables is refused (-1 with
 * *err).  Otherwise 0: the schedule of the best integer solution found
 * within the time limit, or the state as it was when none was (the note
 * says which, with the proven bound); for a model too large for the MILP
 * in the limit (opt_check_size), the best heuristic plan as it is, with its
 * LP relaxation's bound.
 */
int plan_optimal(struct pl_state *S, struct mp_plan *p, struct mp_error *err)
{
	const struct mp_net *net = S->net;
	const struct mp_route *r = S->r;
	struct om M;
	struct lp L = { 0 };
	struct cols C = { 0 };
	struct stage_buf B = { 0 };
	struct lp_solve_out so = { LP_SOLVE_NONE, 0, 0, 0 };
	double *v = NULL;
	uint8_t *rval = NULL;
	uint32_t n_r;
	double limit_s, solve_s, t0, secs;
	int rc, stuck, relax;
	const char *start = NULL; /* the heuristic the solver started from */
	struct mp_entry *he = NULL; /* its sequence */
	uint32_t n_he = 0;
	double hms = 0;

	if ((rc = pl_fits_as_is(S, p, err)) != 0)
		return rc < 0 ? -1 : 0;
	limit_s = plan_time_limit(S->req);
	if ((relax = opt_check_size(S, om_build(&M, S), limit_s, err)) < 0) {
		om_free(&M);
		return -1;
	}
	if ((stuck = opt_model(S, &M, &L, &C, &B)) >= 0) {
		snprintf(p->note, sizeof(p->note), "no plan that only recomputes fits: step %d (%s) alone needs "
			 "more than the budget", stuck + 1, net->ops[r->op[stuck]].name);
		goto out;
	}
	solve_s = opt_solve_s(S, limit_s);
	/* start from the best heuristic plan: the solver then never returns
	 * worse, and its bound says how far that plan may be from optimal
	 * (relaxed, the plan is returned as it is: it need not be of the
	 * model's form) */
	v = mp_xmalloc((L.n_col + 1) * sizeof(*v));
	if (!best_heuristic(S, relax, &he, &n_he, &hms, &start))
		start = NULL;
	else if (!relax && !(start_from(&M, &C, &B, &L, he, n_he, v) && lp_feasible(&L, v)))
		start = NULL;
	n_r = M.cand_start[r->n];
	rval = mp_xcalloc(n_r + 1, 1);
	t0 = plan_now_s();
	lp_solve_isolated(&L, start && !relax ? v : NULL, solve_s, C.rc, n_r, relax, &so, rval);
	secs = plan_now_s() - t0;
	p->iterations = relax ? 0 : (uint32_t)so.nodes; /* relax: nodes holds Clp's status */
	if (relax && start && so.status == LP_SOLVE_INFEASIBLE) {
		/* a plan fits: the relaxation's infeasibility is numerical, or
		 * the model's memory (at least the simulator's) is stricter
		 * than the plan needs; not a proof either way */
		so.status = LP_SOLVE_NONE;
		so.nodes = 1; /* Clp's status: primal infeasible */
	}
	if (so.status == LP_SOLVE_INFEASIBLE) {
		snprintf(p->note, sizeof(p->note), "proven: no plan that only recomputes fits (%u variables, "
			 "%u constraints, %.1f s%s)", L.n_col, L.n_row, secs, relax ? ", its LP relaxation" : "");
		goto out;
	}
	if (relax) {
		/* the start as it is, the heuristic's own plan */
		opt_relaxed_note(p, &so, start, limit_s, secs, &L);
		if (start) {
			free(S->seq);
			seq_copy(S, he, n_he);
		}
		goto out;
	} else if (so.status == LP_SOLVE_LOST && start) {
		/* the solver crashed or outlived its deadline: the start stands */
		so.obj = start_r(&M, &C, v, rval);
	} else if (so.status != LP_SOLVE_OPTIMAL && so.status != LP_SOLVE_FEASIBLE) {
		snprintf(p->note, sizeof(p->note), "no plan found in the %g s limit%s (%u variables, %u "
			 "constraints)", limit_s, so.status == LP_SOLVE_LOST ? ", the solver " LP_SOLVE_LOST_WHY : "",
			 L.n_col, L.n_row);
		goto out;
	}
	opt_sequence(S, &M, rval);
	if (!relax)
		opt_note(p, &so, start, limit_s, secs, &L);
out:
	rc = pl_build(S, err) < 0 ? -1 : 0;
	if (rc == 0 && start && !relax && S->seq && pl_overflow(S, S->req->budget_bytes) > 0)
		rc = opt_prefer_packing_start(S, p, he, n_he, start, &so, &L, err);
	free(he);
	free(v);
	free(rval);
	lp_free(&L);
	free(C.s0);
	free(C.rc);
	free(B.p);
	free(B.q);
	free(B.p_start);
	free(B.q_start);
	free(B.last);
	free(B.stamp);
	free(B.row.col);
	free(B.row.a);
	om_free(&M);
	return rc;
}
