# memplan: plan GPU memory for training deep networks.
#   make            build ./memplan
#   make demo       install what is missing (Debian, as root), build, analyze AlexNet
#   make test       unit + CLI tests (fast)
#   make check      the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make cuda-check compile the CUDA backend only (says so and passes without nvcc)
#   make bench      analysis benchmarks (bench/RESULTS.md)
#   make fuzz       libFuzzer on the net loader and the plan reader (bench/fuzz.md)
CC      ?= cc
CFLAGS  ?= -O2 -g
# -Wno-format-truncation: JSON paths in messages are cut to fixed buffers on purpose
WARN    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror -Wno-format-truncation
LIBS    := -ljansson -lglpk -lCbcSolver -lCbc -lClp -lCoinUtils -lcrypto -lm -lpthread -ldl
# SANFLAGS, not CFLAGS: `make check` sets CFLAGS on the command line, which
# would silently drop anything added to CFLAGS here.
ifdef SANITIZE
SANFLAGS := -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif
BUILD   ?= build

# The CUDA backend of memplan verify (verify/backend_cuda.cu) is built when nvcc
# is found (as llm.c does); without nvcc memplan builds as before and says so.
# Sanitizer builds (make check, SANITIZE set) never include it: ASan and the
# CUDA runtime do not mix well (the driver maps memory ASan reserves), so
# `make check` tests the host backend (and kern_cuda.cu's calls against fake
# libraries, test_kern below) and `make cuda-check` only compiles the .cu.
# `make NVCC=` builds without it.  The runtime is linked statically
# (libcudart_static): memplan still starts where no CUDA library is
# installed, and only the driver (libcuda.so.1) is needed to run on a GPU.
# cuDNN and cuBLAS are not linked: kern_cuda.cu loads them at run time.
NVCC      ?= $(shell command -v nvcc 2>/dev/null || ls /usr/local/cuda/bin/nvcc 2>/dev/null)
CUDA_HOME ?= $(abspath $(dir $(NVCC))..)
CUDA_ARCH ?= -gencode arch=compute_90,code=sm_90 -gencode arch=compute_75,code=compute_75
NVCCFLAGS ?= -O2
NVCC_WARN := -std=c++17 -Xcompiler -Wall,-Wextra,-Wshadow,-Werror,-Wno-format-truncation -Werror all-warnings
ifeq ($(NVCC),)
ifndef MP_SAID_NVCC
$(info memplan: nvcc not found, building without the CUDA backend)
export MP_SAID_NVCC := 1
endif
else ifdef SANITIZE
$(info memplan: sanitizer build ($(SANITIZE)), building without the CUDA backend)
else
CUDA_OBJ  := $(BUILD)/verify/backend_cuda.o $(BUILD)/verify/kern_cuda.o $(BUILD)/verify/profile_cuda.o
CUDA_DEFS := -DMEMPLAN_CUDA=1
CUDA_LIBS := -L$(CUDA_HOME)/lib64 -lcudart_static -ldl -lpthread -lrt -lstdc++
endif

# Sources by layer (README "Layout"); each includes only the layers before it.
BASE     := analysis/base/util.c analysis/base/jget.c analysis/base/device.c
NET      := analysis/net/net.c analysis/net/load.c analysis/net/parse.c analysis/net/geometry.c \
	    analysis/net/lower.c analysis/net/ops.c analysis/net/scale.c
ZOO      := analysis/zoo/zoo.c analysis/zoo/layers.c analysis/zoo/cnn.c analysis/zoo/transformer.c \
	    analysis/zoo/rnn.c
ANALYSIS := $(BASE) $(NET) analysis/route.c analysis/sched.c analysis/sim.c analysis/policy.c \
	    analysis/analyze.c analysis/jobs.c $(ZOO)
PLAN     := plan/ucudnn.c plan/arena.c plan/trace.c plan/planfile.c plan/engine.c plan/planner.c plan/superneurons.c plan/tfswap.c plan/tensile.c plan/greedy.c plan/dtr.c plan/chain.c plan/checkpoint.c plan/lp.c plan/optimal.c plan/bound.c plan/dqnnet.c plan/dqn.c plan/convconf.c plan/capacity.c
VERIFY   := verify/common.c verify/backend_host.c verify/replay.c verify/kop.c verify/pool.c verify/report.c verify/replan.c verify/probe.c verify/profile.c
CLI      := cli/main.c cli/common.c cli/options.c cli/output.c cli/cmd_check.c cli/cmd_analyze.c cli/cmd_plan.c cli/cmd_capacity.c cli/cmd_gen.c cli/cmd_devices.c cli/cmd_verify.c cli/cmd_replan.c cli/cmd_profile.c
LIB_OBJ  := $(ANALYSIS:%.c=$(BUILD)/%.o) $(PLAN:%.c=$(BUILD)/%.o) $(VERIFY:%.c=$(BUILD)/%.o)
# backends.c registers the backends built (the CUDA one with MEMPLAN_CUDA):
# memplan links it; the unit tests name the backends they run
CLI_OBJ  := $(CLI:%.c=$(BUILD)/%.o) $(BUILD)/verify/backends.o
# every object depends on every library header: a header change rebuilds all
LIB_H    := $(wildcard analysis/*.h analysis/*/*.h plan/*.h verify/*.h)
UNIT     := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT:tests/unit/%.c=$(BUILD)/tests/%)

# test_kern (tests/unit/test_kern.cc) runs kern_cuda.cu on the CPU against a
# fake CUDA runtime, cuDNN and cuBLAS (tests/fakecuda) that check every call:
# kern_cuda.cu has no device code, so the host C++ compiler builds it; the
# fakes are shared libraries named as the real ones in $(BUILD)/fakecuda, and
# the test's DT_RPATH (searched before LD_LIBRARY_PATH and the loader's
# cache, unlike a RUNPATH) makes kern_lib_open's dlopen find them.  Needs the
# CUDA, cuDNN and cuBLAS headers only (no GPU, no CUDA library), so sanitizer
# builds run it too; without them the Makefile says so and skips it.
CUDA_INC ?= $(CUDA_HOME)/include
ifneq ($(NVCC),)
FAKECUDA := $(and $(wildcard $(CUDA_INC)/cuda_runtime.h),$(wildcard $(CUDA_INC)/cudnn.h),$(wildcard $(CUDA_INC)/cublas_v2.h))
endif
ifeq ($(FAKECUDA),)
ifndef MP_SAID_FAKECUDA
$(info memplan: CUDA, cuDNN or cuBLAS headers not found, skipping test_kern (kern_cuda.cu against fake libraries))
export MP_SAID_FAKECUDA := 1
endif
else
FAKE_DIR  := $(BUILD)/fakecuda
FAKE_LIBS := $(FAKE_DIR)/libfakecudart.so $(FAKE_DIR)/libcudnn.so.9 $(FAKE_DIR)/libcublas.so.13
UNIT_BIN  += $(BUILD)/tests/test_kern $(BUILD)/tests/test_backends
endif
CXX_WARN  := -std=c++17 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Werror -Wno-format-truncation
FAKE_CC   := $(CC) $(WARN) $(CFLAGS) $(SANFLAGS) -fPIC -isystem $(CUDA_INC)

.PHONY: all demo test check unit cli-tests bench clean deps cuda-check gpu-bundle FORCE
all: memplan

# ./memplan is the last build asked for (make check's sanitizer build
# included), whichever file is newer: copy when the contents differ.
memplan: $(BUILD)/memplan FORCE
	@cmp -s $< $@ || { echo "cp $< $@"; cp $< $@; }

$(BUILD)/memplan: $(CLI_OBJ) $(LIB_OBJ) $(CUDA_OBJ)
	$(CC) $(SANFLAGS) $(LDFLAGS) $(if $(GPU_BUNDLE),$(ORIGIN_RPATH)) -o $@ $^ $(LIBS) $(CUDA_LIBS)

# gpu-bundle: build-gpu/memplan with the CUDA backend and, in build-gpu/lib,
# the shared libraries it needs beyond libc and libstdc++ (jansson, GLPK and
# its solvers, CBC and the COIN-OR libraries under it, libcrypto), found
# through an $$ORIGIN rpath, so that a GPU
# machine without these packages runs it as is (tools/gpu-bench.sh).
ORIGIN_RPATH := -Wl,-rpath,'$$ORIGIN/lib'
SYSTEM_LIBS  := /lib(c|m|dl|pthread|rt|stdc\+\+|gcc_s)\.so
gpu-bundle:
	$(MAKE) BUILD=build-gpu GPU_BUNDLE=1 build-gpu/memplan
	@mkdir -p build-gpu/lib
	@ldd build-gpu/memplan | awk '/=> \// {print $$3}' | grep -v -E '$(SYSTEM_LIBS)' | xargs -r -I{} cp -L {} build-gpu/lib/
	@echo "memplan: build-gpu/memplan, with $$(ls build-gpu/lib | wc -l) libraries in build-gpu/lib ($$(du -sh build-gpu/lib | cut -f1))"

$(BUILD)/%.o: %.c $(LIB_H) $(wildcard cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SANFLAGS) $(DEFS) -c -o $@ $<

# Only the registry sees MEMPLAN_CUDA; cuda.flag changes when the choice does,
# so switching NVCC rebuilds it.
CUDA_USERS := $(BUILD)/verify/backends.o
$(CUDA_USERS): DEFS := $(CUDA_DEFS)
$(CUDA_USERS): $(BUILD)/cuda.flag
$(BUILD)/cuda.flag: FORCE
	@mkdir -p $(dir $@)
	@echo '$(CUDA_DEFS)' | cmp -s - $@ || echo '$(CUDA_DEFS)' > $@

$(BUILD)/verify/%.o: verify/%.cu $(LIB_H)
	@mkdir -p $(dir $@)
	$(NVCC) $(NVCC_WARN) $(NVCCFLAGS) $(CUDA_ARCH) -c -o $@ $<

# cuda-check: compile the CUDA backend only (a few seconds), so that CI proves
# it compiles with warnings as errors; says so and succeeds without nvcc.
CUDA_SRC := $(wildcard verify/*.cu)
cuda-check: $(if $(NVCC),$(CUDA_SRC:%.cu=$(BUILD)/%.o))
	@$(if $(NVCC),echo "memplan: cuda-check: $(CUDA_SRC) compile ($(NVCC))",echo "memplan: nvcc not found, skipping cuda-check")

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h tests/unit/fixture.h tests/unit/randnet.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(LIBS)

$(FAKE_DIR)/libfakecudart.so: tests/fakecuda/fake_core.c tests/fakecuda/fakecuda.h
	@mkdir -p $(dir $@)
	$(FAKE_CC) -shared -Wl,-soname,libfakecudart.so -o $@ $<

$(FAKE_DIR)/libcudnn.so.9: tests/fakecuda/fake_cudnn.c tests/fakecuda/fakecuda.h $(FAKE_DIR)/libfakecudart.so
	$(FAKE_CC) -shared -Wl,-soname,libcudnn.so.9 -o $@ $< -L$(FAKE_DIR) -lfakecudart -lm -Wl,-rpath,'$$ORIGIN'

$(FAKE_DIR)/libcublas.so.13: tests/fakecuda/fake_cublas.c tests/fakecuda/fakecuda.h $(FAKE_DIR)/libfakecudart.so
	$(FAKE_CC) -shared -Wl,-soname,libcublas.so.13 -o $@ $< -L$(FAKE_DIR) -lfakecudart -lm -Wl,-rpath,'$$ORIGIN'

# test_backends (tests/unit/test_backends.cc): the same plans through the
# host backend and the CUDA backend, which the host compiler builds too
# (its kernels on the CPU) to run against the same fakes, with profile_cuda
FAKE_HOST_OBJ := $(BUILD)/tests/backend_cuda_host.o $(BUILD)/tests/kern_cuda_host.o $(BUILD)/tests/profile_cuda_host.o
$(BUILD)/tests/%_host.o: verify/%.cu $(LIB_H)
	@mkdir -p $(dir $@)
	$(CXX) $(CXX_WARN) $(CFLAGS) $(SANFLAGS) -isystem $(CUDA_INC) -x c++ -c -o $@ $<

$(BUILD)/tests/test_backends: tests/unit/test_backends.cc tests/unit/unit.h tests/fakecuda/fakecuda.h \
		$(FAKE_HOST_OBJ) $(LIB_OBJ) $(FAKE_LIBS)
	$(CXX) $(CXX_WARN) $(CFLAGS) $(SANFLAGS) -isystem $(CUDA_INC) $(LDFLAGS) -o $@ $< \
		$(FAKE_HOST_OBJ) $(LIB_OBJ) -L$(FAKE_DIR) -lfakecudart \
		-Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../fakecuda' $(LIBS)

# gpu-dry: memplan with that CUDA backend, against the same fakes and a fake
# driver (tests/fakecuda/fake_driver.c: one device, for verify --probe) in a
# directory of its own, so that tests/cli/t0604-gpu-bench-dry.sh runs
# tools/gpu-bench.sh end to end as a GPU machine would (GPU_DRY names it to
# the tests; empty where the headers are missing: the test skips)
GPU_DRY := $(if $(FAKECUDA),$(BUILD)/gpu-dry/memplan)
$(BUILD)/gpu-dry/lib/libcuda.so.1: tests/fakecuda/fake_driver.c
	@mkdir -p $(dir $@)
	$(FAKE_CC) -shared -Wl,-soname,libcuda.so.1 -o $@ $<

# (its own registry, with the CUDA backend also in a sanitizer build, which
# test_backends runs on these fakes too)
GPU_DRY_OBJ := $(filter-out $(BUILD)/verify/backends.o,$(CLI_OBJ)) $(BUILD)/gpu-dry/backends.o
$(BUILD)/gpu-dry/backends.o: verify/backends.c $(LIB_H)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SANFLAGS) -DMEMPLAN_CUDA=1 -c -o $@ $<

$(BUILD)/gpu-dry/memplan: $(GPU_DRY_OBJ) $(LIB_OBJ) $(FAKE_HOST_OBJ) $(FAKE_LIBS) $(BUILD)/gpu-dry/lib/libcuda.so.1
	$(CXX) $(CXX_WARN) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $(GPU_DRY_OBJ) $(LIB_OBJ) $(FAKE_HOST_OBJ) \
		-L$(FAKE_DIR) -lfakecudart -Wl,--disable-new-dtags,-rpath,'$$ORIGIN/lib:$$ORIGIN/../fakecuda' $(LIBS)

$(BUILD)/tests/test_kern: tests/unit/test_kern.cc tests/unit/unit.h tests/fakecuda/fakecuda.h \
		$(BUILD)/tests/kern_cuda_host.o $(LIB_OBJ) $(FAKE_LIBS)
	$(CXX) $(CXX_WARN) $(CFLAGS) $(SANFLAGS) -isystem $(CUDA_INC) $(LDFLAGS) -o $@ $< \
		$(BUILD)/tests/kern_cuda_host.o $(LIB_OBJ) -L$(FAKE_DIR) -lfakecudart \
		-Wl,--disable-new-dtags,-rpath,'$$ORIGIN/../fakecuda' $(LIBS)

deps:
	@sh tools/deps.sh

demo: deps
	$(MAKE) memplan
	./memplan analyze examples/alexnet.json

unit: $(UNIT_BIN)
	@sh tests/run-unit.sh $(UNIT_BIN)

cli-tests: memplan $(GPU_DRY)
	@GPU_DRY=$(GPU_DRY) sh tests/run-cli.sh

test: $(UNIT_BIN) memplan $(GPU_DRY)
	@GPU_DRY=$(GPU_DRY) sh tests/run-all.sh $(UNIT_BIN)

check: deps cuda-check
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/lsan.supp:print_suppressions=0 \
		$(MAKE) BUILD=build-san SANITIZE=address,undefined CFLAGS="-O1 -g" memplan test

bench: memplan
	@sh bench/run.sh

clean:
	rm -rf build build-san memplan

# fuzz: libFuzzer on two targets for FUZZ_SECONDS in all, half each unless
# FUZZ_NET_SECONDS or FUZZ_PLAN_SECONDS says otherwise (0 skips a target):
#   fuzz_net   the loader and analysis (tests/fuzz/fuzz_net.c), seeded with
#              tests/bad and examples (inputs cut at 32 KiB: the big generated
#              examples only slow each run), corpus build-fuzz/corpus;
#   fuzz_plan  the plan reader memplan verify uses (tests/fuzz/fuzz_plan.c),
#              seeded with tests/fuzz/plan-seeds, corpus build-fuzz/plan-corpus.
# Crashes land in build-fuzz/ (crash-*, leak-*, timeout-*; the plan target's
# with a plan- prefix), and make fails if either target found one.  Needs
# clang with libFuzzer (Debian: clang, libclang-rt-14-dev).  FUZZ_FLAGS adds
# compiler flags, e.g. -fno-sanitize=CHECK to step over a bug already reported;
# FUZZ_RUN_FLAGS adds libFuzzer flags to both runs (e.g. -seed=1).  Each run
# ends with its totals (stat::number_of_executed_units, exec/s).
FUZZ_SECONDS      ?= 60
FUZZ_NET_SECONDS  ?= $(shell expr $(FUZZ_SECONDS) / 2)
FUZZ_PLAN_SECONDS ?= $(shell expr $(FUZZ_SECONDS) - $(FUZZ_NET_SECONDS))
FUZZ_CC           ?= clang
FUZZ_FLAGS        ?=
FUZZ_RUN_FLAGS    ?=
FUZZ_BUILD = $(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(FUZZ_FLAGS)
FUZZ_RUN   = -timeout=20 -rss_limit_mb=2048 -print_final_stats=1 $(FUZZ_RUN_FLAGS)
.PHONY: fuzz
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "$(FUZZ_CC) not found, skipping fuzz"; exit 0; }; \
	mkdir -p build-fuzz/corpus build-fuzz/plan-corpus && \
	$(FUZZ_BUILD) -o build-fuzz/fuzz_net tests/fuzz/fuzz_net.c $(ANALYSIS) $(PLAN) $(LIBS) && \
	$(FUZZ_BUILD) -o build-fuzz/fuzz_plan tests/fuzz/fuzz_plan.c $(ANALYSIS) $(PLAN) $(LIBS) || exit 1; \
	rc=0; \
	[ $(FUZZ_NET_SECONDS) -eq 0 ] || build-fuzz/fuzz_net -max_total_time=$(FUZZ_NET_SECONDS) $(FUZZ_RUN) \
		-max_len=32768 -dict=tests/fuzz/net.dict -artifact_prefix=build-fuzz/ \
		build-fuzz/corpus tests/bad examples || rc=1; \
	[ $(FUZZ_PLAN_SECONDS) -eq 0 ] || build-fuzz/fuzz_plan -max_total_time=$(FUZZ_PLAN_SECONDS) $(FUZZ_RUN) \
		-max_len=65536 -dict=tests/fuzz/plan.dict -artifact_prefix=build-fuzz/plan- \
		build-fuzz/plan-corpus tests/fuzz/plan-seeds || rc=1; \
	exit $$rc
