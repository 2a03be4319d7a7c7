/*
 * mu-cuDNN micro-batching (Oyama et al. 3.1-3.5).
 *   WR (3.2): the dynamic program over b = 1..B for the fastest configuration
 *     within one workspace limit: O(|S| |A|) perf calls, O(B |S|) time.
 *   Desirable sets (3.3.1): the same recursion over sets, pruned by D at
 *     every b: O(B |S| |U| P (log P + P)) worst case, P <= |S| |A| the
 *     largest front kept (in practice ~10: about 1 ms per kernel at B = 256,
 *     power-of-two sizes and 8 algorithms).
 *   WD (3.3, 3.5): the 0-1 ILP of Eq. 1-4 over the desirable sets, solved by
 *     GLPK: exponential in the worst case like any knapsack, a few
 *     milliseconds for 50 kernels of ~10 configurations.
 * S: the candidate micro-batch sizes, A: the algorithms, U: the Pareto front
 * of the micro-configurations of one size (<= |A|).
 */
#include "ucudnn.h"

#include <glpk.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NONE UINT32_MAX
/* GLPK works in MiB: byte coefficients would span too many decades. */
#define MIB 1048576.0
/* Combinations cut off, one per re-solve, when GLPK's tolerances let a
 * solution exceed the limit by a few bytes (each is within ~1e-5 of it). */
#define MAX_CUTS 64

/* A measured micro-configuration that fits the workspace limit. */
struct micro_perf {
	uint32_t b, algo;
	double ms;
	uint64_t ws;
};

/* The micro-configurations of a kernel, grouped by candidate size. */
struct table {
	uint32_t n_size;
	uint32_t *size;          /* [n_size] distinct, ascending */
	uint32_t *first;         /* [n_size + 1] group i is mc[first[i] .. first[i+1]) */
	struct micro_perf *mc;   /* algorithms ascending within a group */
};

static void table_release(struct table *t)
{
	free(t->size);
	free(t->first);
	free(t->mc);
	memset(t, 0, sizeof(*t));
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

/* Validate k, sort and deduplicate its sizes, and call perf once for each
 * (size, algorithm), keeping those available with workspace <= ws_limit. */
static int table_measure(const struct ucudnn_kernel *k, uint64_t ws_limit,
			 struct table *t, struct mp_error *err)
{
	uint32_t n = 0, cap = 0, i;

	memset(t, 0, sizeof(*t));
	if (!k || k->batch == 0) {
		mp_error_set(err, "mini-batch size must be at least 1");
		return -1;
	}
	if (k->n_algos == 0) {
		mp_error_set(err, "no convolution algorithms");
		return -1;
	}
	if (!k->sizes || k->n_sizes == 0) {
		mp_error_set(err, "no candidate micro-batch sizes");
		return -1;
	}
	if (!k->perf) {
		mp_error_set(err, "no performance callback");
		return -1;
	}
	for (i = 0; i < k->n_sizes; i++) {
		if (k->sizes[i] == 0 || k->sizes[i] > k->batch) {
			mp_error_set(err, "micro-batch size %u is outside 1..%u",
				     k->sizes[i], k->batch);
			return -1;
		}
	}
	t->size = mp_xmalloc((size_t)k->n_sizes * sizeof(*t->size));
	memcpy(t->size, k->sizes, (size_t)k->n_sizes * sizeof(*t->size));
	qsort(t->size, k->n_sizes, sizeof(*t->size), cmp_u32);
	for (i = 0; i < k->n_sizes; i++)
		if (t->n_size == 0 || t->size[t->n_size - 1] != t->size[i])
			t->size[t->n_size++] = t->size[i];
	t->first = mp_xmalloc(((size_t)t->n_size + 1) * sizeof(*t->first));
	for (i = 0; i < t->n_size; i++) {
		t->first[i] = n;
		for (uint32_t a = 0; a < k->n_algos; a++) {
			double ms = 0;
			uint64_t ws = 0;

			if (k->perf(k->ctx, t->size[i], a, &ms, &ws) != 0)
				continue;
			if (!isfinite(ms) || ms < 0) {
				mp_error_set(err, "algorithm %u at micro-batch %u: time %g ms is not a duration",
					     a, t->size[i], ms);
				table_release(t);
				return -1;
			}
			if (ws > ws_limit)
				continue;
			mp_grow((void **)&t->mc, &cap, n + 1, sizeof(*t->mc));
			t->mc[n++] = (struct micro_perf){ t->size[i], a, ms, ws };
		}
	}
	t->first[t->n_size] = n;
	return 0;
}

static int cmp_micro(const void *a, const void *b)
{
	const struct ucudnn_micro *x = a, *y = b;

	if (x->batch != y->batch)
		return x->batch > y->batch ? -1 : 1;
	return (x->algo > y->algo) - (x->algo < y->algo);
}

static void config_set(struct ucudnn_config *c, struct ucudnn_micro *m,
		       uint32_t n, double ms, uint64_t ws)
{
	qsort(m, n, sizeof(*m), cmp_micro);
	c->n = n;
	c->micro = m;
	c->ms = ms;
	c->ws_bytes = ws;
}

static void no_fit(const struct ucudnn_kernel *k, uint64_t ws_limit,
		   struct mp_error *err)
{
	char buf[32];

	if (ws_limit == UINT64_MAX)
		mp_error_set(err, "no configuration of mini-batch %u: no algorithm runs at sizes that sum to it",
			     k->batch);
	else
		mp_error_set(err, "no configuration of mini-batch %u fits workspace limit %s",
			     k->batch, mp_fmt_bytes(ws_limit, buf, sizeof(buf)));
}

/* 3.4: "all" b in {1, ..., B}; "powerOfTwo" b in {2^0, 2^1, ..., B};
 * "undivided" b = B. */
uint32_t *ucudnn_sizes(uint32_t batch, enum ucudnn_policy policy, uint32_t *n)
{
	uint32_t *b, k = 0;

	MP_ASSERT(batch >= 1);
	switch (policy) {
	case UCUDNN_ALL:
		b = mp_xmalloc((size_t)batch * sizeof(*b));
		for (uint32_t s = 1; s <= batch && s != 0; s++)
			b[k++] = s;
		break;
	case UCUDNN_POW2:
		b = mp_xmalloc(33 * sizeof(*b));
		for (uint64_t s = 1; s < batch; s *= 2)
			b[k++] = (uint32_t)s;
		b[k++] = batch;
		break;
	default:
		b = mp_xmalloc(sizeof(*b));
		b[k++] = batch;
		break;
	}
	*n = k;
	return b;
}

void ucudnn_config_release(struct ucudnn_config *c)
{
	if (!c)
		return;
	free(c->micro);
	memset(c, 0, sizeof(*c));
}

void ucudnn_configs_free(struct ucudnn_config *c, uint32_t n)
{
	if (!c)
		return;
	for (uint32_t i = 0; i < n; i++)
		ucudnn_config_release(&c[i]);
	free(c);
}

/* ---- WR ---------------------------------------------------------------- */

/* One DP cell: the best configuration of b samples found so far. */
struct wr_cell {
	double ms;
	uint64_t ws;
	uint32_t n;     /* micro-batches; NONE: b is unreachable */
	uint32_t pick;  /* index in table.mc of the micro-batch split off */
};

/* (ms, n, ws) lexicographic: additive, additive, max, so the order is kept
 * when the same micro-batch is added to both sides and the DP stays exact. */
static int wr_better(const struct wr_cell *x, const struct wr_cell *y)
{
	if (y->n == NONE)
		return 1;
	if (x->ms != y->ms)
		return x->ms < y->ms;
	if (x->n != y->n)
		return x->n < y->n;
	return x->ws < y->ws;
}

int ucudnn_wr(const struct ucudnn_kernel *k, uint64_t ws_limit,
	      struct ucudnn_config *out, struct mp_error *err)
{
	struct table t;
	struct wr_cell *cell;
	uint32_t *best, i, b;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (table_measure(k, ws_limit, &t, err) < 0)
		return -1;
	/* T_u(s), c_u(s): the fastest algorithm at each size, then the one with
	 * less workspace, then the lower index (mc is by algorithm). */
	best = mp_xmalloc((size_t)t.n_size * sizeof(*best));
	for (i = 0; i < t.n_size; i++) {
		best[i] = NONE;
		for (uint32_t j = t.first[i]; j < t.first[i + 1]; j++) {
			const struct micro_perf *m = &t.mc[j];

			if (best[i] == NONE || m->ms < t.mc[best[i]].ms ||
			    (m->ms == t.mc[best[i]].ms && m->ws < t.mc[best[i]].ws))
				best[i] = j;
		}
	}
	cell = mp_xmalloc(((size_t)k->batch + 1) * sizeof(*cell));
	cell[0] = (struct wr_cell){ 0, 0, 0, NONE };
	for (b = 1; b <= k->batch; b++) {
		cell[b] = (struct wr_cell){ 0, 0, NONE, NONE };
		for (i = 0; i < t.n_size && t.size[i] <= b; i++) {
			const struct wr_cell *r = &cell[b - t.size[i]];
			const struct micro_perf *m;
			struct wr_cell c;

			if (best[i] == NONE || r->n == NONE)
				continue;
			m = &t.mc[best[i]];
			c = (struct wr_cell){ m->ms + r->ms, m->ws > r->ws ? m->ws : r->ws,
					      r->n + 1, best[i] };
			if (wr_better(&c, &cell[b]))
				cell[b] = c;
		}
	}
	if (cell[k->batch].n == NONE) {
		no_fit(k, ws_limit, err);
	} else {
		struct ucudnn_micro *m = mp_xmalloc((size_t)cell[k->batch].n * sizeof(*m));
		uint32_t n = 0;

		for (b = k->batch; b > 0; b -= t.mc[cell[b].pick].b)
			m[n++] = (struct ucudnn_micro){ t.mc[cell[b].pick].b, t.mc[cell[b].pick].algo };
		config_set(out, m, n, cell[k->batch].ms, cell[k->batch].ws);
		rc = 0;
	}
	free(cell);
	free(best);
	table_release(&t);
	return rc;
}

/* ---- Desirable sets ---------------------------------------------------- */

/* A configuration in the front of some b, as a chain: one micro-batch and
 * the front node of the samples that remain. */
struct node {
	double ms;
	uint64_t ws;
	uint32_t n;     /* micro-batches */
	uint32_t mc;    /* table.mc index; NONE for the empty configuration */
	uint32_t prev;  /* node index of the rest; NONE for the empty one */
};

/* (ms, n) of x lexicographically <= that of y. */
static int faster_eq(const struct node *x, const struct node *y)
{
	return x->ms < y->ms || (x->ms == y->ms && x->n <= y->n);
}

/*
 * D, one candidate at a time (3.3.1 (i)-(iv)), with time taken as the pair
 * (ms, n) lexicographically.  f[0..*nf) is the front: workspace strictly
 * ascending, (ms, n) strictly descending.  c is dropped if some f has no more
 * workspace and is no slower (an identical earlier candidate wins: ties go to
 * generation order); else it goes in and every f with at least its workspace
 * and no better time goes out.  O(log P + P).
 *
 * Keeping (ms, n) rather than ms alone costs a few extra points and makes the
 * final front's representatives have the fewest micro-batches: (ms, n) is
 * additive and ws is a max, so dominance survives adding a micro-batch and
 * pruning at every b never loses a point of the final front.
 */
static void front_add(struct node *f, uint32_t *nf, const struct node *c)
{
	uint32_t lo = 0, hi = *nf, q, r;

	/* lo = first with ws > c->ws */
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (f[mid].ws <= c->ws)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo > 0 && faster_eq(&f[lo - 1], c))
		return;
	/* q = first with ws >= c->ws (at most one has ws == c->ws) */
	q = lo > 0 && f[lo - 1].ws == c->ws ? lo - 1 : lo;
	for (r = q; r < *nf && faster_eq(c, &f[r]); r++)
		;
	memmove(&f[q + 1], &f[r], (size_t)(*nf - r) * sizeof(*f));
	f[q] = *c;
	*nf += 1 - (r - q);
}

int ucudnn_desirable(const struct ucudnn_kernel *k, uint64_t ws_limit,
		     struct ucudnn_config **out, uint32_t *n_out,
		     struct mp_error *err)
{
	struct table t;
	struct node *all = NULL, *f;
	uint32_t cap_all = 0, n_all = 0, n_mc;
	uint32_t *start, *count, *u_first, *u, n_u = 0, i, b;
	int rc = -1;

	*out = NULL;
	*n_out = 0;
	if (table_measure(k, ws_limit, &t, err) < 0)
		return -1;
	n_mc = t.first[t.n_size];
	/* a front's workspaces are distinct micro-configuration workspaces (a
	 * configuration's is one of its micro-batches'), or 0 for b = 0 */
	f = mp_xmalloc(((size_t)n_mc + 1) * sizeof(*f));

	/* C_u(s) pruned by D: at one size, by workspace alone (n = 1) */
	u = mp_xmalloc(((size_t)n_mc + 1) * sizeof(*u));
	u_first = mp_xmalloc(((size_t)t.n_size + 1) * sizeof(*u_first));
	for (i = 0; i < t.n_size; i++) {
		uint32_t nf = 0;

		for (uint32_t j = t.first[i]; j < t.first[i + 1]; j++) {
			struct node c = { t.mc[j].ms, t.mc[j].ws, 1, j, NONE };

			front_add(f, &nf, &c);
		}
		u_first[i] = n_u;
		for (uint32_t j = 0; j < nf; j++)
			u[n_u++] = f[j].mc;
	}
	u_first[t.n_size] = n_u;

	/* Fronts: front b is all[start[b] .. start[b] + count[b]). */
	start = mp_xmalloc(((size_t)k->batch + 1) * sizeof(*start));
	count = mp_xmalloc(((size_t)k->batch + 1) * sizeof(*count));
	mp_grow((void **)&all, &cap_all, 1, sizeof(*all));
	all[n_all++] = (struct node){ 0, 0, 0, NONE, NONE };
	start[0] = 0;
	count[0] = 1;
	for (b = 1; b <= k->batch; b++) {
		uint32_t nf = 0;

		for (i = 0; i < t.n_size && t.size[i] <= b; i++) {
			uint32_t r0 = start[b - t.size[i]], r1 = r0 + count[b - t.size[i]];

			for (uint32_t j = u_first[i]; j < u_first[i + 1]; j++) {
				const struct micro_perf *mc = &t.mc[u[j]];
				uint32_t lo = r0, hi = r1;

				if (r0 == r1)
					break;
				/* every rest with ws <= mc->ws gives ws = mc->ws, and
				 * the last of them is the fastest: start there */
				while (lo < hi) {
					uint32_t mid = lo + (hi - lo) / 2;

					if (all[mid].ws <= mc->ws)
						lo = mid + 1;
					else
						hi = mid;
				}
				for (uint32_t r = lo > r0 ? lo - 1 : r0; r < r1; r++) {
					struct node c = {
						mc->ms + all[r].ms,
						mc->ws > all[r].ws ? mc->ws : all[r].ws,
						all[r].n + 1, u[j], r };

					front_add(f, &nf, &c);
				}
			}
		}
		mp_grow((void **)&all, &cap_all, n_all + nf, sizeof(*all));
		memcpy(all + n_all, f, (size_t)nf * sizeof(*all));
		start[b] = n_all;
		count[b] = nf;
		n_all += nf;
	}

	/* The (ms, n) front of B, ws ascending, becomes the ms front: keep each
	 * point strictly faster than the one before. */
	if (count[k->batch] == 0) {
		no_fit(k, ws_limit, err);
	} else {
		const struct node *fb = all + start[k->batch];
		uint32_t nb = count[k->batch], n = 0;
		double last_ms = 0;

		*out = mp_xcalloc(nb, sizeof(**out));
		for (i = 0; i < nb; i++) {
			struct ucudnn_micro *mb;
			uint32_t nm = 0;

			if (n > 0 && !(fb[i].ms < last_ms))
				continue;
			last_ms = fb[i].ms;
			mb = mp_xmalloc((size_t)fb[i].n * sizeof(*mb));
			for (const struct node *p = &fb[i]; p->mc != NONE; p = &all[p->prev])
				mb[nm++] = (struct ucudnn_micro){ t.mc[p->mc].b, t.mc[p->mc].algo };
			MP_ASSERT(nm == fb[i].n);
			config_set(&(*out)[n++], mb, nm, fb[i].ms, fb[i].ws);
		}
		*n_out = n;
		rc = 0;
	}
	free(start);
	free(count);
	free(all);
	free(f);
	free(u);
	free(u_first);
	table_release(&t);
	return rc;
}

/* ---- WD ---------------------------------------------------------------- */

/*
 * Eq. 1-4 with each kernel's fastest time and smallest workspace taken out:
 * min sum (T_kc - T_k,fast) x_kc s.t. sum (M_kc - M_k,min) x_kc <= room,
 * sum_c x_kc = 1, x binary.  The offsets keep coefficients small and make the
 * first configuration of every kernel cost nothing in the workspace row.
 * GLPK accepts a solution within its tolerances (x integral to 1e-5, rows to
 * ~1e-7), so a combination a few bytes over room can come back: each such
 * combination is checked in bytes and cut off exactly (sum over its columns
 * <= n_k - 1) before solving again.  Fills pick[k]; returns 0, or -1 with
 * *err.
 */
static int wd_ilp(struct ucudnn_config *const *set, const uint32_t *n_set,
		  uint32_t n_k, uint64_t room, uint32_t *pick, struct mp_error *err)
{
	glp_prob *lp = glp_create_prob();
	glp_smcp smcp;
	glp_iocp iocp;
	int *ia, *ja, n_nz = 0, col = 0, rc = -1, code, cuts = 0;
	double *ar;
	uint32_t n_col = 0, *col0;

	col0 = mp_xmalloc((size_t)n_k * sizeof(*col0));
	for (uint32_t k = 0; k < n_k; k++) {
		col0[k] = n_col + 1;
		n_col += n_set[k];
	}
	/* one entry in the workspace row, one in the kernel's row, per column;
	 * GLPK's arrays are 1-based */
	ia = mp_xmalloc(((size_t)n_col * 2 + 1) * sizeof(*ia));
	ja = mp_xmalloc(((size_t)n_col * 2 + 1) * sizeof(*ja));
	ar = mp_xmalloc(((size_t)n_col * 2 + 1) * sizeof(*ar));

	glp_set_obj_dir(lp, GLP_MIN);
	glp_add_rows(lp, (int)n_k + 1);
	glp_set_row_bnds(lp, 1, GLP_UP, 0.0, (double)room / MIB); /* Eq. 2 */
	for (uint32_t k = 0; k < n_k; k++)
		glp_set_row_bnds(lp, (int)k + 2, GLP_FX, 1.0, 1.0);  /* Eq. 3 */
	glp_add_cols(lp, (int)n_col);
	for (uint32_t k = 0; k < n_k; k++) {
		const struct ucudnn_config *c = set[k];
		double fast = c[n_set[k] - 1].ms;

		for (uint32_t j = 0; j < n_set[k]; j++) {
			col++;
			glp_set_col_kind(lp, col, GLP_BV);           /* Eq. 4 */
			glp_set_obj_coef(lp, col, c[j].ms - fast);  /* Eq. 1 */
			if (c[j].ws_bytes > c[0].ws_bytes) {
				n_nz++;
				ia[n_nz] = 1;
				ja[n_nz] = col;
				ar[n_nz] = (double)(c[j].ws_bytes - c[0].ws_bytes) / MIB;
			}
			n_nz++;
			ia[n_nz] = (int)k + 2;
			ja[n_nz] = col;
			ar[n_nz] = 1.0;
		}
	}
	glp_load_matrix(lp, n_nz, ia, ja, ar);

	glp_init_smcp(&smcp);
	smcp.msg_lev = GLP_MSG_OFF;
	glp_init_iocp(&iocp);
	iocp.msg_lev = GLP_MSG_OFF;
	for (;;) {
		uint64_t used = 0;
		int row;

		code = glp_simplex(lp, &smcp);
		if (code != 0 || glp_get_status(lp) != GLP_OPT) {
			mp_error_set(err, "glpk: LP relaxation failed (glp_simplex %d, status %d)",
				     code, glp_get_status(lp));
			break;
		}
		code = glp_intopt(lp, &iocp);
		if (code != 0 || glp_mip_status(lp) != GLP_OPT) {
			mp_error_set(err, "glpk: integer optimisation failed (glp_intopt %d, status %d)",
				     code, glp_mip_status(lp));
			break;
		}
		for (uint32_t k = 0; k < n_k; k++) {
			pick[k] = NONE;
			for (uint32_t j = 0; j < n_set[k]; j++) {
				if (glp_mip_col_val(lp, (int)(col0[k] + j)) > 0.5) {
					MP_ASSERT(pick[k] == NONE);
					pick[k] = j;
				}
			}
			MP_ASSERT(pick[k] != NONE);
			if (mp_add_u64(used, set[k][pick[k]].ws_bytes - set[k][0].ws_bytes, &used) < 0)
				used = UINT64_MAX;
		}
		if (used <= room) {
			rc = 0;
			break;
		}
		if (++cuts > MAX_CUTS) {
			mp_error_set(err, "glpk: %d solutions in a row exceed the workspace limit by a few bytes",
				     cuts);
			break;
		}
		/* cut off this combination: the kernels' columns with x = 1 */
		row = glp_add_rows(lp, 1);
		glp_set_row_bnds(lp, row, GLP_UP, 0.0, (double)n_k - 1.0);
		for (uint32_t k = 0; k < n_k; k++) {
			ja[k + 1] = (int)(col0[k] + pick[k]);
			ar[k + 1] = 1.0;
		}
		glp_set_mat_row(lp, row, (int)n_k, ja, ar);
	}
	free(col0);
	free(ia);
	free(ja);
	free(ar);
	glp_delete_prob(lp);
	return rc;
}

int ucudnn_wd(const struct ucudnn_kernel *ks, uint32_t n_kernels,
	      uint64_t total_limit, struct ucudnn_config *out,
	      struct mp_error *err)
{
	struct ucudnn_config **set;
	uint32_t *n_set, *pick, k;
	uint64_t min_sum = 0, max_sum = 0;
	int min_overflow = 0, max_overflow = 0, rc = -1, code;

	if (n_kernels == 0)
		return 0;
	memset(out, 0, (size_t)n_kernels * sizeof(*out));
	set = mp_xcalloc(n_kernels, sizeof(*set));
	n_set = mp_xcalloc(n_kernels, sizeof(*n_set));
	pick = mp_xcalloc(n_kernels, sizeof(*pick));
	for (k = 0; k < n_kernels; k++) {
		if (ucudnn_desirable(&ks[k], total_limit, &set[k], &n_set[k], err) < 0) {
			mp_error_prefix(err, "kernel %u: ", k);
			goto out;
		}
		if (mp_add_u64(min_sum, set[k][0].ws_bytes, &min_sum) < 0)
			min_overflow = 1;
		if (mp_add_u64(max_sum, set[k][n_set[k] - 1].ws_bytes, &max_sum) < 0)
			max_overflow = 1;
	}
	if (min_overflow || min_sum > total_limit) {
		char lb[32], mb[32];

		mp_error_set(err, "total workspace limit %s is below %s, the sum of the %u kernels' smallest workspaces",
			     mp_fmt_bytes(total_limit, lb, sizeof(lb)),
			     min_overflow ? "2^64 B" : mp_fmt_bytes(min_sum, mb, sizeof(mb)),
			     n_kernels);
		goto out;
	}
	if (!max_overflow && max_sum <= total_limit) {
		/* no binding limit: every kernel takes its fastest */
		for (k = 0; k < n_kernels; k++)
			pick[k] = n_set[k] - 1;
	} else {
		/* the budget above each kernel's smallest workspace */
		int saved = glp_term_out(GLP_OFF);

		code = wd_ilp(set, n_set, n_kernels, total_limit - min_sum, pick, err);
		glp_term_out(saved);
		if (code < 0)
			goto out;
	}
	for (k = 0; k < n_kernels; k++) {
		out[k] = set[k][pick[k]];
		set[k][pick[k]] = (struct ucudnn_config){ 0 };
	}
	rc = 0;
out:
	for (k = 0; k < n_kernels; k++)
		ucudnn_configs_free(set[k], n_set[k]);
	free(set);
	free(n_set);
	free(pick);
	return rc;
}
