/*
 * Unit tests: mu-cuDNN micro-batching (plan/ucudnn).  A hand-worked kernel;
 * WR and the desirable set against brute force over every multiset of
 * micro-configurations (the order of micro-batches changes neither time nor
 * workspace, so multisets cover all compositions) on seeded random tables;
 * WD against exhaustive search on 3 kernels and against an exact knapsack DP
 * on 50.  Times are multiples of 1/8 ms so that sums are exact in any order.
 */
#include "../../plan/ucudnn.h"
#include "unit.h"

#include <stdlib.h>

#define MIB (UINT64_C(1) << 20)
#define MAX_B 16
#define MAX_A 4

/* A performance table: ms and workspace for b = 1..B, algorithms 0..A-1. */
struct ptab {
	uint32_t batch, n_algos;
	int ok[MAX_B + 1][MAX_A];
	double ms[MAX_B + 1][MAX_A];
	uint64_t ws[MAX_B + 1][MAX_A];
	uint32_t calls;
};

static int ptab_perf(void *ctx, uint32_t b, uint32_t a, double *ms, uint64_t *ws)
{
	struct ptab *p = ctx;

	p->calls++;
	if (b < 1 || b > p->batch || a >= p->n_algos || !p->ok[b][a])
		return -1;
	*ms = p->ms[b][a];
	*ws = p->ws[b][a];
	return 0;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint32_t rnd(uint32_t n)
{
	return unit_rnd(&rng, n);
}

enum { TAB_RANDOM, TAB_MICRO_WINS, TAB_MICRO_LOSES, TAB_MIB };

/*
 * TAB_RANDOM: each algorithm a cost a + b * rate + noise, a workspace that
 * grows with b, and 15% of (b, a) unavailable; algorithm 0 is sometimes a
 * zero-workspace fallback.  TAB_MICRO_WINS: algorithm 0 is slow without
 * workspace, the others are fast with workspace proportional to b, so a
 * limit admits them only at small b.  TAB_MICRO_LOSES: a large per-call
 * overhead, so splitting never pays.  TAB_MIB: like TAB_RANDOM, workspace in
 * whole MiB (at least 1) and algorithm 0 always available.
 */
static void ptab_make(struct ptab *p, uint32_t batch, uint32_t n_algos, int style)
{
	int fallback = style == TAB_RANDOM && rnd(2);

	memset(p, 0, sizeof(*p));
	p->batch = batch;
	p->n_algos = n_algos;
	for (uint32_t a = 0; a < n_algos; a++) {
		uint32_t over = 1 + rnd(24), rate = 2 + rnd(14), wsr = 1 + rnd(8);

		for (uint32_t b = 1; b <= batch; b++) {
			switch (style) {
			case TAB_RANDOM:
			case TAB_MIB:
				p->ok[b][a] = rnd(100) >= 15 || (style == TAB_MIB && a == 0);
				p->ms[b][a] = (over + rate * b + rnd(6)) / 8.0;
				p->ws[b][a] = style == TAB_MIB ? (1 + wsr * b / 2 + rnd(3)) * MIB
					      : wsr * b * MIB / 2 + rnd(4096);
				if (fallback && a == 0)
					p->ws[b][a] = 0;
				break;
			case TAB_MICRO_WINS:
				p->ok[b][a] = 1;
				if (a == 0) {
					p->ms[b][a] = (4 + 32 * b) / 8.0;
					p->ws[b][a] = 0;
				} else {
					p->ms[b][a] = (over + rate * b) / 8.0;
					p->ws[b][a] = wsr * b * MIB;
				}
				break;
			case TAB_MICRO_LOSES:
				p->ok[b][a] = 1;
				p->ms[b][a] = (64 + over + b) / 8.0;
				p->ws[b][a] = (a + b) * 1024;
				break;
			}
		}
	}
}

static struct ucudnn_kernel kernel_of(struct ptab *p, const uint32_t *sizes, uint32_t n_sizes)
{
	return (struct ucudnn_kernel){ p->batch, p->n_algos, sizes, n_sizes, ptab_perf, p };
}

/* ---- brute force -------------------------------------------------------- */

struct item { uint32_t b, a; double ms; uint64_t ws; };

/* Per distinct workspace value: the lexicographically smallest (ms, n) of the
 * configurations whose largest micro-batch workspace is exactly that value. */
struct brute {
	struct item it[(MAX_B + 1) * MAX_A];
	uint32_t n_it;
	uint64_t wsv[(MAX_B + 1) * MAX_A];
	double best_ms[(MAX_B + 1) * MAX_A];
	uint32_t best_n[(MAX_B + 1) * MAX_A];
	int have[(MAX_B + 1) * MAX_A];
	uint32_t n_wsv;
	/* WR: (ms, n, ws) lexicographic minimum */
	int wr_have;
	double wr_ms;
	uint32_t wr_n;
	uint64_t wr_ws;
	uint64_t n_configs;
};

static void brute_visit(struct brute *s, double ms, uint32_t n, uint64_t ws)
{
	uint32_t i = 0;

	s->n_configs++;
	while (s->wsv[i] != ws)
		i++;
	if (!s->have[i] || ms < s->best_ms[i] || (ms == s->best_ms[i] && n < s->best_n[i])) {
		s->have[i] = 1;
		s->best_ms[i] = ms;
		s->best_n[i] = n;
	}
	if (!s->wr_have || ms < s->wr_ms || (ms == s->wr_ms && (n < s->wr_n ||
	    (n == s->wr_n && ws < s->wr_ws)))) {
		s->wr_have = 1;
		s->wr_ms = ms;
		s->wr_n = n;
		s->wr_ws = ws;
	}
}

/* Every multiset it[i0..] of total size rest: nondecreasing item index. */
static void brute_rec(struct brute *s, uint32_t i0, uint32_t rest, double ms,
		      uint32_t n, uint64_t ws)
{
	if (rest == 0) {
		brute_visit(s, ms, n, ws);
		return;
	}
	for (uint32_t i = i0; i < s->n_it; i++)
		if (s->it[i].b <= rest)
			brute_rec(s, i, rest - s->it[i].b, ms + s->it[i].ms, n + 1,
				  s->it[i].ws > ws ? s->it[i].ws : ws);
}

static void brute_run(struct brute *s, const struct ptab *p, const uint32_t *sizes,
		      uint32_t n_sizes, uint64_t limit)
{
	memset(s, 0, sizeof(*s));
	for (uint32_t b = 1; b <= p->batch; b++) {
		int listed = 0;

		for (uint32_t j = 0; j < n_sizes; j++)
			listed |= sizes[j] == b;
		for (uint32_t a = 0; listed && a < p->n_algos; a++) {
			uint32_t w = 0;

			if (!p->ok[b][a] || p->ws[b][a] > limit)
				continue;
			s->it[s->n_it++] = (struct item){ b, a, p->ms[b][a], p->ws[b][a] };
			while (w < s->n_wsv && s->wsv[w] != p->ws[b][a])
				w++;
			if (w == s->n_wsv)
				s->wsv[s->n_wsv++] = p->ws[b][a];
		}
	}
	brute_rec(s, 0, p->batch, 0, 0, 0);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* The brute-force Pareto front: ws ascending, ms strictly descending. */
static uint32_t brute_front(struct brute *s, double *ms, uint64_t *ws, uint32_t *n)
{
	uint64_t order[(MAX_B + 1) * MAX_A];
	uint32_t k = 0, m = 0;

	for (uint32_t i = 0; i < s->n_wsv; i++)
		if (s->have[i])
			order[m++] = s->wsv[i];
	qsort(order, m, sizeof(*order), cmp_u64);
	for (uint32_t j = 0; j < m; j++) {
		uint32_t i = 0;

		while (s->wsv[i] != order[j])
			i++;
		if (k == 0 || s->best_ms[i] < ms[k - 1]) {
			ms[k] = s->best_ms[i];
			ws[k] = s->wsv[i];
			n[k] = s->best_n[i];
			k++;
		}
	}
	return k;
}

/* A config is well formed: canonical order, sums to B, every micro-batch
 * available within limit, and ms / ws are its sum / max. */
static int config_valid(const struct ptab *p, const struct ucudnn_config *c, uint64_t limit)
{
	uint32_t sum = 0;
	double ms = 0;
	uint64_t ws = 0;

	if (c->n == 0 || !c->micro)
		return 0;
	for (uint32_t i = 0; i < c->n; i++) {
		const struct ucudnn_micro *m = &c->micro[i];

		if (m->batch < 1 || m->batch > p->batch || m->algo >= p->n_algos ||
		    !p->ok[m->batch][m->algo] || p->ws[m->batch][m->algo] > limit)
			return 0;
		if (i > 0 && (m->batch > c->micro[i - 1].batch ||
			      (m->batch == c->micro[i - 1].batch && m->algo < c->micro[i - 1].algo)))
			return 0;
		sum += m->batch;
		ms += p->ms[m->batch][m->algo];
		if (p->ws[m->batch][m->algo] > ws)
			ws = p->ws[m->batch][m->algo];
	}
	return sum == p->batch && ms == c->ms && ws == c->ws_bytes;
}

/* ---- tests -------------------------------------------------------------- */

/*
 * B = 4, sizes {1, 2, 4}.  Algorithm 0: 3b ms, no workspace.  Algorithm 1:
 * b + 1 ms, 10b MiB.
 *   limit 20 MiB: T_u(1) = 2 (a1), T_u(2) = 3 (a1), T_u(4) = 12 (a0; a1 needs
 *     40).  T(1) = 2, T(2) = min(3, 2+2) = 3, T(3) = min(2+3, 3+2) = 5,
 *     T(4) = min(2+T(3) = 7, 3+T(2) = 6, 12) = 6: {(2,1),(2,1)}, 20 MiB.
 *   no limit: T_u(4) = 5 wins: {(4,1)}, 40 MiB.
 *   limit 10 MiB: T_u(2) = min(a0 6, a1 -) = 6, T(2) = min(6, 2+2) = 4,
 *     T(3) = 6, T(4) = min(2+6, 6+4, 12) = 8: four (1,1), 10 MiB.
 *   limit 0: only a0, 12 ms whichever split: the tie goes to {(4,0)}.
 * Desirable set without a limit, (ms, MiB): (12, 0) {(4,0)}, (8, 10) four
 * (1,1), (6, 20) {(2,1),(2,1)}, (5, 40) {(4,1)}.
 * WD of two such kernels (choices summing workspaces):
 *   40 MiB: 20+20 -> 6+6 = 12 (40+0 -> 17, 20+10 -> 14);
 *   30 MiB: 20+10 -> 6+8 = 14;  25 MiB: 10+10 -> 16;  0: 24;  80 MiB: 10.
 */
static void hand_table(struct ptab *p)
{
	memset(p, 0, sizeof(*p));
	p->batch = 4;
	p->n_algos = 2;
	for (uint32_t b = 1; b <= 4; b++) {
		p->ok[b][0] = p->ok[b][1] = 1;
		p->ms[b][0] = 3.0 * b;
		p->ms[b][1] = b + 1.0;
		p->ws[b][1] = 10 * b * MIB;
	}
}

static void test_hand(void)
{
	static const uint32_t sizes[] = { 4, 1, 2, 2 }; /* any order, duplicates */
	struct ptab p;
	struct ucudnn_kernel k;
	struct ucudnn_config c, *set, two[2];
	struct mp_error err;
	uint32_t n;

	hand_table(&p);
	k = kernel_of(&p, sizes, 4);

	CHECK(ucudnn_wr(&k, 20 * MIB, &c, &err) == 0);
	CHECK_NEAR(c.ms, 6.0, 0);
	CHECK_U64(c.ws_bytes, 20 * MIB);
	CHECK_U64(c.n, 2);
	CHECK(c.micro[0].batch == 2 && c.micro[0].algo == 1);
	CHECK(c.micro[1].batch == 2 && c.micro[1].algo == 1);
	CHECK_U64(p.calls, 3 * 2); /* once per distinct size and algorithm */
	ucudnn_config_release(&c);

	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == 0);
	CHECK_NEAR(c.ms, 5.0, 0);
	CHECK_U64(c.ws_bytes, 40 * MIB);
	CHECK(c.n == 1 && c.micro[0].batch == 4 && c.micro[0].algo == 1);
	ucudnn_config_release(&c);

	CHECK(ucudnn_wr(&k, 10 * MIB, &c, &err) == 0);
	CHECK_NEAR(c.ms, 8.0, 0);
	CHECK_U64(c.ws_bytes, 10 * MIB);
	CHECK_U64(c.n, 4);
	ucudnn_config_release(&c);

	CHECK(ucudnn_wr(&k, 0, &c, &err) == 0);
	CHECK_NEAR(c.ms, 12.0, 0);
	CHECK_U64(c.ws_bytes, 0);
	CHECK(c.n == 1 && c.micro[0].batch == 4 && c.micro[0].algo == 0);
	ucudnn_config_release(&c);

	CHECK(ucudnn_desirable(&k, UINT64_MAX, &set, &n, &err) == 0);
	CHECK_U64(n, 4);
	if (n == 4) {
		CHECK_NEAR(set[0].ms, 12.0, 0);
		CHECK_U64(set[0].ws_bytes, 0);
		CHECK(set[0].n == 1 && set[0].micro[0].algo == 0);
		CHECK_NEAR(set[1].ms, 8.0, 0);
		CHECK_U64(set[1].ws_bytes, 10 * MIB);
		CHECK_U64(set[1].n, 4);
		CHECK_NEAR(set[2].ms, 6.0, 0);
		CHECK_U64(set[2].ws_bytes, 20 * MIB);
		CHECK_U64(set[2].n, 2);
		CHECK_NEAR(set[3].ms, 5.0, 0);
		CHECK_U64(set[3].ws_bytes, 40 * MIB);
		CHECK_U64(set[3].n, 1);
	}
	ucudnn_configs_free(set, n);

	/* the limit cuts the set, it does not change what is below it */
	CHECK(ucudnn_desirable(&k, 25 * MIB, &set, &n, &err) == 0);
	CHECK_U64(n, 3);
	CHECK_NEAR(set[n - 1].ms, 6.0, 0);
	ucudnn_configs_free(set, n);

	{
		struct ucudnn_kernel ks[2] = { k, k };
		static const struct { uint64_t mib; double ms; } want[] = {
			{ 40, 12 }, { 30, 14 }, { 25, 16 }, { 0, 24 }, { 80, 10 },
		};

		for (uint32_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			CHECK(ucudnn_wd(ks, 2, want[i].mib * MIB, two, &err) == 0);
			CHECK_NEAR(two[0].ms + two[1].ms, want[i].ms, 0);
			CHECK(two[0].ws_bytes + two[1].ws_bytes <= want[i].mib * MIB);
			ucudnn_config_release(&two[0]);
			ucudnn_config_release(&two[1]);
		}
		CHECK(ucudnn_wd(ks, 2, 40 * MIB, two, &err) == 0);
		CHECK_U64(two[0].ws_bytes, 20 * MIB);
		CHECK_U64(two[1].ws_bytes, 20 * MIB);
		ucudnn_config_release(&two[0]);
		ucudnn_config_release(&two[1]);
	}

	/* algorithm 1 unavailable at b = 4: no limit now gives 2 x (2, 1) */
	p.ok[4][1] = 0;
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == 0);
	CHECK_NEAR(c.ms, 6.0, 0);
	CHECK_U64(c.n, 2);
	ucudnn_config_release(&c);
}

static void test_ties_and_edges(void)
{
	static const uint32_t all4[] = { 1, 2, 3, 4 }, one[] = { 1 }, four[] = { 4 };
	static const uint32_t bad[] = { 0 }, big[] = { 5 }, three[] = { 3 };
	struct ptab p;
	struct ucudnn_kernel k;
	struct ucudnn_config c, *set;
	struct mp_error err;
	uint32_t n;

	/* three algorithms, identical: the lowest index wins; linear time so
	 * every split ties: the undivided one wins */
	memset(&p, 0, sizeof(p));
	p.batch = 4;
	p.n_algos = 3;
	for (uint32_t b = 1; b <= 4; b++)
		for (uint32_t a = 0; a < 3; a++) {
			p.ok[b][a] = 1;
			p.ms[b][a] = b;
			p.ws[b][a] = 100;
		}
	k = kernel_of(&p, all4, 4);
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == 0);
	CHECK(c.n == 1 && c.micro[0].batch == 4 && c.micro[0].algo == 0);
	ucudnn_config_release(&c);
	CHECK(ucudnn_desirable(&k, UINT64_MAX, &set, &n, &err) == 0);
	CHECK(n == 1 && set[0].n == 1 && set[0].micro[0].algo == 0);
	ucudnn_configs_free(set, n);
	/* equal time, algorithm 2 needs less workspace: it wins */
	for (uint32_t b = 1; b <= 4; b++)
		p.ws[b][2] = 50;
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == 0);
	CHECK(c.n == 1 && c.micro[0].algo == 2 && c.ws_bytes == 50);
	ucudnn_config_release(&c);

	/* B = 1 */
	p.batch = 1;
	k = kernel_of(&p, one, 1);
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == 0);
	CHECK(c.n == 1 && c.micro[0].batch == 1 && c.ms == 1.0);
	ucudnn_config_release(&c);
	CHECK(ucudnn_desirable(&k, UINT64_MAX, &set, &n, &err) == 0);
	CHECK(n == 1 && set[0].ws_bytes == 50);
	ucudnn_configs_free(set, n);
	CHECK(ucudnn_wd(&k, 1, 50, &c, &err) == 0);
	CHECK_U64(c.ws_bytes, 50);
	ucudnn_config_release(&c);
	CHECK(ucudnn_wd(&k, 1, 49, &c, &err) == -1);
	CHECK_STR(err.msg, "kernel 0: no configuration of mini-batch 1 fits workspace limit 49 B");
	CHECK(c.n == 0 && c.micro == NULL);

	/* no kernels */
	CHECK(ucudnn_wd(NULL, 0, 0, NULL, &err) == 0);

	/* nothing fits, sizes that cannot sum to B, malformed kernels */
	p.batch = 4;
	k = kernel_of(&p, four, 1);
	CHECK(ucudnn_wr(&k, 10, &c, &err) == -1);
	CHECK_STR(err.msg, "no configuration of mini-batch 4 fits workspace limit 10 B");
	CHECK(c.n == 0 && c.micro == NULL);
	CHECK(ucudnn_desirable(&k, 10, &set, &n, &err) == -1);
	CHECK(set == NULL && n == 0);
	k = kernel_of(&p, three, 1);
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == -1);
	CHECK_STR(err.msg, "no configuration of mini-batch 4: no algorithm runs at sizes that sum to it");
	k = kernel_of(&p, bad, 1);
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == -1);
	CHECK_STR(err.msg, "micro-batch size 0 is outside 1..4");
	k = kernel_of(&p, big, 1);
	CHECK(ucudnn_desirable(&k, UINT64_MAX, &set, &n, &err) == -1);
	CHECK_STR(err.msg, "micro-batch size 5 is outside 1..4");
	k = kernel_of(&p, all4, 0);
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == -1);
	CHECK_STR(err.msg, "no candidate micro-batch sizes");
	k = kernel_of(&p, all4, 4);
	k.batch = 0;
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == -1);
	CHECK_STR(err.msg, "mini-batch size must be at least 1");
	k = kernel_of(&p, all4, 4);
	p.ms[3][1] = -1;
	CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == -1);
	CHECK_STR(err.msg, "algorithm 1 at micro-batch 3: time -1 ms is not a duration");
	{
		struct ucudnn_kernel ks[2] = { kernel_of(&p, all4, 4), kernel_of(&p, all4, 4) };
		struct ucudnn_config two[2];

		p.ms[3][1] = 3;
		ks[1].n_algos = 0;
		CHECK(ucudnn_wd(ks, 2, UINT64_MAX, two, &err) == -1);
		CHECK_STR(err.msg, "kernel 1: no convolution algorithms");
		CHECK(two[0].micro == NULL && two[1].micro == NULL);
	}
}

/* The candidate-size policies of 3.4 plus an irregular one. */
static uint32_t policy_sizes(uint32_t batch, int policy, uint32_t *sizes)
{
	uint32_t n = 0;

	switch (policy) {
	case 0: /* all */
		for (uint32_t b = 1; b <= batch; b++)
			sizes[n++] = b;
		break;
	case 1: /* powerOfTwo, and B */
		for (uint32_t b = 1; b < batch; b *= 2)
			sizes[n++] = b;
		sizes[n++] = batch;
		break;
	case 2: /* undivided */
		sizes[n++] = batch;
		break;
	default: /* B, 3, 5, 2 but no 1: some b cannot be reached */
		sizes[n++] = batch;
		if (batch > 3)
			sizes[n++] = 3;
		if (batch > 5)
			sizes[n++] = 5;
		if (batch > 2)
			sizes[n++] = 2;
		break;
	}
	return n;
}

static uint32_t wr_checked, wr_micro, front_checked;
static uint64_t brute_configs;

/* WR and the desirable set of one table under one limit against brute force. */
static void check_one(struct ptab *p, const uint32_t *sizes, uint32_t n_sizes, uint64_t limit)
{
	static struct brute s;
	struct ucudnn_kernel k = kernel_of(p, sizes, n_sizes);
	struct ucudnn_config c, *set = NULL;
	struct mp_error err;
	double fms[(MAX_B + 1) * MAX_A];
	uint64_t fws[(MAX_B + 1) * MAX_A];
	uint32_t fn[(MAX_B + 1) * MAX_A], nf, n = 0;
	int rc;

	brute_run(&s, p, sizes, n_sizes, limit);
	brute_configs += s.n_configs;
	rc = ucudnn_wr(&k, limit, &c, &err);
	CHECK(rc == (s.wr_have ? 0 : -1));
	if (rc == 0 && s.wr_have) {
		CHECK(config_valid(p, &c, limit));
		CHECK_NEAR(c.ms, s.wr_ms, 0);
		CHECK_U64(c.n, s.wr_n);
		CHECK_U64(c.ws_bytes, s.wr_ws);
		wr_checked++;
		wr_micro += c.n > 1;
	}

	nf = brute_front(&s, fms, fws, fn);
	rc = ucudnn_desirable(&k, limit, &set, &n, &err);
	CHECK(rc == (nf ? 0 : -1));
	CHECK_U64(n, nf);
	for (uint32_t i = 0; rc == 0 && i < n && i < nf; i++) {
		CHECK(config_valid(p, &set[i], limit));
		CHECK_NEAR(set[i].ms, fms[i], 0);
		CHECK_U64(set[i].ws_bytes, fws[i]);
		CHECK_U64(set[i].n, fn[i]);
	}
	/* the fastest desirable configuration is as fast as WR's, with no more
	 * workspace (WR prefers fewer micro-batches to less workspace) */
	if (rc == 0 && s.wr_have) {
		CHECK_NEAR(set[n - 1].ms, c.ms, 0);
		CHECK(set[n - 1].ws_bytes <= c.ws_bytes);
		front_checked++;
	}
	ucudnn_config_release(&c);
	ucudnn_configs_free(set, n);
}

static void test_brute(void)
{
	static const uint32_t batches[] = { 1, 2, 5, 8, 12, 14, 16 };

	for (uint32_t bi = 0; bi < sizeof(batches) / sizeof(batches[0]); bi++) {
		for (int style = TAB_RANDOM; style <= TAB_MICRO_LOSES; style++) {
			for (int rep = 0; rep < 4; rep++) {
				uint32_t batch = batches[bi], sizes[MAX_B], n_sizes;
				uint32_t n_algos = style == TAB_RANDOM ? 2 + rnd(3) : 3;
				struct ptab p;
				uint64_t ws[(MAX_B + 1) * MAX_A], lim[6];
				uint32_t nw = 0;

				ptab_make(&p, batch, n_algos, style);
				for (uint32_t b = 1; b <= batch; b++)
					for (uint32_t a = 0; a < n_algos; a++)
						if (p.ok[b][a])
							ws[nw++] = p.ws[b][a];
				qsort(ws, nw, sizeof(*ws), cmp_u64);
				lim[0] = UINT64_MAX;
				lim[1] = 0;
				lim[2] = nw ? ws[nw / 5] : 0;
				lim[3] = nw ? ws[nw / 2] : 0;
				lim[4] = nw ? ws[nw / 2] - 1 : 0;
				lim[5] = nw ? ws[4 * nw / 5] : 0;
				for (int policy = 0; policy < 4; policy++) {
					n_sizes = policy_sizes(batch, policy, sizes);
					for (int l = 0; l < 6; l++)
						check_one(&p, sizes, n_sizes, lim[l]);
				}
			}
		}
	}
	/* micro-batching has to have won somewhere, and must win here */
	CHECK(wr_micro > 0);
	{
		uint32_t sizes[MAX_B], n_sizes;
		struct ptab p;
		struct ucudnn_kernel k;
		struct ucudnn_config c, u;
		struct mp_error err;

		ptab_make(&p, 12, 3, TAB_MICRO_WINS);
		n_sizes = policy_sizes(12, 0, sizes);
		k = kernel_of(&p, sizes, n_sizes);
		/* a limit that admits algorithms 1 and 2 only at b <= 4 */
		CHECK(ucudnn_wr(&k, 4 * (p.ws[1][1] < p.ws[1][2] ? p.ws[1][1] : p.ws[1][2]), &c, &err) == 0);
		n_sizes = policy_sizes(12, 2, sizes);
		k = kernel_of(&p, sizes, n_sizes);
		CHECK(ucudnn_wr(&k, 4 * (p.ws[1][1] < p.ws[1][2] ? p.ws[1][1] : p.ws[1][2]), &u, &err) == 0);
		CHECK(c.n > 1 && c.ms < u.ms && u.micro[0].algo == 0);
		ucudnn_config_release(&c);
		ucudnn_config_release(&u);

		/* overhead-bound: one micro-batch, whatever the limit */
		ptab_make(&p, 12, 3, TAB_MICRO_LOSES);
		n_sizes = policy_sizes(12, 0, sizes);
		k = kernel_of(&p, sizes, n_sizes);
		CHECK(ucudnn_wr(&k, UINT64_MAX, &c, &err) == 0);
		CHECK_U64(c.n, 1);
		ucudnn_config_release(&c);
	}
}

/* WD on 3 kernels against every combination of their desirable configs. */
static void test_wd_exhaustive(void)
{
	for (int rep = 0; rep < 12; rep++) {
		struct ptab p[3];
		struct ucudnn_kernel k[3];
		struct ucudnn_config *set[3], out[3], wr;
		uint32_t n[3], sizes[3][MAX_B];
		uint64_t min_sum = 0, max_sum = 0, lim[9];
		struct mp_error err;

		for (int i = 0; i < 3; i++) {
			uint32_t batch = 6 + rnd(7);

			ptab_make(&p[i], batch, 2 + rnd(3), rep % 2 ? TAB_MICRO_WINS : TAB_RANDOM);
			k[i] = kernel_of(&p[i], sizes[i], policy_sizes(batch, rep % 3 == 2, sizes[i]));
			CHECK(ucudnn_desirable(&k[i], UINT64_MAX, &set[i], &n[i], &err) == 0);
			min_sum += set[i][0].ws_bytes;
			max_sum += set[i][n[i] - 1].ws_bytes;
		}
		lim[0] = UINT64_MAX;
		lim[1] = max_sum;
		lim[2] = min_sum;
		lim[3] = min_sum + (max_sum - min_sum) / 4;
		lim[4] = min_sum + (max_sum - min_sum) / 2;
		lim[5] = min_sum + 3 * (max_sum - min_sum) / 4;
		/* exactly a combination's sum, and one byte under it */
		lim[6] = set[0][n[0] / 2].ws_bytes + set[1][n[1] / 2].ws_bytes + set[2][n[2] / 2].ws_bytes;
		lim[7] = lim[6] - 1;
		lim[8] = min_sum - 1; /* infeasible (min_sum > 0 when no fallback) */
		for (int l = 0; l < 9; l++) {
			double best = -1;
			int rc;

			for (uint32_t a = 0; a < n[0]; a++)
				for (uint32_t b = 0; b < n[1]; b++)
					for (uint32_t c = 0; c < n[2]; c++) {
						double t = set[0][a].ms + set[1][b].ms + set[2][c].ms;
						uint64_t w = set[0][a].ws_bytes + set[1][b].ws_bytes + set[2][c].ws_bytes;

						if (w <= lim[l] && (best < 0 || t < best))
							best = t;
					}
			rc = ucudnn_wd(k, 3, lim[l], out, &err);
			CHECK(rc == (best >= 0 ? 0 : -1));
			if (l == 8 && min_sum > 0) {
				CHECK(rc == -1);
				/* one kernel alone may not fit, or only their sum */
				CHECK(strstr(err.msg, "the sum of the 3 kernels' smallest workspaces") ||
				      strstr(err.msg, "fits workspace limit"));
			}
			if (rc != 0)
				continue;
			CHECK_NEAR(out[0].ms + out[1].ms + out[2].ms, best, 1e-9);
			CHECK(out[0].ws_bytes + out[1].ws_bytes + out[2].ws_bytes <= lim[l]);
			for (int i = 0; i < 3; i++) {
				CHECK(config_valid(&p[i], &out[i], UINT64_MAX));
				if (l <= 1) { /* unconstrained: per-kernel WR, no limit */
					CHECK(ucudnn_wr(&k[i], UINT64_MAX, &wr, &err) == 0);
					CHECK_NEAR(out[i].ms, wr.ms, 0);
					CHECK(out[i].ws_bytes <= wr.ws_bytes);
					ucudnn_config_release(&wr);
				}
				ucudnn_config_release(&out[i]);
			}
		}
		for (int i = 0; i < 3; i++)
			ucudnn_configs_free(set[i], n[i]);
	}
}

/* WD on 50 kernels, workspaces in whole MiB, against a multiple-choice
 * knapsack DP over MiB of capacity: exact. */
static void test_wd_knapsack(void)
{
	enum { NK = 50 };
	static struct ptab p[NK];
	static uint32_t sizes[MAX_B];
	struct ucudnn_kernel k[NK];
	struct ucudnn_config *set[NK], out[NK];
	uint32_t n[NK], n_sizes = policy_sizes(16, 1, sizes), total = 0;
	uint64_t min_mib = 0, max_mib = 0;
	struct mp_error err;
	double *dp, *nx;

	for (int i = 0; i < NK; i++) {
		ptab_make(&p[i], 16, 4, TAB_MIB);
		k[i] = kernel_of(&p[i], sizes, n_sizes);
		CHECK(ucudnn_desirable(&k[i], UINT64_MAX, &set[i], &n[i], &err) == 0);
		min_mib += set[i][0].ws_bytes / MIB;
		max_mib += set[i][n[i] - 1].ws_bytes / MIB;
		total += n[i];
	}
	CHECK(total >= 4 * NK); /* a real choice per kernel */
	dp = malloc((max_mib + 1) * sizeof(*dp));
	nx = malloc((max_mib + 1) * sizeof(*nx));
	/* dp[c]: least total time of the kernels so far in at most c MiB */
	for (uint64_t c = 0; c <= max_mib; c++)
		dp[c] = 0;
	for (int i = 0; i < NK; i++) {
		for (uint64_t c = 0; c <= max_mib; c++) {
			nx[c] = -1;
			for (uint32_t j = 0; j < n[i]; j++) {
				uint64_t w = set[i][j].ws_bytes / MIB;

				if (w <= c && dp[c - w] >= 0 && (nx[c] < 0 || dp[c - w] + set[i][j].ms < nx[c]))
					nx[c] = dp[c - w] + set[i][j].ms;
			}
		}
		memcpy(dp, nx, (max_mib + 1) * sizeof(*dp));
	}
	for (int q = 0; q <= 8; q++) {
		uint64_t lim = min_mib + (max_mib - min_mib) * q / 8;
		double t = 0;
		uint64_t w = 0;

		CHECK(ucudnn_wd(k, NK, lim * MIB, out, &err) == 0);
		for (int i = 0; i < NK; i++) {
			t += out[i].ms;
			w += out[i].ws_bytes;
			ucudnn_config_release(&out[i]);
		}
		CHECK(w <= lim * MIB);
		CHECK_NEAR(t, dp[lim], 1e-6);
	}
	CHECK(ucudnn_wd(k, NK, min_mib * MIB - 1, out, &err) == -1);
	free(dp);
	free(nx);
	for (int i = 0; i < NK; i++)
		ucudnn_configs_free(set[i], n[i]);
}

int main(void)
{
	test_hand();
	test_ties_and_edges();
	test_brute();
	/* coverage: 1723 tables x limits with a WR answer, 5.8M configurations */
	CHECK(wr_checked > 1500 && front_checked > 1500 && brute_configs > 5000000);
	test_wd_exhaustive();
	test_wd_knapsack();
	return unit_report("test_ucudnn");
}
