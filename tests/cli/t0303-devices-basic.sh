#!/bin/sh
# memplan devices: the catalog as a table and as JSON, single devices, files;
# the AMD entries for capacity planning only, and capacity on a new NVIDIA GPU
# beside an AMD one.
. "$(dirname "$0")/../lib.sh"
expect_run "devices table" 0 --stdout devices-table.out -- memplan devices
for d in k40c titan-xp p100 v100-16g v100-32g a100-40g a100-80g l4 rtx-3090 rtx-4090 h100-pcie h100-sxm h200 \
	b200 gb200 rtx-5090 rtx-6000-ada l40s a10 h20 mi300x mi325x; do
	expect_run "devices has $d" 0 --stdout-grep "^$d +[0-9.]+ GiB" -- memplan devices
	expect_run "devices json has $d" 0 --stdout-grep "\"name\": \"$d\"," -- memplan devices --format json
done
expect_run "devices json source" 0 --stdout-grep '"source": "link: PCIe 5.0 x16 pinned, achieved' -- memplan devices --format json
expect_run "devices json default" 0 --stdout-grep '"gen_default": "v100-16g"' -- memplan devices --format json
expect_run "devices one" 0 --stdout-grep '^a100-80g +80.0 GiB +24.0 +24.0' -- memplan devices A100-80G
# the newer GPUs: memory in bytes exactly as nvidia-smi (183359 MiB) and
# rocm-smi (206141652992 B) report it, figures from memplan-devices(1)
expect_run "devices json b200 memory" 0 --stdout-grep '^      "memory": 192265846784,$' -- memplan devices b200 --format json
expect_run "devices json mi300x memory" 0 --stdout-grep '^      "memory": 206141652992,$' -- memplan devices mi300x --format json
expect_run "devices b200 row" 0 \
	--stdout-grep '^b200 +179.1 GiB +50.0 +50.0 +6.0 +75 +2250 +2250 +4500 +7700$' -- memplan devices b200
expect_run "devices gb200: NVLink-C2C, an estimate" 0 \
	--stdout-grep '"source": "link: NVLink-C2C to the Grace CPU, estimated from the link, not measured' -- \
	memplan devices gb200 --format json
# the AMD entries are for capacity planning only: no verify backend
for d in mi300x mi325x; do
	expect_run "devices $d: no verify backend" 0 --stdout-grep "^$d +[0-9.]+ GiB .*  \\*\$" -- memplan devices $d
	expect_run "devices $d: the note" 0 \
		--stdout-grep '^\*: AMD, for capacity planning only: no verify backend; memory as rocm-smi reports it$' -- \
		memplan devices $d
	expect_run "devices json $d: no_verify" 0 --stdout-grep '^      "no_verify": true,$' -- memplan devices $d --format json
done
expect_run "devices b200: no note" 1 -- sh -c "'$MEMPLAN' devices b200 | grep -q 'no verify backend'"
expect_run "devices json b200: no no_verify" 1 -- sh -c "'$MEMPLAN' devices b200 --format json | grep -q no_verify"
# what --format json writes loads back as a device file with the same figures
memplan devices mi300x --format json | sed -n '/^    {$/,/^    }$/p' >"$TMP/mi300x.json"
memplan devices mi300x --format json | grep -v '"source"' >"$TMP/mi300x-a.json"
memplan devices "$TMP/mi300x.json" --format json | grep -v '"source"' >"$TMP/mi300x-b.json"
expect_run "devices json round trip" 0 -- cmp "$TMP/mi300x-a.json" "$TMP/mi300x-b.json"
expect_run "devices json round trip: the flag" 0 --stdout-grep '  \*$' -- memplan devices "$TMP/mi300x.json"
cat >"$TMP/bad-flag.json" <<'DEV'
{"name": "amd", "memory": "8G", "h2d_gbps": 6, "d2h_gbps": 6, "no_verify": "yes"}
DEV
expect_run "devices no_verify not a boolean" 2 \
	--stderr "memplan: devices: $TMP/bad-flag.json: no_verify: expected true or false, got a string" -- \
	memplan devices "$TMP/bad-flag.json"
# capacity planning on both kinds: a block per GPU, the AMD one noted
memplan capacity --model resnet50 --gpu b200,mi300x >"$TMP/cap.out" 2>"$TMP/cap.err"; rc=$?
expect_run "capacity b200,mi300x" 0 -- test $rc = 0
expect_run "capacity b200,mi300x: nothing on stderr" 0 -- test ! -s "$TMP/cap.err"
expect_run "capacity b200 row" 0 --stdout-grep '^resnet50 \(batch varied\) on b200: 178.6 GiB usable' -- cat "$TMP/cap.out"
expect_run "capacity mi300x row" 0 --stdout-grep '^resnet50 \(batch varied\) on mi300x: 191.5 GiB usable' -- cat "$TMP/cap.out"
expect_run "capacity mi300x note" 0 \
	--stdout-grep '^note: mi300x is in the catalog for capacity planning only: memplan has no verify backend for it$' -- \
	cat "$TMP/cap.out"
expect_run "capacity two liveness rows" 0 --stdout-grep '^2$' -- sh -c "grep -c '^liveness ' '$TMP/cap.out'"
cat >"$TMP/dev.json" <<'DEV'
{"name": "mygpu", "memory": "8G", "h2d_gbps": 6, "d2h_gbps": 5.5, "tflops": {"float32": 8}}
DEV
expect_run "devices file" 0 --stdout-grep '^mygpu +8.0 GiB +6.0 +5.5 +10.0 +8 +- +- +- +-$' -- memplan devices "$TMP/dev.json"
# one writer for devices: the keys a device file has (memory, not
# memory_bytes), and no figure the file did not give
expect_run "devices file json" 0 --stdout-grep '"memory": 8589934592,' -- memplan devices "$TMP/dev.json" --format json
memplan devices "$TMP/dev.json" --format json >"$TMP/dev-out.json"
expect_run "devices file json: no mem_gbps it did not give" 1 -- grep -q mem_gbps "$TMP/dev-out.json"
expect_run "devices unknown" 2 --stderr "memplan: devices: unknown device 'gtx-480' (see 'memplan devices', or give a JSON file)" -- memplan devices gtx-480
expect_run "devices bad format" 2 --stderr "memplan: --format: unknown format 'xml' (table or json)" -- memplan devices --format xml
expect_run "devices bad option" 2 --stderr-grep "^memplan: devices: unknown or incomplete option '--all'" -- memplan devices --all
expect_run "devices help" 0 --stdout "devices-help.out" -- memplan devices --help
done_testing
