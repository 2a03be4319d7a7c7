/*
 * lp: the model built row by row, and its solve by CBC (the MILP) or Clp
 * (an LP relaxation) in a child process (lp.h).
 */
#include "lp.h"

#include <coin/Cbc_C_Interface.h>
#include <coin/Clp_C_Interface.h>
#include <errno.h>
#include <float.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "planners.h"

/* A binary column, or (kind 'c') a continuous one in [0, ub].  Columns are
 * numbered from 1: 0 means none. */
int lp_col(struct lp *L, char kind, double ub, double obj)
{
	if (L->n_col + 1 >= L->col_cap) {
		L->col_cap = L->col_cap ? 2 * L->col_cap : 1024;
		L->col_ub = mp_xrealloc(L->col_ub, L->col_cap * sizeof(*L->col_ub));
		L->obj = mp_xrealloc(L->obj, L->col_cap * sizeof(*L->obj));
		L->is_int = mp_xrealloc(L->is_int, L->col_cap);
	}
	L->col_ub[L->n_col] = kind == 'c' ? ub : 1.0;
	L->obj[L->n_col] = obj;
	L->is_int[L->n_col] = kind != 'c';
	return (int)++L->n_col;
}

void lp_row_add(struct lp_row *R, int col, double a)
{
	if (!col)
		return;
	if (R->n + 1 >= R->cap) {
		R->cap = R->cap ? 2 * R->cap : 64;
		R->col = mp_xrealloc(R->col, R->cap * sizeof(*R->col));
		R->a = mp_xrealloc(R->a, R->cap * sizeof(*R->a));
	}
	R->col[R->n] = col;
	R->a[R->n++] = a;
}

/* Emit the row as sum <= bound, >= bound or = bound; clear it. */
void lp_row_emit(struct lp *L, struct lp_row *R, int type, double bound)
{
	if (L->n_row + 1 >= L->row_cap) {
		L->row_cap = L->row_cap ? 2 * L->row_cap : 1024;
		L->row_lo = mp_xrealloc(L->row_lo, L->row_cap * sizeof(*L->row_lo));
		L->row_hi = mp_xrealloc(L->row_hi, L->row_cap * sizeof(*L->row_hi));
	}
	L->row_lo[L->n_row] = type == LP_LE ? -DBL_MAX : bound;
	L->row_hi[L->n_row] = type == LP_GE ? DBL_MAX : bound;
	if (L->n_nz + R->n + 1 >= L->nz_cap) {
		while (L->n_nz + R->n + 1 >= L->nz_cap)
			L->nz_cap = L->nz_cap ? 2 * L->nz_cap : 4096;
		L->ti = mp_xrealloc(L->ti, L->nz_cap * sizeof(*L->ti));
		L->tj = mp_xrealloc(L->tj, L->nz_cap * sizeof(*L->tj));
		L->tv = mp_xrealloc(L->tv, L->nz_cap * sizeof(*L->tv));
	}
	for (uint32_t k = 0; k < R->n; k++) {
		L->ti[L->n_nz] = (int)L->n_row;
		L->tj[L->n_nz] = R->col[k] - 1;
		L->tv[L->n_nz++] = R->a[k];
	}
	L->n_row++;
	R->n = 0;
}

void lp_free(struct lp *L)
{
	free(L->col_ub);
	free(L->obj);
	free(L->is_int);
	free(L->row_lo);
	free(L->row_hi);
	free(L->ti);
	free(L->tj);
	free(L->tv);
}

void lp_row2(struct lp *L, struct lp_row *R, int type, double bound, int c1, double a1, int c2, double a2)
{
	lp_row_add(R, c1, a1);
	lp_row_add(R, c2, a2);
	lp_row_emit(L, R, type, bound);
}

/* The model's matrix by columns, as CBC and Clp load it. */
struct lp_cols {
	CoinBigIndex *start;
	int *index;
	double *value, *lb;
};

static void lp_cols(const struct lp *L, struct lp_cols *M)
{
	uint32_t *fill = mp_xcalloc(L->n_col + 1, sizeof(*fill));

	M->start = mp_xcalloc(L->n_col + 2, sizeof(*M->start));
	M->index = mp_xmalloc((L->n_nz + 1) * sizeof(*M->index));
	M->value = mp_xmalloc((L->n_nz + 1) * sizeof(*M->value));
	M->lb = mp_xcalloc(L->n_col + 1, sizeof(*M->lb));
	for (uint32_t k = 0; k < L->n_nz; k++)
		M->start[L->tj[k] + 1]++;
	for (uint32_t j = 0; j < L->n_col; j++)
		M->start[j + 1] += M->start[j];
	for (uint32_t k = 0; k < L->n_nz; k++) {
		CoinBigIndex at = M->start[L->tj[k]] + fill[L->tj[k]]++;

		M->index[at] = L->ti[k];
		M->value[at] = L->tv[k];
	}
	free(fill);
}

static void lp_cols_free(struct lp_cols *M)
{
	free(M->start);
	free(M->index);
	free(M->value);
	free(M->lb);
}

/* Hand the model to CBC, with the time limit. */
static Cbc_Model *cbc_model(const struct lp *L, double limit_s)
{
	Cbc_Model *m = Cbc_newModel();
	struct lp_cols M;

	lp_cols(L, &M);
	Cbc_loadProblem(m, (int)L->n_col, (int)L->n_row, M.start, M.index, M.value, M.lb, L->col_ub, L->obj,
			L->row_lo, L->row_hi);
	for (uint32_t j = 0; j < L->n_col; j++)
		if (L->is_int[j])
			Cbc_setInteger(m, (int)j);
	Cbc_setLogLevel(m, 0);
	Cbc_setMaximumSeconds(m, limit_s);
	Cbc_setParameter(m, "threads", "1");
	Cbc_setParameter(m, "timeMode", "elapsed"); /* wall time, as the parent's deadline */
	lp_cols_free(&M);
	return m;
}

/* The model's LP relaxation (every column continuous in its bounds),
 * solved by Clp, the LP solver under CBC: its dual simplex after presolve
 * solves ResNet-50's 127k columns in about a minute, where CBC's root
 * takes several before it looks at the clock.  *a: LP_SOLVE_INFEASIBLE,
 * LP_SOLVE_OPTIMAL with a->bound, LP_SOLVE_TIME (the limit came first), or
 * LP_SOLVE_NONE with a->nodes Clp's status (it gave up otherwise); at an
 * optimum the columns rc[n_r], rounded, into out. */
static void clp_relaxation(const struct lp *L, double limit_s, const int *rc, uint32_t n_r,
			   struct lp_solve_out *a, char *out)
{
	Clp_Simplex *m = Clp_newModel();
	struct lp_cols M;

	lp_cols(L, &M);
	Clp_loadProblem(m, (int)L->n_col, (int)L->n_row, M.start, M.index, M.value, M.lb, L->col_ub, L->obj,
			L->row_lo, L->row_hi);
	lp_cols_free(&M);
	Clp_setLogLevel(m, 0);
	Clp_setMaximumSeconds(m, limit_s);
	Clp_initialDualSolve(m);
	if (Clp_isProvenPrimalInfeasible(m)) {
		a->status = LP_SOLVE_INFEASIBLE;
	} else if (Clp_isProvenOptimal(m)) {
		a->status = LP_SOLVE_OPTIMAL;
		a->bound = Clp_objectiveValue(m);
		for (uint32_t c = 0; c < n_r; c++)
			out[c] = Clp_getColSolution(m)[rc[c] - 1] > 0.5;
	} else {
		a->status = Clp_status(m) == 3 ? LP_SOLVE_TIME : LP_SOLVE_NONE; /* 3: stopped on a limit */
		a->nodes = Clp_status(m);
	}
	Clp_deleteModel(m);
}

bool lp_feasible(const struct lp *L, const double *v)
{
	double *act = mp_xcalloc(L->n_row + 1, sizeof(*act));
	bool ok = true;

	for (uint32_t k = 0; k < L->n_nz; k++)
		act[L->ti[k]] += L->tv[k] * v[L->tj[k]];
	for (uint32_t i = 0; i < L->n_row && ok; i++)
		ok = act[i] >= L->row_lo[i] - 1e-6 && act[i] <= L->row_hi[i] + 1e-6;
	for (uint32_t j = 0; j < L->n_col && ok; j++)
		ok = v[j] >= -1e-9 && v[j] <= L->col_ub[j] + 1e-6;
	free(act);
	return ok;
}

/* Write all of buf, or give up. */
static void write_all(int fd, const void *buf, size_t n)
{
	const char *p = buf;

	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

/* The child's answer travels through a pipe (lp.h). */
void lp_solve_isolated(const struct lp *L, const double *start, double limit_s, const int *rc,
		       uint32_t n_r, bool relax, struct lp_solve_out *o, uint8_t *rval)
{
	size_t want = sizeof(*o) + n_r, got = 0;
	char *buf = mp_xmalloc(want + 1);
	double deadline = plan_now_s() + 1.5 * limit_s + 5;
	int fd[2];
	pid_t pid;

	o->status = LP_SOLVE_LOST;
	fflush(stdout);
	fflush(stderr);
	if (pipe(fd) < 0 || (pid = fork()) < 0) {
		free(buf);
		return;
	}
	if (pid == 0) {
		Cbc_Model *m;
		struct lp_solve_out a = { LP_SOLVE_NONE, 0, 0, 0 };

		close(fd[0]);
		if (relax) {
			memset(buf + sizeof(a), 0, n_r);
			clp_relaxation(L, limit_s, rc, n_r, &a, buf + sizeof(a));
			memcpy(buf, &a, sizeof(a));
			write_all(fd[1], buf, want);
			_exit(0);
		}
		m = cbc_model(L, limit_s);
		if (start) {
			int *idx = mp_xmalloc((L->n_col + 1) * sizeof(*idx));

			for (uint32_t j = 0; j < L->n_col; j++)
				idx[j] = (int)j;
			Cbc_setMIPStartI(m, (int)L->n_col, idx, start);
		}
		Cbc_solve(m);
		a.nodes = Cbc_getNodeCount(m);
		if (Cbc_isProvenInfeasible(m)) {
			a.status = LP_SOLVE_INFEASIBLE;
		} else if (Cbc_numberSavedSolutions(m) >= 1 && Cbc_getColSolution(m)) {
			const double *x = Cbc_getColSolution(m);

			a.status = Cbc_isProvenOptimal(m) ? LP_SOLVE_OPTIMAL : LP_SOLVE_FEASIBLE;
			a.obj = Cbc_getObjValue(m);
			a.bound = Cbc_getBestPossibleObjValue(m);
			for (uint32_t c = 0; c < n_r; c++)
				buf[sizeof(a) + c] = x[rc[c] - 1] > 0.5;
		}
		memcpy(buf, &a, sizeof(a));
		write_all(fd[1], buf, want);
		_exit(0); /* no atexit handlers, no leak report of CBC's */
	}
	close(fd[1]);
	while (got < want) {
		double left = deadline - plan_now_s();
		struct pollfd pfd = { fd[0], POLLIN, 0 };
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) <= 0) {
			if (left <= 0 || errno != EINTR)
				break;
			continue;
		}
		n = read(fd[0], buf + got, want - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd[0]);
	if (got < want)
		kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
	if (got == want) {
		memcpy(o, buf, sizeof(*o));
		if (n_r) /* (rval may be NULL then) */
			memcpy(rval, buf + sizeof(*o), n_r);
	}
	free(buf);
}

void lp_row_release(struct lp_row *R)
{
	free(R->col);
	free(R->a);
	memset(R, 0, sizeof(*R));
}
