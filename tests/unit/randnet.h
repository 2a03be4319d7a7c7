/*
 * Seeded random nets for the planner tests (test_optimal, test_floor): a
 * DAG or a chain of convs, in-place relus, pools and concats over random
 * sizes, with momentum.  Included after unit.h; the includer defines
 * rnd(n), its own seeded stream.
 */
#ifndef MP_TEST_RANDNET_H
#define MP_TEST_RANDNET_H

#include <jansson.h>
#include <stdbool.h>
#include <stdlib.h>

static uint32_t rnd(uint32_t n);

/* A random DAG of n layers after data: each a conv, an in-place relu, a
 * pool or (unless chain) a concat of the last layer and an earlier one. */
static json_t *random_net(uint32_t n, bool chain)
{
	json_t *layers = json_array();
	uint64_t *bytes = calloc(n + 1, sizeof(*bytes));
	uint8_t *noref = calloc(n + 1, 1), prev_conv = 0; /* noref: an in-place relu overwrites it */
	char name[16], in1[16], in2[16];

	bytes[0] = 1000 + 250 * rnd(8);
	json_array_append_new(layers, json_pack("{s:s,s:s,s:I,s:{s:f}}", "name", "l0", "type", "data",
						"bytes", (json_int_t)bytes[0], "time", "fwd", 0.1));
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t kind = rnd(i > 2 ? (chain ? 3 : 4) : 2), j = i > 2 ? rnd(i - 1) : 0;
		json_t *l;
		int inplace = 0;

		if (kind == 3 && noref[j])
			kind = 0;
		if (kind == 1 && prev_conv && rnd(2)) {
			inplace = 1;
			noref[i - 1] = 1;
		}
		prev_conv = kind == 0;
		snprintf(name, sizeof(name), "l%u", i);
		snprintf(in1, sizeof(in1), "l%u", i - 1);
		snprintf(in2, sizeof(in2), "l%u", j);
		bytes[i] = 1000 + 500 * rnd(8);
		if (kind == 0) {
			l = json_pack("{s:s,s:s,s:[s],s:I,s:[i],s:{s:f,s:f,s:f}}", "name", name, "type", "conv",
				      "inputs", in1, "bytes", (json_int_t)bytes[i], "param_bytes", 200,
				      "time", "fwd", 0.5 + 0.25 * rnd(8), "bwd", 1.0 + 0.5 * rnd(4), "update", 0.05);
		} else if (kind == 1) {
			bytes[i] = bytes[i - 1];
			l = json_pack("{s:s,s:s,s:[s],s:I,s:b,s:{s:f,s:f}}", "name", name, "type", "relu",
				      "inputs", in1, "bytes", (json_int_t)bytes[i], "inplace", inplace,
				      "time", "fwd", 0.1 + 0.1 * rnd(3), "bwd", 0.2);
		} else if (kind == 2) {
			bytes[i] = bytes[i - 1] / 4 ? bytes[i - 1] / 4 : 1;
			l = json_pack("{s:s,s:s,s:s,s:[s],s:I,s:{s:f,s:f}}", "name", name, "type", "pool", "mode", "max",
				      "inputs", in1, "bytes", (json_int_t)bytes[i], "time", "fwd", 0.2, "bwd", 0.3);
		} else {
			bytes[i] = bytes[i - 1] + bytes[j];
			l = json_pack("{s:s,s:s,s:[s,s],s:I,s:{s:f,s:f}}", "name", name, "type", "concat",
				      "inputs", in1, in2, "bytes", (json_int_t)bytes[i], "time", "fwd", 0.1, "bwd", 0.1);
		}
		json_array_append_new(layers, l);
	}
	snprintf(in1, sizeof(in1), "l%u", n);
	json_array_append_new(layers, json_pack("{s:s,s:s,s:[s],s:i,s:{s:f,s:f}}", "name", "loss", "type", "loss",
						"inputs", in1, "bytes", 8, "time", "fwd", 0.1, "bwd", 0.1));
	free(bytes);
	free(noref);
	return json_pack("{s:s,s:s,s:s,s:s,s:o}", "format", "memplan-net/1", "name", "random",
			 "dtype", "float32", "optimizer", "momentum", "layers", layers);
}

#endif
