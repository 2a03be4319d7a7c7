#!/bin/sh
# memplan gen: bad models and options exit 2 with one "memplan: gen: ..." line.
. "$(dirname "$0")/../lib.sh"
expect_run "gen no model" 2 --stderr-grep "^usage: memplan gen MODEL" -- memplan gen
expect_run "gen two models" 2 --stderr-grep "^usage: memplan gen MODEL" -- memplan gen vgg16 vgg19
expect_run "gen unknown model" 2 --stderr "memplan: gen: unknown model 'lenet' (see 'memplan gen --help')" -- memplan gen lenet
expect_run "gen unknown option" 2 --stderr-grep "^memplan: gen: unknown or incomplete option '--frob'" -- memplan gen vgg16 --frob
expect_run "gen missing value" 2 --stderr-grep "^memplan: gen: unknown or incomplete option '--batch'" -- memplan gen vgg16 --batch
expect_run "gen seq on vgg" 2 --stderr "memplan: gen: --seq does not apply to vgg16" -- memplan gen vgg16 --seq 10
expect_run "gen image on gpt2" 2 --stderr "memplan: gen: --image does not apply to gpt2" -- memplan gen gpt2 --image 224
expect_run "gen alias depth" 2 --stderr "memplan: gen: 'resnet50' fixes --depth; use 'resnet --depth'" -- memplan gen resnet50 --depth 101
expect_run "gen alias hidden" 2 --stderr "memplan: gen: 'gpt2-medium' fixes --hidden; use 'gpt2 --hidden'" -- memplan gen gpt2-medium --hidden 512
expect_run "gen bad depth" 2 --stderr "memplan: gen: resnet: depth 60 is not 18, 34, 50, 101, 152, nor 3*(6+32+n3+6)+2 for n3 >= 0 (134 to 50000)" -- memplan gen resnet --depth 60
expect_run "gen batch 0" 2 --stderr "memplan: gen: --batch: expected an integer from 1 to 65536, got '0'" -- memplan gen vgg16 --batch 0
expect_run "gen batch word" 2 --stderr "memplan: gen: --batch: expected an integer from 1 to 65536, got 'many'" -- memplan gen vgg16 --batch many
expect_run "gen batch negative" 2 --stderr "memplan: gen: --batch: expected an integer from 1 to 65536, got '-4'" -- memplan gen vgg16 --batch -4
expect_run "gen batch huge" 2 --stderr "memplan: gen: --batch: expected an integer from 1 to 65536, got '99999999999999999999999'" -- memplan gen vgg16 --batch 99999999999999999999999
expect_run "gen batch suffix" 2 --stderr "memplan: gen: --batch: expected an integer from 1 to 65536, got '32k'" -- memplan gen vgg16 --batch 32k
expect_run "gen image bad" 2 --stderr "memplan: gen: --image: expected HxW such as 224x224, got 'x224'" -- memplan gen vgg16 --image x224
expect_run "gen image half" 2 --stderr "memplan: gen: --image: expected an integer from 1 to 16384, got ''" -- memplan gen vgg16 --image 224x
expect_run "gen image zero" 2 --stderr "memplan: gen: --image: expected an integer from 1 to 16384, got '0'" -- memplan gen vgg16 --image 0x224
expect_run "gen image too small" 2 --stderr-grep "^memplan: gen: alexnet: .*too small" -- memplan gen alexnet --image 16x16
expect_run "gen unet odd" 2 --stderr-grep "^memplan: gen: unet: image 500x500 gives an odd 55x55 map before pooling at level 4" -- memplan gen unet --image 500
expect_run "gen heads" 2 --stderr "memplan: gen: gpt2: hidden 100 is not a multiple of heads 3" -- memplan gen gpt2 --hidden 100 --heads 3
expect_run "gen dtype" 2 --stderr "memplan: gen: --dtype: expected float32, float16 or bfloat16, got 'int8'" -- memplan gen vgg16 --dtype int8
expect_run "gen grads" 2 --stderr "memplan: gen: --grads: expected keep or set_to_none, got 'zero'" -- memplan gen vgg16 --grads zero
expect_run "gen optimizer" 2 --stderr "memplan: gen: --optimizer: expected one of none, sgd, momentum, adam, adamw, got 'rmsprop'" -- memplan gen vgg16 --optimizer rmsprop
expect_run "gen device" 2 --stderr "memplan: gen: --device: unknown device 'gtx-480' (see 'memplan devices', or give a JSON file)" -- memplan gen vgg16 --device gtx-480
expect_run "gen device file" 2 --stderr-grep "^memplan: gen: --device: $TMP/none.json: " -- memplan gen vgg16 --device "$TMP/none.json"
expect_run "gen output dir" 2 --stderr "memplan: gen: cannot write '$TMP/no/such/x.json': No such file or directory" -- memplan gen vgg16 -o "$TMP/no/such/x.json"
if [ -e "$TMP/no" ]; then not_ok "gen output dir created something"; else ok; fi
mkdir "$TMP/dir"
expect_run "gen output is a directory" 2 --stderr "memplan: gen: cannot write '$TMP/dir': Is a directory" -- memplan gen vgg16 -o "$TMP/dir"
expect_run "gen output is a directory: nothing left" 0 -- sh -c "test -z \"\$(ls -A '$TMP/dir')\" && test -z \"\$(ls '$TMP' | grep '^dir\\.')\""
expect_run "gen output device full" 2 --stderr "memplan: gen: writing '/dev/full' failed: No space left on device" -- memplan gen vgg16 --batch 2 -o /dev/full
expect_run "gen precision policy" 2 --stderr "memplan: gen: --precision: expected fp32, bf16-mixed, fp16-mixed, bf16-pure, bf16-autocast or fp16-autocast, then ,KIND=DTYPE overrides, got 'tf32'" -- memplan gen gpt2 --precision tf32
expect_run "gen precision kind" 2 --stderr "memplan: gen: --precision: 'grad=fp32' is not KIND=DTYPE with KIND params, grads, master or state" -- memplan gen gpt2 --precision bf16-mixed,grad=fp32
expect_run "gen precision empty item" 2 --stderr "memplan: gen: --precision: an empty item in 'bf16-mixed,,grads=float32'" -- memplan gen gpt2 --precision bf16-mixed,,grads=float32
expect_run "gen precision dtype" 2 --stderr "memplan: gen: --precision: unknown dtype 'int3'" -- memplan gen gpt2 --precision bf16-mixed,state=int3
done_testing
