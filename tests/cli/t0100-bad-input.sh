#!/bin/sh
# Bad input (DESIGN.md "Inputs users will give, and bad ones"; issue 2 "Bad
# input"): every malformed file in tests/bad/ and every bad command line exits
# with status 2 and prints exactly one line naming the file, the JSON path and
# what was expected, and nothing on stdout: never a crash, hang or partial output.
# A test marked "# BUG:" expects what memplan should do and fails until it is
# fixed; "# Found:" marks a bug this suite found (and memplan since fixed),
# with what memplan did then.
. "$(dirname "$0")/../lib.sh"

# bad NAME MESSAGE [COMMAND]: COMMAND (default check) on tests/bad/NAME.json
# exits 2, prints nothing on stdout, and exactly
# "memplan: tests/bad/NAME.json: MESSAGE" on stderr.
bad() {
	expect_run "${3:-check} $1" 2 --stdout empty --stderr "memplan: tests/bad/$1.json: $2" \
		-- memplan "${3:-check}" "tests/bad/$1.json"
}

# timed NAME LIMIT_MS EXPECT_RUN_ARGS...: expect_run, and within LIMIT_MS.
timed() {
	tname=$1; limit=$2; shift 2
	t0=$(date +%s%N)
	expect_run "$tname" "$@"
	ms=$(( ($(date +%s%N) - t0) / 1000000 ))
	if [ "$ms" -gt "$limit" ]; then
		not_ok "$tname: time" "took $ms ms, limit $limit ms"
	else
		ok
	fi
}
LIMIT_MS=${BAD_INPUT_LIMIT_MS:-5000}

# ---- JSON syntax ----------------------------------------------------------
bad json-trailing-comma "line 3, column 53: invalid JSON: string or '}' expected near '}'"
bad json-unterminated "line 6, column 109: invalid JSON: ']' expected near end of file"
bad json-dup-key 'line 1, column 47: invalid JSON: duplicate object key near '\''"name"'\'''
bad json-huge-int "line 3, column 64: invalid JSON: too big integer near '99999999999999999999'"
bad json-huge-real "line 4, column 119: invalid JSON: real number overflow near '1e999'"
bad json-deep-nesting "line 1, column 2086: invalid JSON: maximum parsing depth reached near '['"
bad whitespace-only "line 4, column 0: invalid JSON: '[' or '{' expected near end of file"
# Found: an empty file (a generator that failed, a truncated copy) read as
# "line 1, column 0: invalid JSON: '[' or '{' expected near end of file".
bad empty 'the file is empty (expected a JSON object)'
# Found: jansson's text named its own API flag ("\u0000 is not allowed
# without JSON_ALLOW_NUL").
bad json-nul-escape 'name: string contains a NUL character'
# Found: a UTF-8 byte order mark read as "expected near '<invisible>'".
bad json-bom 'line 1, column 1: invalid JSON: the file starts with a byte order mark (save it as UTF-8 without BOM)'

# ---- top level ------------------------------------------------------------
bad top-array '(top level): expected an object, got an array'
bad top-string 'line 1, column 15: invalid JSON: '\''['\'' or '\''{'\'' expected near '\''"memplan-net/1"'\'''
bad top-unknown-key 'layerz: unknown key (expected one of: format, name, dtype, precision, optimizer, grads, framework, device, batch, layers, ops, tensors, time_source, description, generator)'
bad format-missing 'format: missing (expected "memplan-net/1")'
# Found: the message did not say what the file gave (a newer version? a typo?).
bad format-wrong-version 'format: expected "memplan-net/1", got "memplan-net/2"'
bad format-number 'format: expected "memplan-net/1", got an integer'
bad format-plan 'format: this is a plan, not a net (memplan verify reads plans)'
bad name-number 'name: expected a string, got an integer'
bad name-empty 'name: expected a non-empty string'
bad description-number 'description: expected a string, got an integer'
bad time-source-number 'time_source: expected a string, got an integer'
bad dtype-number 'dtype: expected a string, got an integer'
bad dtype-unknown "dtype: unknown dtype 'float33' (float32, float16, bfloat16, float64, float8, int8, uint8, int32, int64, bool)"
bad optimizer-number 'optimizer: expected a string, got an integer'
bad optimizer-unknown "optimizer: unknown optimizer 'rmsprop' (none, sgd, momentum, adam, adamw)"
bad net-empty 'the net has no layers and no ops'
bad layers-empty 'the net has no layers and no ops'
bad layers-object 'layers: expected an array, got an object'

# ---- device in the net ----------------------------------------------------
bad device-unknown-name "device: unknown device 'gtx-9000' (see 'memplan devices')"
bad device-number 'device: expected an object, got an integer'
bad device-missing-memory 'device: missing "memory"'
bad device-missing-d2h 'device: missing "d2h_gbps"'
bad device-negative-bandwidth 'device.h2d_gbps: must be positive, got -12 GB/s'
bad device-zero-bandwidth 'device.d2h_gbps: must be positive, got 0 GB/s'
bad device-bandwidth-string 'device.h2d_gbps: expected a number, got a string'
bad device-memory-unit "device.memory: '16X': unknown unit 'x' (use B, K, M, G, T or P; all powers of 1024)"
bad device-memory-zero 'device.memory: device memory must be positive'
bad device-unknown-key 'device.bandwidth: unknown key (expected one of: name, memory, h2d_gbps, d2h_gbps, latency_us, mem_gbps, tflops, no_verify, source)'
bad device-no-verify-number 'device.no_verify: expected true or false, got an integer'
bad device-latency-negative 'device.latency_us: must not be negative, got -1 us'
bad device-tflops-dtype 'device.tflops.float33: unknown dtype'
# Found: 5e-324 GB/s was accepted; copies took inf ms, analyze printed "inf"
# and --format json silently dropped "time_ms" of the recompute strategy.
bad device-tiny-bandwidth 'device.h2d_gbps: must be between 1e-06 and 1e+06 GB/s, got 4.94066e-324'
bad device-tiny-bandwidth 'device.h2d_gbps: must be between 1e-06 and 1e+06 GB/s, got 4.94066e-324' analyze

# ---- layer name, type, unknown keys ---------------------------------------
bad layer-not-object 'layers[1]: expected an object, got a string'
bad layer-name-missing 'layers[1]: missing "name"'
bad layer-name-number 'layers[1].name: expected a string, got an integer'
bad layer-name-empty 'layers[1].name: expected a non-empty string'
bad layer-name-duplicate "layers[2].name: duplicate layer name 'fc1' (first at layers[1])"
bad layer-type-missing 'layers[1]: missing "type"'
bad layer-type-number 'layers[1].type: expected a string, got an integer'
bad layer-type-unknown "layers[1].type: unknown layer type 'convolution' (data, conv, fc, relu, sigmoid, tanh, elu, gelu, silu, pool, lrn, bn, layernorm, dropout, softmax, loss, add, concat, embedding, attention, reshape, custom)"
bad quant-not-frozen "layers[1].quant: only a frozen fc layer's weight is quantized (QLoRA)"
bad quant-workspace 'layers[1].quant: a 4-bit layer'"'"'s workspace is its dequantized weight: drop "workspace" and "algos"'
bad quant-unknown "layers[1].quant: unknown quantization 'int4' (none, nf4, nf4-dq)"
bad layer-unknown-key 'layers[2].inptus: unknown key (expected one of: name, type, inputs, shape, bytes, dtype, params, param_bytes, time, workspace, algos, saves, inplace, mode, kernel, stride, pad, dilation, groups, frozen, quant, heads, impl, comment)'
bad layer-dtype-number 'layers[2].dtype: expected a string, got an integer'
bad layer-dtype-unknown "layers[2].dtype: unknown dtype 'float33' (float32, float16, bfloat16, float64, float8, int8, uint8, int32, int64, bool)"
# Found: every other type error says what it got; this one did not.
bad comment-number 'layers[2].comment: expected a string, got an integer'

# ---- inputs and cycles ----------------------------------------------------
bad inputs-missing 'layers[2]: missing "inputs" (a relu layer reads at least one layer)'
bad inputs-string 'layers[2].inputs: expected an array of layer names, got a string'
bad inputs-empty 'layers[2].inputs: a relu layer reads at least one layer'
bad inputs-number 'layers[2].inputs[0]: expected a string, got an integer'
bad inputs-unknown "layers[2].inputs[0]: no layer named 'conv9'"
bad inputs-unknown "layers[2].inputs[0]: no layer named 'conv9'" analyze
bad inputs-self "layers[2].inputs[0]: layer 'relu1' reads itself"
bad inputs-on-data 'layers[0].inputs: a data layer takes no inputs'
# Found: names from the file were printed raw, so a newline in a name split
# the message and forged a second "memplan:" line.  Names reach tables,
# CSV, SVG and reports too, so a string memplan reads may not hold a control
# character at all (C0, DEL, or C1 in UTF-8); the message still escapes it.
bad inputs-name-newline 'layers[2].inputs[0]: control character U+000A at byte 3 (names and keywords reach terminals and reports)'
bad name-escape 'layers[2].name: control character U+001B at byte 5 (names and keywords reach terminals and reports)'
bad name-c1 'layers[1].name: control character U+009B at byte 2 (names and keywords reach terminals and reports)'
bad device-control 'device: control character U+009B at byte 4 (names and keywords reach terminals and reports)'
# a string echoed in a message has its C1 controls escaped too
printf '{"format": "memplan-net/1\\u009b2J", "layers": []}' >"$TMP/fmt.json"
expect_run "C1 in an echoed format" 2 --stdout empty \
	--stderr "memplan: $TMP/fmt.json: format: expected \"memplan-net/1\", got \"memplan-net/1\\u009b2J\"" -- memplan check "$TMP/fmt.json"
bad tensor-name-control 'tensors[1].name: control character U+000A at byte 1 (names and keywords reach terminals and reports)'
# Found: nets that contradict themselves were accepted (issue 12).
bad add-bytes-differ "layers[2].inputs[1]: 'fc1' has 512 bytes, but the add 'sum' makes 1024 (give both shapes for a broadcasting add)"
bad add-dtypes-differ "layers[2].inputs[1]: 'fc1' has 128 elements, but the add 'sum' makes 256 and its shape does not broadcast to the output's"
bad add-no-broadcast "layers[2].inputs[1]: 'fc1' has 512 bytes, but the add 'sum' makes 1024 and its shape does not broadcast to the output's"
bad concat-smaller "layers[2]: the concat 'cat' makes 1024 bytes, but its inputs hold 2048 (for a concat of crops or slices, give the shapes of the output and of every input, with one batch)"
bad concat-batch "layers[2]: the concat 'cat' makes 4 bytes, but its inputs hold 2048 (for a concat of crops or slices, give the shapes of the output and of every input, with one batch)"
# Found (review): the inputs' sum could wrap around and pass
awk 'BEGIN { printf "{\"format\": \"memplan-net/1\", \"layers\": [{\"name\": \"x\", \"type\": \"data\", \"bytes\": \"256T\"}, {\"name\": \"c\", \"type\": \"concat\", \"bytes\": \"256T\", \"inputs\": [\"x\""
	for (i = 0; i < 65536; i++) printf ", \"x\""; printf "]}]}\n" }' >"$TMP/wrap.json"
expect_run "concat inputs past 2^64 bytes" 2 --stdout empty --stderr "memplan: $TMP/wrap.json: layers[1]: the inputs of 'c' hold more than 2^64 bytes" -- \
	memplan check "$TMP/wrap.json"
bad concat-larger "layers[2]: the concat 'cat' makes 3072 bytes, but its inputs hold 2048"
bad time-bwd-data 'layers[0].time.bwd: a data layer has no backward pass (nothing to differentiate)'
bad time-update-no-params 'layers[2].time.update: the layer has no parameters, so the optimizer never updates it (give "params" or drop the time)'
bad grads-unknown "grads: unknown mode 'sometimes' (keep or set_to_none)"
bad framework-unknown "framework: unknown framework 'tensorflow' (cudnn or pytorch)"
bad framework-number "framework: expected a string, got an integer"
bad precision-unknown "precision: unknown policy 'tf32' (fp32, bf16-mixed, fp16-mixed, bf16-pure, bf16-autocast, fp16-autocast)"
bad precision-no-policy 'precision: missing "policy" (fp32, bf16-mixed, fp16-mixed, bf16-pure, bf16-autocast, fp16-autocast)'
bad precision-key 'precision.gradients: unknown key (expected one of: policy, params, grads, master, optimizer_state)'
bad precision-dtype "precision.optimizer_state: unknown dtype 'int3' (float32, float16, bfloat16, float64, float8, int8, uint8, int32, int64, bool)"
bad precision-number 'precision: expected a policy name or an object, got an integer'
bad frozen-no-params 'layers[1].frozen: the layer has no parameters to freeze'
bad frozen-update 'layers[1].time.update: a frozen layer is never updated (drop the time or "frozen")'
bad frozen-string 'layers[1].frozen: expected true or false, got a string'
bad attention-impl "layers[1].impl: unknown attention implementation 'slow' (flash, sdpa or eager)"
bad attention-eager-heads 'layers[1]: eager attention needs "heads" and a shape [batch, seq, hidden]'
bad heads-not-attention 'layers[1].heads: only attention layers have one'
bad op-output-twice "ops[0].outputs[1]: 'h' is listed twice (also at [0]); an op writes each output once"
# what add and concat do allow: a broadcasting add, a concat of stated crops
expect_run "check sizes-ok" 0 --stdout-grep "valid memplan-net/1 'sizes-ok'" -- memplan check tests/data/sizes-ok.json
bad cycle-2 "layers[1].inputs[1]: cycle: 'fc1' depends on itself through 'relu1'"
bad cycle-2 "layers[1].inputs[1]: cycle: 'fc1' depends on itself through 'relu1'" analyze
bad cycle-3 "layers[1].inputs[0]: cycle: 'fc1' depends on itself through 'loss'"

# ---- shape and bytes ------------------------------------------------------
bad shape-missing 'layers[2]: missing "shape" (or "bytes")'
bad shape-and-bytes 'layers[2]: give "shape" or "bytes", not both'
bad shape-string 'layers[2].shape: expected an array of dimensions, got a string'
bad shape-empty 'layers[2].shape: expected 1 to 8 dimensions, got 0'
bad shape-too-many-dims 'layers[2].shape: expected 1 to 8 dimensions, got 9'
bad shape-zero-dim 'layers[2].shape[1]: dimension must be positive, got 0'
bad shape-negative-dim 'layers[2].shape[1]: dimension must be positive, got -32'
bad shape-float-dim 'layers[2].shape[1]: expected an integer, got a number'
bad shape-string-dim 'layers[2].shape[1]: expected an integer, got a string'
bad shape-absurd-dim 'layers[2].shape[1]: 2199023255552 is out of range [1, 1099511627776]'
bad shape-overflow 'layers[2].shape: shape has more than 2^50 elements'
bad shape-overflow 'layers[2].shape: shape has more than 2^50 elements' analyze
bad shape-too-large-bytes 'layers[2].shape: tensor is larger than the 1 PiB memplan accepts'
bad bytes-negative 'layers[2].bytes: size must not be negative, got -1'
bad bytes-zero 'layers[2].bytes: must be positive'
bad bytes-2P "layers[2].bytes: '2P' is larger than the 1 PiB memplan accepts"
bad bytes-huge-string "layers[2].bytes: '99999999999999999999' is larger than the 1 PiB memplan accepts"
bad bytes-unit-unknown "layers[2].bytes: '12X': unknown unit 'x' (use B, K, M, G, T or P; all powers of 1024)"
bad bytes-not-size "layers[2].bytes: 'lots' is not a size (expected a number with an optional unit such as 512M or 11G)"
bad bytes-negative-string "layers[2].bytes: '-5M' is not a size (expected a number with an optional unit such as 512M or 11G)"
bad bytes-nan-string "layers[2].bytes: 'nan' is not a size (expected a number with an optional unit such as 512M or 11G)"
bad bytes-inf-string "layers[2].bytes: 'inf' is not a size (expected a number with an optional unit such as 512M or 11G)"
bad bytes-float 'layers[2].bytes: expected a whole number of bytes or a string with a unit such as "24M", got 1.5'
bad bytes-bool 'layers[2].bytes: expected a size (bytes, or a string such as "24M"), got true'
bad workspace-negative 'layers[1].workspace: size must not be negative, got -1'
# Found: 16384 parameters of 1 PiB each: the byte sums wrapped around 2^64,
# `check` exited 0 reporting 0 B of parameters, `analyze` hit a signed
# overflow in sim.c and the assertion 'res >= 0 && live >= 0' (exit 134).
bad size-total-overflow "layers[1].param_bytes: the net's tensors add up to more than the 64 PiB memplan accepts"
bad size-total-overflow "layers[1].param_bytes: the net's tensors add up to more than the 64 PiB memplan accepts" analyze

# ---- params ---------------------------------------------------------------
bad params-object 'layers[1].params: expected an array of shapes, got an object'
bad params-flat 'layers[1].params[0]: expected an array of dimensions, got an integer'
bad params-zero-dim 'layers[1].params[0][1]: dimension must be positive, got 0'
bad params-and-param-bytes 'layers[1]: give "params" or "param_bytes", not both'
bad param-bytes-negative 'layers[1].param_bytes: size must not be negative, got -5'
bad param-bytes-unit "layers[1].param_bytes: '2Q': unknown unit 'q' (use B, K, M, G, T or P; all powers of 1024)"
bad param-bytes-object 'layers[1].param_bytes: expected a size (bytes, or a string such as "24M"), got an object'
# Found: the path stopped at the layer ("layers[1]: parameter 1 has zero bytes").
bad param-bytes-zero 'layers[1].param_bytes[1]: must be positive'

# ---- time and algorithms --------------------------------------------------
bad time-number 'layers[1].time: expected an object, got a number'
bad time-negative 'layers[1].time.fwd: must not be negative, got -0.1 ms'
bad time-string-nan 'layers[1].time.fwd: expected a number, got a string'
bad time-unknown-key 'layers[1].time.forward: unknown key (expected one of: fwd, bwd, update)'
bad time-update-negative 'layers[1].time.update: must not be negative, got -1 ms'
# Found: 1.7e308 ms was accepted; two of them sum to inf: check printed "inf
# ms forward", analyze "inf" and "-nan%", --format json dropped "time_ms".
bad time-huge 'layers[1].time.fwd: must be between 0 and 1e+09 ms, got 1.7e+308'
bad time-huge 'layers[1].time.fwd: must be between 0 and 1e+09 ms, got 1.7e+308' analyze
bad algos-object 'layers[1].algos: expected an array of algorithms, got an object'
bad algos-missing-name 'layers[1].algos[0]: missing "name"'
bad algos-missing-time 'layers[1].algos[0]: missing "time"'
bad algos-duplicate "layers[1].algos[1].name: duplicate algorithm 'gemm'"
bad algos-workspace-unit "layers[1].algos[0].workspace: '24Q': unknown unit 'q' (use B, K, M, G, T or P; all powers of 1024)"
bad algos-time-update 'layers[1].algos[0].time.update: unknown key (expected one of: fwd, bwd)'
bad algos-unknown-key 'layers[1].algos[0].ws: unknown key (expected one of: name, workspace, time, batch)'

# ---- saves, mode, in place ------------------------------------------------
bad saves-string 'layers[2].saves: expected an array of "input", "output", "params", "mask", "stats", "indices", got a string'
bad saves-number 'layers[2].saves[0]: expected a string, got an integer'
bad saves-unknown "layers[2].saves[0]: unknown item 'outputs' (expected input, output, params, mask, stats or indices)"
bad mode-not-pool 'layers[2].mode: only pool layers have a mode'
bad mode-number 'layers[2].mode: expected a string, got an integer'
bad mode-unknown "layers[2].mode: unknown pool mode 'min' (max or avg)"
bad inplace-string 'layers[2].inplace: expected true or false, got a string'
bad inplace-two-consumers "layers[2].inplace: 'relu1' overwrites the output of 'fc1', which 2 layers read"
bad inplace-producer-saves-output "layers[3].inplace: 'relu2' overwrites the output of 'relu1', which its backward reads"
bad inplace-saves-input "layers[2].inplace: 'relu1' saves its input for backward, which updating it in place destroys (\"framework\": \"pytorch\" saves a copy)"
bad inplace-size-mismatch "layers[2].inplace: output of 'relu1' (512 bytes) differs from its input 'fc1' (1024 bytes)"
bad inplace-two-inputs 'layers[2].inplace: an in-place layer has exactly one input'
# Found: a reshape is in place implicitly; its errors named
# "layers[2].inplace", a key the file does not have.
bad reshape-size "layers[2].shape: a reshape keeps its input's size: 'relu1' is 512 bytes, its input 'fc1' is 1024 bytes"
bad reshape-two-inputs 'layers[2].inputs: a reshape layer has exactly one input'

# ---- conv and pool geometry (memplan-net(5) "Geometry") ---------------------
bad geo-kernel-not-conv 'layers[2].kernel: only conv and pool layers have a kernel'
bad geo-groups-on-pool 'layers[3].groups: only conv layers have groups'
bad geo-stride-string 'layers[1].stride: expected a positive integer or an array of them, one per spatial dimension, got a string'
bad geo-stride-float 'layers[1].stride: expected a positive integer or an array of them, one per spatial dimension, got a number'
bad geo-groups-array 'layers[1].groups: expected a positive integer, got an array'
bad geo-stride-zero 'layers[1].stride: must be positive, got 0'
bad geo-pad-negative 'layers[1].pad: must not be negative, got -1'
bad geo-stride-huge 'layers[1].stride: 2147483648 is larger than 2147483647'
bad geo-kernel-element-string 'layers[3].kernel[1]: expected an integer, got a string'
bad geo-kernel-four-values 'layers[3].kernel: expected one value per spatial dimension (1 to 3), got 4'
bad geo-kernel-wrong-count 'layers[3].kernel: expected 2 values, one per spatial dimension of [N, C, ...], got 3'
bad geo-without-shapes "layers[1].stride: geometry needs shapes: 'conv1' has \"bytes\", not a \"shape\""
bad geo-input-without-shapes "layers[1].pad: geometry needs shapes: the input 'data' has \"bytes\", not a \"shape\""
bad geo-weight-param-bytes 'layers[1].pad: geometry needs shapes: the weight is given as "param_bytes"'
bad geo-conv-no-params "layers[1].kernel: geometry needs the conv's weight in \"params\""
bad geo-two-inputs "layers[1].pad: geometry needs exactly one input; 'conv1' reads 2"
bad geo-shape-2d "layers[1].stride: geometry needs a shape [N, C, spatial...] with 1 to 3 spatial dimensions; 'conv1' has 2 dimensions"
bad geo-dims-mismatch "layers[1].stride: geometry needs the input's shape to have as many dimensions: 'conv1' has 3, its input 'data' 4"
bad geo-batch-mismatch "layers[3].shape[0]: batch 4 differs from the input 'relu1' batch 8"
bad geo-groups-not-dividing "layers[1].groups: 2 does not divide the input's 3 channels"
bad geo-groups-not-dividing-output "layers[1].groups: 2 does not divide the output's 15 channels"
bad geo-weight-mismatch 'layers[1].params[0]: the weight [16, 3, 3, 3] is not [K, C/groups, kernel...] = [16, 3, 5, 5]'
bad geo-weight-groups-mismatch 'layers[1].params[0]: the weight [16, 4, 3, 3] is not [K, C/groups, kernel...] = [16, 2, 3, 3]'
bad geo-weight-kernel-huge 'layers[1].params[0][2]: a kernel of 4294967295 is larger than 2147483647'
bad geo-weight-dims 'layers[1].params[0]: the weight [16, 27] has 2 dimensions, not the 4 of [K, C/groups, kernel...]'
bad geo-pool-no-kernel "layers[3].stride: a pool layer's geometry needs \"kernel\""
bad geo-pool-channels "layers[3].shape[1]: a pool layer keeps its input's channels: 8, its input 'relu1' has 16"
bad geo-stride-inconsistent "layers[1].shape[2]: expected floor((32 + 2*1 - 1*(3 - 1) - 1) / 2) + 1 = 16 from the input 'data' and the geometry, got 32"
bad geo-pad-inconsistent "layers[1].shape[2]: expected floor((32 + 2*2 - 1*(3 - 1) - 1) / 1) + 1 = 34 from the input 'data' and the geometry, got 32"
bad geo-pool-stride-inconsistent "layers[3].shape[2]: expected floor((32 + 2*0 - 1*(3 - 1) - 1) / 1) + 1 = 30 from the input 'relu1' and the geometry, got 16"
bad geo-window-too-wide "layers[3].shape[2]: the window, 1*(33 - 1) + 1 = 33 wide, is wider than the input 'relu1' with its padding, 32 + 2*0 = 32"

# ---- explicit tensors and ops ---------------------------------------------
bad tensors-object 'tensors: expected an array, got an object'
bad tensor-missing-name 'tensors[0]: missing "name"'
bad tensor-missing-size 'tensors[0]: missing "shape" (or "bytes")'
bad tensor-duplicate "tensors[2].name: duplicate tensor name 'y'"
bad tensor-duplicate-lowered "tensors[0].name: duplicate tensor name 'fc1.out'"
bad tensor-unknown-kind "tensors[0].kind: unknown tensor kind 'weights' (input, activation, gradient, parameter, parameter_gradient, optimizer_state, workspace)"
bad tensor-per-sample-no-batch 'tensors[0].per_sample: the net has no batch (give a top-level "batch")'
bad tensor-per-sample-odd 'tensors[0].per_sample: 64 bytes is no multiple of the batch 3'
bad tensor-per-sample-string 'tensors[0].per_sample: expected true or false, got a string'
bad batch-zero 'batch: 0 is out of range [1, 4294967295]'
bad batch-data-mismatch "batch: 16, but data layer 'data' has a batch of 8"
bad tensor-unknown-key 'tensors[0].size: unknown key (expected one of: name, kind, shape, bytes, dtype, per_sample, comment)'
bad ops-object 'ops: expected an array, got an object'
bad op-missing-name 'ops[0]: missing "name"'
bad op-missing-outputs 'ops[0]: missing "outputs"'
bad op-empty-outputs 'ops[0].outputs: an op writes at least one tensor'
bad op-unknown-tensor "ops[0].inputs[0]: no tensor named 'z'"
bad op-duplicate "ops[1].name: duplicate op name 'f'"
bad op-duplicate-lowered "ops[0].name: duplicate op name 'fc1.fwd'"
bad op-unknown-phase "ops[0].phase: unknown phase 'backwards' (forward, backward or optimizer)"
bad op-unknown-kind "ops[0].type: unknown type 'conv2d'"
bad op-time-object 'ops[0].time: expected a number, got an object'
bad op-time-negative 'ops[0].time: must not be negative, got -1 ms'
bad op-recompute-backward 'ops[0].recompute: only forward ops can be recomputed'
bad op-algos-missing-time 'ops[0].algos[0]: missing "time"'
# Found: no JSON path ("op 'f' reads 'z', which no op writes ...").
bad op-reads-unwritten 'ops[0].inputs[0]: op '\''f'\'' reads '\''z'\'', which no op writes (give it kind "input" or "parameter" if it exists before the iteration)'
# Found: wrong message "which no op writes" (the producer check ran before
# the workspace check, so the workspace message was unreachable).
bad op-reads-workspace "ops[1].inputs[0]: op 'g' reads workspace tensor 'f.ws'; workspace lives only inside its op"
# Found: no JSON path (the message comes from route_build).
bad op-forward-reads-backward "ops[0].inputs[1]: forward op 'f' reads 'g', which only a later phase writes"
bad op-forward-reads-backward "ops[0].inputs[1]: forward op 'f' reads 'g', which only a later phase writes" analyze
# Found: wrong message: 'y' is written by 'f' itself, in the same phase, yet
# the message said "which only a later phase writes".
bad op-reads-own-output "ops[0].inputs[1]: op 'f' reads 'y', which no earlier op writes"
# Found: no JSON path and no second op ("cycle: op 'g' depends on itself").
bad op-cycle "ops[0].inputs[1]: cycle: op 'f' depends on itself through 'g'"
bad op-cycle "ops[0].inputs[1]: cycle: op 'f' depends on itself through 'g'" analyze
# Found: a cycle through a layer's op and an explicit one was named at the
# layer's op, which has no JSON path; the explicit op on it is named instead
bad op-cycle-layer "ops[0].inputs[0]: cycle: op 'f' depends on itself through 'z.fwd'"

# ---- files that are not there or not files --------------------------------
expect_run "check nonexistent file" 2 --stdout empty \
	--stderr 'memplan: tests/bad/nonexistent.json: cannot open: No such file or directory' \
	-- memplan check tests/bad/nonexistent.json
expect_run "analyze nonexistent file" 2 --stdout empty \
	--stderr 'memplan: tests/bad/nonexistent.json: cannot open: No such file or directory' \
	-- memplan analyze tests/bad/nonexistent.json
# Found: a directory read as "line 1, column 0: invalid JSON: '[' or '{'
# expected near end of file".
expect_run "check directory" 2 --stdout empty \
	--stderr 'memplan: tests/bad: is a directory, not a JSON file' -- memplan check tests/bad
expect_run "analyze directory" 2 --stdout empty \
	--stderr 'memplan: tests/bad: is a directory, not a JSON file' -- memplan analyze tests/bad

# ---- command line ---------------------------------------------------------
usage_check='usage: memplan check NET.json [--format table|json]'
usage_analyze='usage: memplan analyze NET.json [--steps] [--format table|csv|json] [--svg FILE]
                        [--strategy baseline,liveness,offload,recompute]
                        [--device NAME|FILE] [--checkpoints conv,fc,...]'
net=examples/tiny.json
expect_run "check unknown option" 2 --stdout empty \
	--stderr "memplan: check: unknown or incomplete option '--frobnicate'
$usage_check" -- memplan check $net --frobnicate
expect_run "analyze unknown short option" 2 --stdout empty \
	--stderr "memplan: analyze: unknown or incomplete option '-x'
$usage_analyze" -- memplan analyze -x $net
expect_run "analyze missing argument" 2 --stdout empty \
	--stderr "memplan: analyze: unknown or incomplete option '--format'
$usage_analyze" -- memplan analyze $net --format
expect_run "check missing argument" 2 --stdout empty \
	--stderr "memplan: check: unknown or incomplete option '--format'
$usage_check" -- memplan check $net --format
expect_run "analyze argument to a flag" 2 --stdout empty \
	--stderr "memplan: analyze: unknown or incomplete option '--steps=yes'
$usage_analyze" -- memplan analyze $net --steps=yes
expect_run "analyze no file" 2 --stdout empty --stderr "$usage_analyze" -- memplan analyze
expect_run "check two files" 2 --stdout empty --stderr "$usage_check" -- memplan check $net $net
expect_run "analyze bad --format" 2 --stdout empty \
	--stderr "memplan: --format: unknown format 'xml' (table, csv or json)" -- memplan analyze $net --format xml
expect_run "check bad --format" 2 --stdout empty \
	--stderr "memplan: --format: unknown format 'csv' (table or json)" -- memplan check $net --format csv
expect_run "analyze bad --strategy" 2 --stdout empty \
	--stderr "memplan: --strategy: unknown strategy 'fastest' (baseline, liveness, offload, recompute)" \
	-- memplan analyze $net --strategy liveness,fastest
expect_run "analyze empty --strategy" 2 --stdout empty \
	--stderr "memplan: --strategy: unknown strategy '' (baseline, liveness, offload, recompute)" \
	-- memplan analyze $net --strategy ''
expect_run "analyze bad --checkpoints" 2 --stdout empty \
	--stderr "memplan: --checkpoints: unknown layer type 'convolution'" -- memplan analyze $net --checkpoints conv,convolution
expect_run "analyze empty --checkpoints" 2 --stdout empty \
	--stderr "memplan: --checkpoints: unknown layer type ''" -- memplan analyze $net --checkpoints ''
expect_run "analyze unknown --device" 2 --stdout empty \
	--stderr "memplan: --device: unknown device 'gtx-9000' (see 'memplan devices', or give a JSON file)" \
	-- memplan analyze $net --device gtx-9000
expect_run "analyze --device missing field" 2 --stdout empty \
	--stderr 'memplan: --device: tests/bad/device-file-missing-h2d.json: missing "h2d_gbps"' \
	-- memplan analyze $net --device tests/bad/device-file-missing-h2d.json
expect_run "analyze --device negative bandwidth" 2 --stdout empty \
	--stderr 'memplan: --device: tests/bad/device-file-negative-bandwidth.json: d2h_gbps: must be positive, got -1 GB/s' \
	-- memplan analyze $net --device tests/bad/device-file-negative-bandwidth.json
# Found: "FILE:1:31: invalid JSON" here, "FILE: line 1, column 31: invalid
# JSON" for nets.
expect_run "analyze --device invalid JSON" 2 --stdout empty \
	--stderr "memplan: --device: tests/bad/device-file-invalid-json.json: line 1, column 31: invalid JSON: '}' expected near 'G'" \
	-- memplan analyze $net --device tests/bad/device-file-invalid-json.json
# Found: the file was named twice ("FILE: unable to open FILE: No such file
# or directory"), here and for nets.
expect_run "analyze --device nonexistent file" 2 --stdout empty \
	--stderr 'memplan: --device: tests/bad/nonexistent.json: cannot open: No such file or directory' \
	-- memplan analyze $net --device tests/bad/nonexistent.json
# Found: as for nets ("tests/bad:1:0: invalid JSON: ...").
expect_run "analyze --device directory" 2 --stdout empty \
	--stderr 'memplan: --device: tests/bad: is a directory, not a JSON file' \
	-- memplan analyze $net --device tests/bad
# Found: partial output: the whole table was printed, then the SVG failed.
expect_run "analyze --svg unwritable" 2 --stdout empty \
	--stderr "memplan: --svg: cannot write '$TMP/no/such/dir/curves.svg': No such file or directory" \
	-- memplan analyze $net --svg "$TMP/no/such/dir/curves.svg"

# ---- 100 MB of garbage, made here (not committed): fail fast --------------
g=$TMP/garbage.json
yes 'garbage #$%^ {[ 0xDEADBEEF' | head -c 100000000 >"$g"
timed "100 MB of text" $LIMIT_MS 2 --stdout empty \
	--stderr "memplan: $g: line 1, column 7: invalid JSON: '[' or '{' expected near 'garbage'" -- memplan check "$g"
head -c 100000000 /dev/urandom >"$g"
timed "100 MB of random bytes" $LIMIT_MS 2 --stdout empty \
	--stderr-grep "^memplan: $g: line [0-9]+, column [0-9]+: invalid JSON: " -- memplan check "$g"
head -c 100000000 /dev/zero | tr '\0' '\377' >"$g"
timed "100 MB of 0xff" $LIMIT_MS 2 --stdout empty \
	--stderr "memplan: $g: line 1, column 0: invalid JSON: unable to decode byte 0xff" -- memplan check "$g"
head -c 100000000 /dev/zero >"$g"
# Found: 100 MB of NUL bytes read as "'[' or '{' expected near end of file".
timed "100 MB of NUL bytes" $LIMIT_MS 2 --stdout empty \
	--stderr "memplan: $g: line 1, column 1: invalid JSON: unexpected NUL byte" -- memplan check "$g"
{ printf '{"format": "memplan-net/1", "layers": '; head -c 100000000 /dev/zero | tr '\0' '['; } >"$g"
timed "100 MB of [" $LIMIT_MS 2 --stdout empty \
	--stderr "memplan: $g: line 1, column 2086: invalid JSON: maximum parsing depth reached near '['" -- memplan check "$g"
{ printf '{"format": "memplan-net/1", "name": "'; head -c 100000000 /dev/zero | tr '\0' 'a'; } >"$g"
timed "100 MB unterminated string" $LIMIT_MS 2 --stdout empty \
	--stderr "memplan: $g: line 1, column 100000037: invalid JSON: premature end of input" -- memplan analyze "$g"
rm -f "$g"

# ---- inputs made to be slow (generated here) ------------------------------
# Found: one op reading 150000 tensors took ~4 s (26 s at 400000, a 24 MB
# file): idl_add() in the net loader deduplicated with a linear scan, O(n^2) per op.
# BUG: under ASan it still takes ~50 s: idl_add_at() reallocs l->pos on every
# add, not only when l->v grows, and ASan's realloc always copies.
awk -v n=150000 'BEGIN {
	printf "{\"format\": \"memplan-net/1\", \"tensors\": [";
	for (i = 0; i < n; i++) printf "%s{\"name\": \"t%d\", \"kind\": \"input\", \"bytes\": 4}", i ? ", " : "", i;
	printf "],\n \"ops\": [{\"name\": \"f\", \"inputs\": [";
	for (i = 0; i < n; i++) printf "%s\"t%d\"", i ? ", " : "", i;
	printf "], \"outputs\": [\"nope\"]}]}\n" }' >"$g"
timed "op with 150000 inputs" 2000 2 --stdout empty \
	--stderr "memplan: $g: ops[0].outputs[0]: no tensor named 'nope'" -- timeout 120 "$MEMPLAN" check "$g"
# Found: 4000 ops writing one tensor and 4000 reading it: route_build added
# an edge per (writer, reader) pair: 2 s and 500 MB here, 100 s and 24 GB at
# 30000 each (a 4 MB file).
awk -v n=4000 'BEGIN {
	printf "{\"format\": \"memplan-net/1\", \"tensors\": [{\"name\": \"x\", \"kind\": \"input\", \"bytes\": 4}, {\"name\": \"t\", \"bytes\": 4}";
	for (i = 0; i < n; i++) printf ", {\"name\": \"y%d\", \"bytes\": 4}", i;
	printf "],\n \"ops\": [";
	for (i = 0; i < n; i++) printf "%s{\"name\": \"w%d\", \"inputs\": [\"x\"], \"outputs\": [\"t\"]}", i ? ", " : "", i;
	for (i = 0; i < n; i++) printf ", {\"name\": \"r%d\", \"inputs\": [\"t\"], \"outputs\": [\"y%d\"]}", i, i;
	printf "]}\n" }' >"$g"
timed "4000 writers and 4000 readers of one tensor" 1000 0 --stdout-grep "valid memplan-net/1" \
	-- timeout 120 "$MEMPLAN" check "$g"
rm -f "$g"

# ---- every file in tests/bad has a test above -----------------------------
untested=""
for f in tests/bad/*.json; do
	n=$(basename "$f" .json)
	grep -Eq "^[^#]*bad $n |tests/bad/$n\\.json" "$0" || untested="$untested $n"
done
if [ -z "$untested" ]; then ok; else not_ok "tests/bad files without a test:$untested"; fi
done_testing
