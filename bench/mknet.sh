#!/bin/sh
# Generate a synthetic net for benchmarks: mknet.sh chain|fchain|dag|mlp N > net.json
# chain: data, then N-2 layers cycling conv/bn/relu(in place)/dropout, then loss.
# fchain: the same with fc instead of conv: no checkpoint layer at all.
# dag:   residual blocks (conv, bn, relu, conv, bn, add with the block input,
#        relu) so every block has a fan-out and a join; N layers in all.
# mlp:   a residual MLP with no conv layer (fc, relu, fc, add with the block
#        input), as transformer feed-forward stacks are.
kind=${1:?chain|fchain|dag|mlp}; n=${2:?layers}
awk -v kind="$kind" -v n="$n" 'BEGIN {
	printf "{\"format\": \"memplan-net/1\", \"name\": \"%s-%d\", \"optimizer\": \"momentum\",\n \"layers\": [\n", kind, n
	printf "  {\"name\": \"l0\", \"type\": \"data\", \"shape\": [8, 64, 28, 28]}"
	prev = "l0"; i = 1
	if (kind == "chain" || kind == "fchain") {
		for (; i < n - 1; i++) {
			m = i % 4
			if (m == 1 && kind == "fchain") t = "\"type\": \"fc\", \"params\": [[256, 256]], \"time\": {\"fwd\": 0.20, \"bwd\": 0.40}"
			else if (m == 1) t = "\"type\": \"conv\", \"params\": [[64, 64, 3, 3]], \"time\": {\"fwd\": 0.20, \"bwd\": 0.40}"
			else if (m == 2) t = "\"type\": \"bn\", \"params\": [[64], [64]], \"time\": {\"fwd\": 0.05, \"bwd\": 0.08}"
			else if (m == 3) t = "\"type\": \"relu\", \"inplace\": true, \"time\": {\"fwd\": 0.02, \"bwd\": 0.03}"
			else t = "\"type\": \"dropout\", \"time\": {\"fwd\": 0.02, \"bwd\": 0.02}"
			printf ",\n  {\"name\": \"l%d\", %s, \"inputs\": [\"%s\"], \"shape\": [8, 64, 28, 28]}", i, t, prev
			prev = "l" i
		}
	} else if (kind == "mlp") {
		while (i + 4 <= n - 1) {
			src = prev
			printf ",\n  {\"name\": \"l%d\", \"type\": \"fc\", \"inputs\": [\"%s\"], \"shape\": [8, 64, 28, 28], \"params\": [[256, 256]], \"time\": {\"fwd\": 0.2, \"bwd\": 0.4}}", i, src; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"relu\", \"inputs\": [\"l%d\"], \"inplace\": true, \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.03}}", i, i - 1; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"fc\", \"inputs\": [\"l%d\"], \"shape\": [8, 64, 28, 28], \"params\": [[256, 256]], \"time\": {\"fwd\": 0.2, \"bwd\": 0.4}}", i, i - 1; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"add\", \"inputs\": [\"l%d\", \"%s\"], \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.01}}", i, i - 1, src; i++
			prev = "l" (i - 1)
		}
		for (; i < n - 1; i++) {
			printf ",\n  {\"name\": \"l%d\", \"type\": \"relu\", \"inputs\": [\"%s\"], \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.03}}", i, prev
			prev = "l" i
		}
	} else {
		while (i + 7 <= n - 1) {
			src = prev
			printf ",\n  {\"name\": \"l%d\", \"type\": \"conv\", \"inputs\": [\"%s\"], \"shape\": [8, 64, 28, 28], \"params\": [[64, 64, 3, 3]], \"time\": {\"fwd\": 0.2, \"bwd\": 0.4}}", i, src; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"bn\", \"inputs\": [\"l%d\"], \"shape\": [8, 64, 28, 28], \"params\": [[64], [64]], \"time\": {\"fwd\": 0.05, \"bwd\": 0.08}}", i, i - 1; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"relu\", \"inputs\": [\"l%d\"], \"inplace\": true, \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.03}}", i, i - 1; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"conv\", \"inputs\": [\"l%d\"], \"shape\": [8, 64, 28, 28], \"params\": [[64, 64, 3, 3]], \"time\": {\"fwd\": 0.2, \"bwd\": 0.4}}", i, i - 1; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"bn\", \"inputs\": [\"l%d\"], \"shape\": [8, 64, 28, 28], \"params\": [[64], [64]], \"time\": {\"fwd\": 0.05, \"bwd\": 0.08}}", i, i - 1; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"add\", \"inputs\": [\"l%d\", \"%s\"], \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.01}}", i, i - 1, src; i++
			printf ",\n  {\"name\": \"l%d\", \"type\": \"relu\", \"inputs\": [\"l%d\"], \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.03}}", i, i - 1; i++
			prev = "l" (i - 1)
		}
		for (; i < n - 1; i++) {
			printf ",\n  {\"name\": \"l%d\", \"type\": \"relu\", \"inputs\": [\"%s\"], \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.02, \"bwd\": 0.03}}", i, prev
			prev = "l" i
		}
	}
	printf ",\n  {\"name\": \"l%d\", \"type\": \"loss\", \"inputs\": [\"%s\"], \"shape\": [8, 64, 28, 28], \"time\": {\"fwd\": 0.01, \"bwd\": 0.01}}\n ]}\n", n - 1, prev
}'
