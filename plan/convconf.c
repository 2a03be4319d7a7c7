/*
 * Convolution configurations for --workspace wr|wd: every op with algorithm
 * alternatives becomes a mu-cuDNN kernel (its default implementation is
 * algorithm 0, the alternatives measured at the full batch follow); candidate
 * micro-batch sizes are the powers of two up to the batch and the batch
 * itself (mu-cuDNN 3.4's powerOfTwo policy); costs per micro-batch come from
 * sched_micro_cost (measured entries, else scaled from the full batch).
 * WR: per kernel under the limit; WD: all kernels under one total limit.
 */
#include <stdlib.h>
#include <string.h>

#include "convconf.h"
#include "ucudnn.h"

struct kctx {
	const struct mp_net *net;
	int32_t op;
	int32_t *map;       /* kernel algorithm -> op algorithm (-1 default) */
};

static int perf(void *ctx, uint32_t b, uint32_t algo, double *ms, uint64_t *ws)
{
	const struct kctx *k = ctx;

	sched_micro_cost(k->net, k->op, k->map[algo], b, ms, ws);
	return 0;
}

int plan_conv_configs(const struct mp_net *net, const struct mp_plan_req *req, int32_t *algo,
		      uint32_t *micro_n, struct mp_micro **micro, struct mp_error *err)
{
	uint64_t limit = req->ws_limit_bytes ? req->ws_limit_bytes : req->budget_bytes;
	uint32_t n_k = 0;
	struct ucudnn_kernel *ks = mp_xcalloc(net->n_ops + 1, sizeof(*ks));
	struct kctx *cx = mp_xcalloc(net->n_ops + 1, sizeof(*cx));
	struct ucudnn_config *cf;
	uint32_t *sizes = NULL;
	uint32_t cap_sizes = 0, n_sizes_all = 0;
	uint32_t *size_at = mp_xcalloc(net->n_ops + 1, sizeof(*size_at));
	int rc = 0;

	/* kernels and their size lists (one shared buffer, filled first so the
	 * pointers stay valid) */
	for (uint32_t o = 0; o < net->n_ops; o++) {
		const struct mp_op *op = &net->ops[o];
		uint32_t B = op->batch ? op->batch : 1, n = 0, *pow2;

		if (!op->n_algos)
			continue;
		size_at[n_k] = n_sizes_all;
		pow2 = ucudnn_sizes(B, UCUDNN_POW2, &n);
		mp_grow((void **)&sizes, &cap_sizes, n_sizes_all + n, sizeof(*sizes));
		memcpy(sizes + n_sizes_all, pow2, n * sizeof(*sizes));
		n_sizes_all += n;
		free(pow2);
		cx[n_k].net = net;
		cx[n_k].op = (int32_t)o;
		cx[n_k].map = mp_xmalloc((op->n_algos + 1) * sizeof(int32_t));
		cx[n_k].map[0] = -1;
		ks[n_k].n_algos = 1;
		for (uint32_t a = 0; a < op->n_algos; a++)
			if (!op->algos[a].batch)
				cx[n_k].map[ks[n_k].n_algos++] = (int32_t)a;
		ks[n_k].batch = B;
		ks[n_k].n_sizes = n;
		ks[n_k].perf = perf;
		n_k++;
	}
	for (uint32_t k = 0; k < n_k; k++) {
		ks[k].sizes = sizes + size_at[k];
		ks[k].ctx = &cx[k];
	}
	cf = mp_xcalloc(n_k + 1, sizeof(*cf));
	if (req->ws_mode == MP_WS_WD) {
		rc = ucudnn_wd(ks, n_k, limit, cf, err);
	} else {
		for (uint32_t k = 0; k < n_k && rc == 0; k++)
			if ((rc = ucudnn_wr(&ks[k], limit, &cf[k], err)) < 0)
				mp_error_prefix(err, "%s: ", net->ops[cx[k].op].name);
	}
	for (uint32_t k = 0; k < n_k && rc == 0; k++) {
		int32_t o = cx[k].op;

		if (cf[k].n == 1) {
			algo[o] = cx[k].map[cf[k].micro[0].algo];
			continue;
		}
		micro_n[o] = cf[k].n;
		free(micro[o]);
		micro[o] = mp_xmalloc(cf[k].n * sizeof(**micro));
		for (uint32_t m = 0; m < cf[k].n; m++)
			micro[o][m] = (struct mp_micro){ cf[k].micro[m].batch, cx[k].map[cf[k].micro[m].algo] };
	}
	if (rc < 0)
		mp_error_prefix(err, "--workspace %s: ", req->ws_mode == MP_WS_WD ? "wd" : "wr");
	for (uint32_t k = 0; k < n_k; k++) {
		ucudnn_config_release(&cf[k]);
		free(cx[k].map);
	}
	free(cf);
	free(cx);
	free(ks);
	free(sizes);
	free(size_at);
	return rc;
}
