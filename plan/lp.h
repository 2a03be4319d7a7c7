/*
 * lp (internal to plan/): a linear or mixed-integer program built row by row,
 * and its solve by COIN-OR (CBC for the MILP, Clp for an LP) in a child
 * process.  optimal's exact program and floor's relaxation are built with it.
 */
#ifndef MP_PLAN_LP_H
#define MP_PLAN_LP_H

#include <stdbool.h>
#include <stdint.h>

/* The model as the solver takes it: columns, rows, and the matrix as
 * (row, column, value) triplets, all 0-based.  Zero-initialise; lp_free. */
struct lp {
	uint32_t n_col, col_cap, n_row, row_cap, n_nz, nz_cap;
	double *col_ub, *obj;
	uint8_t *is_int;
	double *row_lo, *row_hi;
	int *ti, *tj;
	double *tv;
};

/* The row being written: its columns and coefficients (column 0: none). */
struct lp_row {
	uint32_t n, cap;
	int *col;
	double *a;
};

enum { LP_LE, LP_GE, LP_EQ };

/* A binary column, or (kind 'c') a continuous one in [0, ub], with its
 * objective coefficient.  Columns are numbered from 1: 0 means none. */
int lp_col(struct lp *L, char kind, double ub, double obj);
/* Add a*col to the row being written (col 0: nothing). */
void lp_row_add(struct lp_row *R, int col, double a);
/* Emit the row as sum <= bound, >= bound or = bound (LP_LE, LP_GE, LP_EQ);
 * clear it. */
void lp_row_emit(struct lp *L, struct lp_row *R, int type, double bound);
/* A row of two terms. */
void lp_row2(struct lp *L, struct lp_row *R, int type, double bound, int c1, double a1, int c2, double a2);
void lp_row_release(struct lp_row *R);
void lp_free(struct lp *L);
/* Does v ([n_col]) meet every row and bound of the model (to 1e-6)? */
bool lp_feasible(const struct lp *L, const double *v);

/* What a solve found: its status, objective, bound and nodes. */
enum { LP_SOLVE_NONE, LP_SOLVE_FEASIBLE, LP_SOLVE_OPTIMAL, LP_SOLVE_INFEASIBLE, LP_SOLVE_LOST, LP_SOLVE_TIME };
#define LP_SOLVE_LOST_WHY "stopped without an answer (it crashed, or overran its time limit by half)"
struct lp_solve_out {
	int status;
	double obj, bound;
	int nodes;   /* CBC's nodes; relaxed and LP_SOLVE_NONE: Clp's status */
};

/*
 * Solve in a child process, which writes its answer (struct lp_solve_out,
 * then one byte per column of rc[n_r], the solution rounded) to a pipe: a
 * solver that crashes (CBC 2.10's cut generators have segfaulted on
 * ResNet-50's model) or overruns its limit by half (it solves the LP
 * relaxation before it looks at the clock) costs the answer, not memplan.
 * The parent waits at most 1.5 x limit + 5 s, then kills it: *o gets
 * LP_SOLVE_LOST.  relax: every column taken as continuous, solved by Clp's
 * dual simplex (LP_SOLVE_OPTIMAL with o->bound its optimum, LP_SOLVE_TIME,
 * LP_SOLVE_INFEASIBLE, or LP_SOLVE_NONE with o->nodes Clp's status);
 * otherwise CBC from start (may be NULL), with o->obj and o->bound.
 */
void lp_solve_isolated(const struct lp *L, const double *start, double limit_s, const int *rc,
		       uint32_t n_r, bool relax, struct lp_solve_out *o, uint8_t *rval);

#endif
