/*
 * Unit tests of the host side of memplan profile (verify/profile.c): the
 * micro-batch sizes of mu-cuDNN 3.4's batch size policies, and the writer
 * that puts a measurement into a copy of the net file.  A fake measurement of
 * a small hand-written net (data, conv, relu, pool, fc, loss and an explicit
 * op) is applied; the layers it touches are compared as JSON text worked out
 * by hand, and the result is loaded again to check the times and algorithms
 * the planners will see.  Measurements that do not fit the net are refused
 * with their reason.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../verify/profile.h"
#include "unit.h"

static void check_batches(uint32_t batch, enum mp_prof_batches mode, const uint32_t *want, uint32_t n_want)
{
	uint32_t n = 0, *b = prof_batches(batch, mode, &n);
	int same = n == n_want;

	for (uint32_t i = 0; same && i < n; i++)
		same = b[i] == want[i];
	if (!same) {
		fprintf(stderr, "prof_batches(%u, %s):", batch, prof_batches_name(mode));
		for (uint32_t i = 0; i < n; i++)
			fprintf(stderr, " %u", b[i]);
		fprintf(stderr, "\n");
	}
	CHECK(same);
	free(b);
}

static void test_batches(void)
{
	static const uint32_t all32[] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
					  17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32 };
	uint32_t n = 0, *b;

	/* powerOfTwo: 2^0, 2^1, ... below B, then B */
	check_batches(1, PROF_BATCH_POW2, (uint32_t[]){ 1 }, 1);
	check_batches(6, PROF_BATCH_POW2, (uint32_t[]){ 1, 2, 4, 6 }, 4);
	check_batches(8, PROF_BATCH_POW2, (uint32_t[]){ 1, 2, 4, 8 }, 4);
	check_batches(32, PROF_BATCH_POW2, (uint32_t[]){ 1, 2, 4, 8, 16, 32 }, 6);
	/* all: 1 .. B */
	check_batches(1, PROF_BATCH_ALL, all32, 1);
	check_batches(6, PROF_BATCH_ALL, all32, 6);
	check_batches(8, PROF_BATCH_ALL, all32, 8);
	check_batches(32, PROF_BATCH_ALL, all32, 32);
	/* undivided: B */
	check_batches(1, PROF_BATCH_FULL, (uint32_t[]){ 1 }, 1);
	check_batches(6, PROF_BATCH_FULL, (uint32_t[]){ 6 }, 1);
	check_batches(8, PROF_BATCH_FULL, (uint32_t[]){ 8 }, 1);
	check_batches(32, PROF_BATCH_FULL, (uint32_t[]){ 32 }, 1);
	/* the largest batch: 32 powers of two, then B */
	b = prof_batches(UINT32_MAX, PROF_BATCH_POW2, &n);
	CHECK_U64(n, 33);
	CHECK_U64(b[31], UINT32_C(1) << 31);
	CHECK_U64(b[32], UINT32_MAX);
	free(b);

	CHECK_U64(prof_batches_parse("pow2"), PROF_BATCH_POW2);
	CHECK_U64(prof_batches_parse("all"), PROF_BATCH_ALL);
	CHECK_U64(prof_batches_parse("full"), PROF_BATCH_FULL);
	CHECK(prof_batches_parse("powerOfTwo") == -1);
	CHECK(prof_batches_parse("") == -1);
	CHECK_STR(prof_batches_name(PROF_BATCH_ALL), "all");
}

/* Batch 4.  conv has no layer time: its first algorithm is the default
 * (memplan-net(5)).  fc has an update time. */
static const char net_text[] =
	"{\"format\": \"memplan-net/1\", \"name\": \"prof\", \"optimizer\": \"sgd\",\n"
	" \"generator\": {\"model\": \"hand\"},\n"
	" \"layers\": [\n"
	"  {\"name\": \"data\", \"type\": \"data\", \"shape\": [4, 3, 8, 8], \"time\": {\"fwd\": 0.1}},\n"
	"  {\"name\": \"conv\", \"type\": \"conv\", \"inputs\": [\"data\"], \"shape\": [4, 8, 8, 8],\n"
	"   \"params\": [[8, 3, 3, 3], [8]], \"workspace\": \"1K\",\n"
	"   \"algos\": [{\"name\": \"implicit_gemm\", \"workspace\": 0, \"time\": {\"fwd\": 1.5, \"bwd\": 3}},\n"
	"             {\"name\": \"fft\", \"workspace\": \"8K\", \"time\": {\"fwd\": 1, \"bwd\": 2}}]},\n"
	"  {\"name\": \"relu\", \"type\": \"relu\", \"inputs\": [\"conv\"], \"shape\": [4, 8, 8, 8],\n"
	"   \"time\": {\"fwd\": 0.2, \"bwd\": 0.3}},\n"
	"  {\"name\": \"pool\", \"type\": \"pool\", \"inputs\": [\"relu\"], \"shape\": [4, 8, 4, 4],\n"
	"   \"time\": {\"fwd\": 0.4, \"bwd\": 0.5}},\n"
	"  {\"name\": \"fc\", \"type\": \"fc\", \"inputs\": [\"pool\"], \"shape\": [4, 10],\n"
	"   \"params\": [[10, 128], [10]], \"time\": {\"fwd\": 0.6, \"bwd\": 1.2, \"update\": 0.01}},\n"
	"  {\"name\": \"loss\", \"type\": \"loss\", \"inputs\": [\"fc\"], \"shape\": [4, 10],\n"
	"   \"time\": {\"fwd\": 0.05, \"bwd\": 0.06}}],\n"
	" \"tensors\": [{\"name\": \"extra\", \"kind\": \"input\", \"bytes\": 64}, {\"name\": \"aux.out\", \"bytes\": 64}],\n"
	" \"ops\": [{\"name\": \"aux\", \"inputs\": [\"extra\"], \"outputs\": [\"aux.out\"], \"time\": 0.5}]}\n";

/* The measurement, layers in no particular order; loss is not listed. */
static void fake_profile(struct mp_profile *m)
{
	static const struct mp_prof_algo conv_algos[] = {
		{ "implicit_gemm", 0, 0, 0.3, 0.6 },
		{ "winograd", 4, 4096, 0.2, 0.4 },        /* batch 4 is the whole batch */
		{ "implicit_gemm", 1, 0, 0.1, 0.2 },
		{ "implicit_gemm", 2, 0, 0.16, 0.32 },
		{ "fft", 2, 8192, 0.125, -1 },            /* forward only */
	};
	struct mp_prof_layer *L;

	prof_init(m);
	snprintf(m->device, sizeof(m->device), "Fake GPU 1");
	m->iters = 10;
	m->warmup = 3;
	m->batches = PROF_BATCH_POW2;
	m->n_layers = 5;
	m->layers = L = mp_xcalloc(5, sizeof(*L));
	L[0] = (struct mp_prof_layer){ .layer = 2, .measured = true, .fwd_ms = 0.02, .bwd_ms = 0.03, .update_ms = -1 };
	/* the conv's backward is not measured: it keeps the file's default, 3 */
	L[1] = (struct mp_prof_layer){ .layer = 1, .measured = true, .fwd_ms = 0.25, .bwd_ms = -1, .update_ms = -1,
				       .workspace_bytes = 2048, .n_algos = 5 };
	L[1].algos = mp_xmalloc(sizeof(conv_algos));
	memcpy(L[1].algos, conv_algos, sizeof(conv_algos));
	L[2] = (struct mp_prof_layer){ .layer = 0, .why = "a data layer: nothing runs on the GPU" };
	L[3] = (struct mp_prof_layer){ .layer = 4, .measured = true, .fwd_ms = 0.05, .bwd_ms = 0.1, .update_ms = -1 };
	L[4] = (struct mp_prof_layer){ .layer = 3, .why = mp_arena_strdup(&m->arena, "pool: not measured here") };
}

static json_t *load_text(void)
{
	json_error_t jerr;
	json_t *root = json_loads(net_text, JSON_REJECT_DUPLICATES, &jerr);

	if (!root)
		fprintf(stderr, "net_text: line %d: %s\n", jerr.line, jerr.text);
	return root;
}

/* A value as compact JSON text, reals to 6 digits. */
static void check_json(const json_t *v, const char *want)
{
	char *s = json_dumps(v, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_ENCODE_ANY | JSON_REAL_PRECISION(6));

	CHECK_STR(s, want);
	free(s);
}

static const struct mp_op *op(const struct mp_net *net, const char *name)
{
	int32_t o = net_find_op(net, name);

	MP_ASSERT(o >= 0);
	return &net->ops[o];
}

static void test_apply(void)
{
	struct mp_error err = { "" };
	struct mp_profile m;
	struct mp_net *net, *again;
	json_t *root = load_text(), *out, *layers;
	const char *why[6];
	uint32_t kept = 99;

	net = root ? net_load_json(root, &err) : NULL;
	CHECK(net != NULL);
	if (!net) {
		fprintf(stderr, "%s\n", err.msg);
		json_decref(root);
		return;
	}
	fake_profile(&m);
	out = prof_apply(root, net, &m, why, &kept, &err);
	CHECK(out != NULL);
	if (!out) {
		fprintf(stderr, "%s\n", err.msg);
		goto done;
	}
	CHECK_U64(kept, 3);
	CHECK_STR(why[0], "a data layer: nothing runs on the GPU");
	CHECK(why[1] == NULL && why[2] == NULL && why[4] == NULL);
	CHECK_STR(why[3], "pool: not measured here");
	CHECK_STR(why[5], "not measured");

	/* the file around the layers */
	check_json(json_object_get(out, "time_source"), "\"measured:Fake GPU 1\"");
	check_json(json_object_get(out, "generator"),
		   "{\"tool\":\"memplan profile\",\"iters\":10,\"warmup\":3,\"batches\":\"pow2\","
		   "\"from\":{\"model\":\"hand\"}}");
	CHECK(json_equal(json_object_get(out, "ops"), json_object_get(root, "ops")));
	CHECK(json_equal(json_object_get(out, "tensors"), json_object_get(root, "tensors")));
	/* the input is not touched */
	CHECK(json_object_get(root, "time_source") == NULL);
	check_json(json_object_get(root, "generator"), "{\"model\":\"hand\"}");

	layers = json_object_get(out, "layers");
	CHECK_U64(json_array_size(layers), 6);
	/* not measured: as they were */
	for (size_t i = 0; i < 6; i++)
		if (i == 0 || i == 3 || i == 5)
			CHECK(json_equal(json_array_get(layers, i), json_array_get(json_object_get(root, "layers"), i)));
	/* conv: the measured default forward, the backward of the file's default
	 * (its first algorithm, 3 ms) since none was measured; the measured
	 * default's workspace; the measured algorithms in their order, the batch
	 * only on micro-batches (winograd at 4 is the whole batch), fft forward
	 * only.  "time" is new, so it comes last. */
	check_json(json_array_get(layers, 1),
		   "{\"name\":\"conv\",\"type\":\"conv\",\"inputs\":[\"data\"],\"shape\":[4,8,8,8],"
		   "\"params\":[[8,3,3,3],[8]],\"workspace\":2048,"
		   "\"algos\":[{\"name\":\"implicit_gemm\",\"workspace\":0,\"time\":{\"fwd\":0.3,\"bwd\":0.6}},"
		   "{\"name\":\"winograd\",\"workspace\":4096,\"time\":{\"fwd\":0.2,\"bwd\":0.4}},"
		   "{\"name\":\"implicit_gemm\",\"batch\":1,\"workspace\":0,\"time\":{\"fwd\":0.1,\"bwd\":0.2}},"
		   "{\"name\":\"implicit_gemm\",\"batch\":2,\"workspace\":0,\"time\":{\"fwd\":0.16,\"bwd\":0.32}},"
		   "{\"name\":\"fft\",\"batch\":2,\"workspace\":8192,\"time\":{\"fwd\":0.125}}],"
		   "\"time\":{\"fwd\":0.25,\"bwd\":3}}");
	check_json(json_array_get(layers, 2),
		   "{\"name\":\"relu\",\"type\":\"relu\",\"inputs\":[\"conv\"],\"shape\":[4,8,8,8],"
		   "\"time\":{\"fwd\":0.02,\"bwd\":0.03}}");
	/* fc: the update was not measured and stays */
	check_json(json_array_get(layers, 4),
		   "{\"name\":\"fc\",\"type\":\"fc\",\"inputs\":[\"pool\"],\"shape\":[4,10],"
		   "\"params\":[[10,128],[10]],\"time\":{\"fwd\":0.05,\"bwd\":0.1,\"update\":0.01}}");

	/* what the planners see */
	again = net_load_json(out, &err);
	CHECK(again != NULL);
	if (!again) {
		fprintf(stderr, "reload: %s\n", err.msg);
		json_decref(out);
		goto done;
	}
	CHECK_STR(again->time_source, "measured:Fake GPU 1");
	CHECK_NEAR(op(again, "conv.fwd")->ms, 0.25, 1e-12);
	CHECK_NEAR(op(again, "conv.bwd")->ms, 3, 1e-12);
	CHECK_U64(again->tensors[op(again, "conv.fwd")->ws].bytes, 2048);
	CHECK_U64(op(again, "conv.fwd")->n_algos, 5);
	CHECK_U64(op(again, "conv.bwd")->n_algos, 4);
	{
		const struct mp_algo *f = op(again, "conv.fwd")->algos, *b = op(again, "conv.bwd")->algos;

		CHECK_STR(f[1].name, "winograd");
		CHECK_U64(f[1].batch, 0);
		CHECK_U64(f[1].workspace_bytes, 4096);
		CHECK_NEAR(f[1].ms, 0.2, 1e-12);
		CHECK_U64(f[2].batch, 1);
		CHECK_U64(f[3].batch, 2);
		CHECK_NEAR(f[3].ms, 0.16, 1e-12);
		CHECK_STR(f[4].name, "fft");
		CHECK_U64(f[4].batch, 2);
		CHECK_U64(f[4].workspace_bytes, 8192);
		CHECK_NEAR(f[4].ms, 0.125, 1e-12);
		CHECK_STR(b[3].name, "implicit_gemm");
		CHECK_U64(b[3].batch, 2);
		CHECK_NEAR(b[3].ms, 0.32, 1e-12);
	}
	CHECK_NEAR(op(again, "relu.fwd")->ms, 0.02, 1e-12);
	CHECK_NEAR(op(again, "relu.bwd")->ms, 0.03, 1e-12);
	CHECK_NEAR(op(again, "fc.fwd")->ms, 0.05, 1e-12);
	CHECK_NEAR(op(again, "fc.bwd")->ms, 0.1, 1e-12);
	CHECK_NEAR(op(again, "fc.update")->ms, 0.01, 1e-12);
	CHECK_NEAR(op(again, "data.fwd")->ms, 0.1, 1e-12);
	CHECK_NEAR(op(again, "pool.fwd")->ms, 0.4, 1e-12);
	CHECK_NEAR(op(again, "loss.bwd")->ms, 0.06, 1e-12);
	CHECK_NEAR(op(again, "aux")->ms, 0.5, 1e-12);
	CHECK_U64(again->n_untimed, net->n_untimed);
	net_free(again);

	/* profiling the profiled file again does not nest generators */
	{
		json_t *twice;

		m.iters = 20;
		twice = prof_apply(out, net, &m, NULL, &kept, &err);
		CHECK(twice != NULL);
		check_json(json_object_get(twice, "generator"),
			   "{\"tool\":\"memplan profile\",\"iters\":20,\"warmup\":3,\"batches\":\"pow2\","
			   "\"from\":{\"model\":\"hand\"}}");
		CHECK(json_equal(json_object_get(twice, "layers"), json_object_get(out, "layers")));
		json_decref(twice);
	}
	json_decref(out);
done:
	prof_release(&m);
	CHECK(m.layers == NULL && m.n_layers == 0);
	prof_release(&m); /* twice is harmless */
	net_free(net);
	json_decref(root);
}

/* A measurement that does not fit the net is refused, with why. */
static void check_refused(const struct mp_net *net, const json_t *root, void (*spoil)(struct mp_profile *m),
			  const char *want)
{
	struct mp_error err = { "" };
	struct mp_profile m;
	uint32_t kept = 0;
	json_t *out;

	fake_profile(&m);
	spoil(&m);
	out = prof_apply(root, net, &m, NULL, &kept, &err);
	CHECK(out == NULL);
	CHECK_STR(err.msg, want);
	json_decref(out);
	prof_release(&m);
}

static void no_such_layer(struct mp_profile *m) { m->layers[3].layer = 6; }
static void negative_layer(struct mp_profile *m) { m->layers[0].layer = -1; }
static void twice(struct mp_profile *m) { m->layers[3].layer = 2; }
static void no_forward(struct mp_profile *m) { m->layers[0].fwd_ms = -1; }
static void nan_time(struct mp_profile *m) { m->layers[0].bwd_ms = NAN; }
static void huge_time(struct mp_profile *m) { m->layers[3].update_ms = 2e9; }
static void big_batch(struct mp_profile *m) { m->layers[1].algos[1].batch = 5; }
static void same_algo(struct mp_profile *m) { m->layers[1].algos[1].name = "implicit_gemm"; }
static void no_name(struct mp_profile *m) { m->layers[1].algos[2].name = ""; }
static void no_phase(struct mp_profile *m) { m->layers[1].algos[4].fwd_ms = -1; }
static void huge_ws(struct mp_profile *m) { m->layers[1].algos[0].workspace_bytes = MP_MAX_BYTES + 1; }
static void no_device(struct mp_profile *m) { m->device[0] = 0; }
static void bad_device(struct mp_profile *m) { m->device[0] = (char)0xff; }

static void test_refused(void)
{
	struct mp_error err = { "" };
	json_t *root = load_text(), *other;
	struct mp_net *net = root ? net_load_json(root, &err) : NULL;
	struct mp_profile m;
	uint32_t kept;

	CHECK(net != NULL);
	if (!net) {
		json_decref(root);
		return;
	}
	check_refused(net, root, no_such_layer, "layers[3]: no layer 6 in a net of 6");
	check_refused(net, root, negative_layer, "layers[0]: no layer -1 in a net of 6");
	check_refused(net, root, twice, "layer 'relu': measured twice");
	check_refused(net, root, no_forward, "layer 'relu': measured without a forward time");
	check_refused(net, root, nan_time, "layer 'relu': nan is not a time in milliseconds");
	check_refused(net, root, huge_time, "layer 'fc': 2e+09 is not a time in milliseconds");
	check_refused(net, root, big_batch, "layer 'conv': algos[1] 'winograd': micro-batch 5 is above the layer's batch 4");
	check_refused(net, root, same_algo, "layer 'conv': algos[1] 'implicit_gemm': measured twice at batch 4");
	check_refused(net, root, no_name, "layer 'conv': algos[2]: no name");
	check_refused(net, root, no_phase, "layer 'conv': algos[4] 'fft': no time in either phase");
	check_refused(net, root, huge_ws, "layer 'conv': algos[0] 'implicit_gemm': workspace of 1125899906842625 bytes");
	check_refused(net, root, no_device, "the measurement names no device");
	check_refused(net, root, bad_device, "device: not a UTF-8 string");

	/* JSON that is not the loaded net */
	other = json_deep_copy(root);
	json_array_remove(json_object_get(other, "layers"), 5);
	fake_profile(&m);
	CHECK(prof_apply(other, net, &m, NULL, &kept, &err) == NULL);
	CHECK_STR(err.msg, "the net file has 5 layers, the net 6");
	prof_release(&m);
	json_decref(other);

	/* an empty measurement keeps everything */
	prof_init(&m);
	snprintf(m.device, sizeof(m.device), "Fake GPU 1");
	other = prof_apply(root, net, &m, NULL, &kept, &err);
	CHECK(other != NULL);
	CHECK_U64(kept, 6);
	CHECK(json_equal(json_object_get(other, "layers"), json_object_get(root, "layers")));
	json_decref(other);
	prof_release(&m);
	net_free(net);
	json_decref(root);
}

int main(void)
{
	test_batches();
	test_apply();
	test_refused();
	return unit_report("test_profile");
}
