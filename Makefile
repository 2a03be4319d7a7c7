# memplan: plan GPU memory for training deep networks.
#   make            build ./memplan
#   make demo       install what is missing (Debian, as root), build, analyze AlexNet
#   make test       unit + CLI tests (fast)
#   make check      the whole suite under AddressSanitizer + UndefinedBehaviorSanitizer
#   make bench      analysis benchmarks (bench/RESULTS.md)
CC      ?= cc
CFLAGS  ?= -O2 -g
# -Wno-format-truncation: JSON paths in messages are cut to fixed buffers on purpose
WARN    := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Wshadow -Wstrict-prototypes -Werror -Wno-format-truncation
LIBS    := -ljansson -lglpk -lcrypto -lm -lpthread -ldl
# SANFLAGS, not CFLAGS: `make check` sets CFLAGS on the command line, which
# would silently drop anything added to CFLAGS here.
ifdef SANITIZE
SANFLAGS := -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
endif
BUILD   ?= build

ANALYSIS := analysis/util.c analysis/jget.c analysis/device.c analysis/net.c \
	    analysis/route.c analysis/sched.c analysis/sim.c analysis/policy.c \
	    analysis/analyze.c analysis/zoo.c
PLAN     := plan/ucudnn.c plan/arena.c plan/trace.c plan/planfile.c plan/engine.c plan/planner.c plan/superneurons.c plan/tfswap.c plan/tensile.c plan/convconf.c plan/capacity.c
VERIFY   := verify/exec_host.c verify/pool.c verify/report.c verify/probe.c
CLI      := cli/main.c cli/common.c cli/output.c cli/cmd_check.c cli/cmd_analyze.c cli/cmd_plan.c cli/cmd_capacity.c cli/cmd_gen.c cli/cmd_devices.c cli/cmd_verify.c
LIB_OBJ  := $(ANALYSIS:%.c=$(BUILD)/%.o) $(PLAN:%.c=$(BUILD)/%.o) $(VERIFY:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI:%.c=$(BUILD)/%.o)
UNIT     := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all demo test check unit cli-tests bench clean deps
all: memplan

memplan: $(BUILD)/memplan
	cp $< $@

$(BUILD)/memplan: $(CLI_OBJ) $(LIB_OBJ)
	$(CC) $(SANFLAGS) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/%.o: %.c $(wildcard analysis/*.h plan/*.h verify/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SANFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(SANFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(LIBS)

deps:
	@sh tools/deps.sh

demo: deps
	$(MAKE) memplan
	./memplan analyze examples/alexnet.json

unit: $(UNIT_BIN)
	@sh tests/run-unit.sh $(UNIT_BIN)

cli-tests: memplan
	@sh tests/run-cli.sh

test: $(UNIT_BIN) memplan
	@sh tests/run-all.sh $(UNIT_BIN)

check: deps
	$(MAKE) BUILD=build-san SANITIZE=address,undefined CFLAGS="-O1 -g" memplan test

bench: memplan
	@sh bench/run.sh

clean:
	rm -rf build build-san memplan

# fuzz: libFuzzer on the loader and analysis (tests/fuzz/fuzz_net.c) for
# FUZZ_SECONDS, seeded with tests/bad and examples; crashes land in build-fuzz/.
# Needs clang with libFuzzer (Debian: clang, libclang-rt-14-dev).  FUZZ_FLAGS
# adds compiler flags, e.g. -fno-sanitize=CHECK to step over a bug already reported.
FUZZ_SECONDS ?= 60
FUZZ_CC      ?= clang
FUZZ_FLAGS   ?=
.PHONY: fuzz
fuzz:
	@command -v $(FUZZ_CC) >/dev/null || { echo "$(FUZZ_CC) not found, skipping fuzz"; exit 0; }; \
	mkdir -p build-fuzz/corpus && \
	$(FUZZ_CC) -std=c11 -D_GNU_SOURCE -g -O1 -fno-omit-frame-pointer \
		-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all $(FUZZ_FLAGS) \
		-o build-fuzz/fuzz_net tests/fuzz/fuzz_net.c $(ANALYSIS) $(LIBS) && \
	build-fuzz/fuzz_net -max_total_time=$(FUZZ_SECONDS) -timeout=10 -rss_limit_mb=2048 \
		-dict=tests/fuzz/net.dict -artifact_prefix=build-fuzz/ \
		build-fuzz/corpus tests/bad examples
