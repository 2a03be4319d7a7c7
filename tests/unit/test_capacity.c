/*
 * Capacity: on every row, the answer N fits and N + 1 does not (checked with
 * cap_eval, the search's own judge), for a net file varied by batch, for a
 * generated model and for a model's sequence length; the mlp answers by
 * hand (tests/data/mlp.json).
 */
#include "../../plan/capacity.h"
#include "unit.h"

static void check_rows(const struct cap_query *q, const char *what)
{
	struct cap_result res[CAP_N_ROWS];
	struct cap_cache cache = { 0 };
	struct mp_error err;

	CHECK(cap_run(q, res, &err) == 0);
	for (unsigned row = 0; row < CAP_N_ROWS; row++) {
		bool fits;
		double ms;

		if (!(q->rows & (1u << row)))
			continue;
		if (res[row].max) {
			CHECK(cap_eval(&cache, q, row, res[row].max, &fits, &ms, &err) == 0);
			CHECK(fits);
		}
		CHECK(cap_eval(&cache, q, row, res[row].max + 1, &fits, &ms, &err) == 0);
		CHECK(!fits);
		printf("  %s %-13s max %u (%u evaluations)\n", what, cap_row_name(row), res[row].max, res[row].evals);
	}
	cap_cache_release(&cache);
	if (q->rows & 1)
		CHECK(res[MP_STRAT_BASELINE].max <= res[MP_STRAT_LIVENESS].max);
}

int main(void)
{
	struct mp_error err;
	struct mp_net *net = net_load_file("tests/data/mlp.json", &err);
	struct cap_query q;
	struct cap_result res[CAP_N_ROWS];

	CHECK(net != NULL);
	if (!net)
		return unit_report("test_capacity");
	memset(&q, 0, sizeof(q));
	q.vary = CAP_VARY_BATCH;
	q.base = net;
	q.compute_factor = q.memory_factor = 1.0;
	device_default(&q.device);
	q.usable_bytes = 4u << 20;
	policy_opts_default(&q.popts);
	q.max_overhead = -1;
	q.rows = (1u << CAP_N_ROWS) - 1;
	q.limit = 1u << 20;
	CHECK(cap_run(&q, res, &err) == 0);
	CHECK_U64(res[MP_STRAT_BASELINE].max, 716);  /* (4194304 - 2 * 262144) / 5120 */
	CHECK_U64(res[MP_STRAT_LIVENESS].max, 960);  /* (4194304 - 262144) / 4096 */
	check_rows(&q, "mlp");

	/* a generated model, by batch (searched on scaled copies, settled on
	 * the generated nets) */
	memset(&q, 0, sizeof(q));
	q.vary = CAP_VARY_BATCH;
	q.model = "alexnet";
	zoo_opts_init(&q.zopts);
	q.device = *device_find("k40c");
	q.usable_bytes = q.device.memory_bytes - CAP_DEFAULT_RESERVE;
	policy_opts_default(&q.popts);
	q.max_overhead = -1;
	q.rows = (1u << CAP_N_ROWS) - 1;
	q.limit = 1u << 20;
	check_rows(&q, "alexnet/k40c");

	/* a model's sequence length: regenerated at each seq, its batch and
	 * the longest seq it builds resolved first */
	memset(&q, 0, sizeof(q));
	q.vary = CAP_VARY_SEQ;
	q.model = "gpt2";
	zoo_opts_init(&q.zopts);
	q.zopts.depth = 2;
	q.zopts.hidden = 256;
	q.zopts.heads = 4;
	q.device = *device_find(ZOO_DEFAULT_DEVICE);
	q.usable_bytes = UINT64_C(2) << 30;
	policy_opts_default(&q.popts);
	q.max_overhead = -1;
	q.rows = (1u << MP_STRAT__COUNT) - 1;
	CHECK(cap_seq_resolve(&q, &err) == 0);
	CHECK_U64(q.zopts.batch, 8);        /* gpt2's own */
	CHECK_U64(q.limit, CAP_MAX_SEQ);
	check_rows(&q, "gpt2-2x256 seq");
	q.model = "seq2seq";
	zoo_opts_init(&q.zopts);
	CHECK(cap_seq_resolve(&q, &err) == 0);
	CHECK_U64(q.limit, 2048);            /* rnn.c's longest */
	q.model = "alexnet";
	CHECK(cap_seq_resolve(&q, &err) < 0);
	net_free(net);
	return unit_report("test_capacity");
}
