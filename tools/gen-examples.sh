#!/bin/sh
# Regenerate the examples that 'memplan gen' writes (memplan-gen(1)).
#   tools/gen-examples.sh [DIR]     write them into DIR (default: examples/)
#   tools/gen-examples.sh --list    print "FILE MODEL [OPTIONS]" per example
# MEMPLAN names the binary (default: ./memplan).  CI regenerates them into a
# scratch directory and checks they are byte-identical to the checked-in ones
# (tests/cli/t0301-gen-examples.sh).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
MEMPLAN=${MEMPLAN:-$top/memplan}

examples() {
	cat <<'LIST'
vgg16-b64 vgg16 --batch 64
resnet50-b32 resnet50 --batch 32
resnet152-b32 resnet152 --batch 32
inception-v4-b32 inception-v4 --batch 32
densenet121-b32 densenet-121 --batch 32
unet unet
gpt2-small gpt2-small
bert-base bert-base
seq2seq-attention seq2seq
LIST
}

if [ "${1:-}" = "--list" ]; then
	examples
	exit 0
fi
out=${1:-$top/examples}
examples | while read -r file model opts; do
	# shellcheck disable=SC2086 # opts is a list of options
	"$MEMPLAN" gen "$model" $opts -o "$out/$file.json"
done
