#!/bin/bash
# Planning time before and after a change: the seven example nets at 70, 50
# and 33% of their liveness peak, auto (dynamic workspace) and greedy with
# --workspace none, each cell planned by OLD then NEW, one after the other.
# Prints "net share planner | time_ms fits wall_s | time_ms fits wall_s",
# then the wall seconds of each binary in all.
#   OLD=/tmp/memplan-before NEW=./memplan bash bench/planning-time.sh
set -u
cd "$(dirname "$0")/.."
OLD=${OLD:?OLD=path of the binary before}
NEW=${NEW:-./memplan}

num() { sed -n "s/.*\"$1\": \([-0-9.e+a-z]*\).*/\1/p" | head -n 1; }
now() { date +%s.%N; }

for net in resnet50-b32 resnet152-b32 vgg16-b64 unet densenet121-b32 gpt2-small bert-base; do
	for p in 70 50 33; do
		for mode in auto greedy; do
			args="--budget $p%"
			[ $mode = greedy ] && args="$args --planner greedy --workspace none"
			line="$net $p $mode"
			for b in "$OLD" "$NEW"; do
				s=$(now)
				out=$($b plan "examples/$net.json" $args --format json 2>/dev/null)
				e=$(now)
				line="$line | $(echo "$out" | num time_ms) $(echo "$out" | num fits) $(awk "BEGIN { printf \"%.2f\", $e - $s }")"
			done
			echo "$line"
		done
	done
done | tee /dev/stderr | awk -F'|' '{ n = split($2, a, " "); m = split($3, b, " "); o += a[n]; w += b[m] }
	END { printf "in all: before %.1f s, after %.1f s (%.2fx)\n", o, w, o / w }'
