#!/bin/sh
# memplan devices: the catalog as a table and as JSON, single devices, files.
. "$(dirname "$0")/../lib.sh"
expect_run "devices table" 0 --stdout devices-table.out -- memplan devices
for d in k40c titan-xp p100 v100-16g v100-32g a100-40g a100-80g l4 rtx-3090 rtx-4090 h100-pcie h100-sxm h200; do
	expect_run "devices has $d" 0 --stdout-grep "^$d +[0-9.]+ GiB" -- memplan devices
	expect_run "devices json has $d" 0 --stdout-grep "\"name\": \"$d\"," -- memplan devices --format json
done
expect_run "devices json source" 0 --stdout-grep '"source": "link: PCIe 5.0 x16 pinned, achieved' -- memplan devices --format json
expect_run "devices json default" 0 --stdout-grep '"gen_default": "v100-16g"' -- memplan devices --format json
expect_run "devices one" 0 --stdout-grep '^a100-80g +80.0 GiB +24.0 +24.0' -- memplan devices A100-80G
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
