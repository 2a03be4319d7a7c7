#!/bin/sh
# LLM fine-tuning capacity: for each gen llama preset, full fine-tuning,
# LoRA (r 16 on q and v) and QLoRA (the same over a 4-bit nf4 base; MODES
# picks, default all three), bf16-mixed with AdamW, batch 1, on a 24, 40, 80 and
# 141 GB GPU, the most tokens per step (memplan capacity --vary tokens) under
# liveness and recomputation and under every planner, and the best planner's
# throughput against liveness's (the price of its memory saving; roofline
# times for each GPU).  Writes a markdown table on stdout.
# Usage: [MODES="full lora qlora"] sh bench/llm.sh [PRESET...]
#        (make memplan first; minutes)
cd "$(dirname "$0")/.." || exit 2
M=${MEMPLAN:-./memplan}
T=$(mktemp -d) || exit 2
trap 'rm -rf "$T"' EXIT
set -- ${@:-llama3.2-1b llama3.2-3b qwen2-0.5b tinyllama-1.1b llama2-7b mistral-7b llama3-8b qwen2-7b llama2-13b llama3-70b}
gpus=rtx-4090,a100-40g,h100-sxm,h200
echo "| preset | training | GPU | liveness | recompute | checkpoint-blocks | best planner | its tokens/s vs liveness |"
echo "|---|---|---|---:|---:|---:|---|---:|"
for p in "$@"; do
	for mode in ${MODES:-full lora qlora}; do
		case $mode in
		full) lora= ;;
		lora) lora="--lora 16" ;;
		qlora) lora="--lora 16 --quant nf4" ;;
		*) echo "llm.sh: unknown mode '$mode' (full, lora, qlora)" >&2; exit 2 ;;
		esac
		$M gen "$p" --seq 1024 --batch 1 --precision bf16-mixed --optimizer adamw $lora -o "$T/n.json" || exit 1
		$M capacity "$T/n.json" --vary tokens --gpu $gpus --format json >"$T/c.json" || exit 1
		/usr/bin/python3 - "$p" "$mode" "$T/c.json" <<'PY'
import json, sys
preset, mode, path = sys.argv[1:]
doc = json.load(open(path))
for g in (doc if isinstance(doc, list) else [doc]):
    rows = {r["name"]: r for r in g["strategies"]}
    def tok(n):
        r = rows.get(n)
        return str(r["tokens"]) if r and r.get("tokens") else "none"
    planners = [r for r in g["strategies"] if r["name"] not in ("baseline", "liveness", "offload", "recompute") and r.get("tokens")]
    live = rows.get("liveness")
    if planners:
        best = max(planners, key=lambda r: (r["tokens"], r["throughput"]))
        rel = "%.2fx" % (best["throughput"] / live["throughput"]) if live and live.get("tokens") else "-"
        b = "%s %d" % (best["name"], best["tokens"])
    else:
        b, rel = "none", "-"
    print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (preset, mode, g["gpu"], tok("liveness"), tok("recompute"),
                                                     tok("checkpoint-blocks"), b, rel))
PY
	done
done
