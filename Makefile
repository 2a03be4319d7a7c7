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
LIBS    := -ljansson -lglpk -lm
ifdef SANITIZE
CFLAGS  += -O1 -fno-omit-frame-pointer -fsanitize=$(SANITIZE) -fno-sanitize-recover=all
LDFLAGS += -fsanitize=$(SANITIZE)
endif
BUILD   ?= build

ANALYSIS := analysis/util.c analysis/jget.c analysis/device.c analysis/net.c \
	    analysis/route.c analysis/sched.c analysis/sim.c analysis/policy.c \
	    analysis/analyze.c
PLAN     := plan/ucudnn.c
CLI      := cli/main.c cli/common.c cli/output.c cli/cmd_check.c cli/cmd_analyze.c
LIB_OBJ  := $(ANALYSIS:%.c=$(BUILD)/%.o) $(PLAN:%.c=$(BUILD)/%.o)
CLI_OBJ  := $(CLI:%.c=$(BUILD)/%.o)
UNIT     := $(wildcard tests/unit/test_*.c)
UNIT_BIN := $(UNIT:tests/unit/%.c=$(BUILD)/tests/%)

.PHONY: all demo test check unit cli-tests bench clean deps
all: memplan

memplan: $(BUILD)/memplan
	cp $< $@

$(BUILD)/memplan: $(CLI_OBJ) $(LIB_OBJ)
	$(CC) $(LDFLAGS) -o $@ $^ $(LIBS)

$(BUILD)/%.o: %.c $(wildcard analysis/*.h plan/*.h cli/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) -c -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c tests/unit/unit.h $(LIB_OBJ)
	@mkdir -p $(dir $@)
	$(CC) $(WARN) $(CFLAGS) $(LDFLAGS) -o $@ $< $(LIB_OBJ) $(LIBS)

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
