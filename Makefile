# Sluice - GNU make + pkg-config.
#   make            build build/sluiced and build/sluice
#   make run        install missing packages, build, start sluiced --dev
#   make test       install missing packages, check every source with clang too,
#                   build under ASan+UBSan, run every suite
#   make tsan       the same suites under ThreadSanitizer (not part of make test)
#   make bench      benchmarks (print figures; never fail on speed), SQLite
#                   and PostgreSQL side by side among them
#   make bench-slurm  Sluice against Slurm on the three-node Slurm lab (root,
#                   about 20 minutes)
#   make bench-ui   the web UI with 1,000 nodes and 100,000 jobs in headless
#                   Chromium, and the charting libraries (10-15 minutes)
#   make fuzz       libFuzzer targets (clang), run for FUZZ_SECONDS each
#   make ui         the same build with the web UI required: npm installs
#                   uPlot in web/node_modules, or this fails (make alone
#                   goes on without npm and serves a page that says so)
#   make install    PREFIX=/usr/local DESTDIR=
#   make clean      remove build/; make distclean also web/node_modules

CC      ?= cc
PREFIX  ?= /usr/local
PKGS    := jansson yaml-0.1 sqlite3 libsodium libpq openssl ldap
# OIDC (src/ident/oidc.c): cjose verifies JWS, libcurl talks to the provider.
PKGS    += cjose libcurl libcrypto
# The CLI links only what it uses: its HTTP client is plain sockets (libc)
# with OpenSSL's libssl for https:// (initialised only for such a URL;
# docs/decisions/0016-cli-tls-client.md), libyaml comes with the simulator (sim --config and the manifest rules),
# libsodium with the offline audit verifier (audit verify -f),
# so each `sluice` process maps a handful of libraries, not libcurl's ~30.
CLI_PKGS := jansson yaml-0.1 libsodium openssl
WARN    := -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Werror
# snprintf truncation is deliberate (bounded names and messages), so GCC's
# -Wformat-truncation guesses are off; every other format check stays on.
# (clang has no such warning and would reject the flag.)
ifeq ($(shell $(CC) -Werror -Wno-format-truncation -E -x c /dev/null >/dev/null 2>&1 && echo y),y)
WARN    += -Wno-format-truncation
endif
PKG_CFLAGS := $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   := $(shell pkg-config --libs $(PKGS) 2>/dev/null)
CLI_LIBS   := $(shell pkg-config --libs $(CLI_PKGS) 2>/dev/null) -lm

ifeq ($(SAN),1)
B       := build/asan
DAEMON_LIBS :=
OPT     := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
           -fno-sanitize-recover=undefined
else ifeq ($(SAN),fault)
# The allocation-failure sweeps (tests/fault) replace malloc for the whole
# process, which no sanitizer's allocator allows: a plain build of its own.
B       := build/fault
DAEMON_LIBS :=
OPT     := -O0 -g
else ifeq ($(SAN),thread)
# ThreadSanitizer (make tsan): the daemon has an engine, a syncer, an HTTP,
# a checkpointer and a GPU monitor thread.
B       := build/tsan
DAEMON_LIBS :=
OPT     := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
else
B       := build
OPT     := -O2 -g
# The daemon allocates on one thread and frees on another at a high rate;
# jemalloc does that with less work than glibc's malloc (see bench/README.md).
# Sanitizer builds keep the sanitizer's allocator.
DAEMON_LIBS := $(shell pkg-config --libs jemalloc 2>/dev/null)
endif

CFLAGS  += -std=c17 -D_GNU_SOURCE -MMD -MP $(OPT) $(WARN) $(PKG_CFLAGS)
LDFLAGS += $(OPT) -Wl,--as-needed
LDLIBS  += $(PKG_LIBS) -lpthread -ldl -lm

CORE_SRC   := $(wildcard src/util/*.c src/core/*.c src/meter/*.c src/sched/*.c src/sim/*.c src/store/*.c src/exec/*.c src/audit/*.c src/policy/*.c src/ident/*.c)
DAEMON_SRC := $(wildcard src/http/*.c src/api/*.c src/engine/*.c src/daemon/*.c)
CLI_SRC    := $(wildcard src/client/*.c src/cli/*.c)
UNIT_SRC   := $(wildcard tests/unit/test_*.c)

# Each store backend's migrations (src/store/migrations/BACKEND/NNNN_*.sql),
# embedded by src/store/migrations/embed.sh into a generated C file under
# $(B)/gen: the daemon never reads them at run time. The .list file changes
# only when the set of files does, so adding or removing one regenerates.
STORE_BACKENDS := sqlite postgres
STORE_GEN_OBJ  := $(STORE_BACKENDS:%=$(B)/obj/gen/%_migrations.o)
CORE_OBJ   := $(CORE_SRC:%.c=$(B)/obj/%.o) $(STORE_GEN_OBJ)
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(B)/obj/%.o)
CLI_OBJ    := $(CLI_SRC:%.c=$(B)/obj/%.o)
UNIT_BIN   := $(UNIT_SRC:tests/unit/%.c=$(B)/tests/%.t)

# The web UI (web/; docs/daemon.md, "The web UI"). npm installs its
# dependencies in web/node_modules from web/package-lock.json; then
# src/ui/embed.c, a program built for this machine (HOSTCC), embeds the
# pages and uPlot's bundle in $(B)/gen/ui_assets.c, which is linked into
# sluiced: sluiced never reads web/. The .list file holds a checksum of
# each input, so a changed, added or removed file regenerates it. Without
# npm, or when npm ci fails (no network), the build goes on and /ui/ says
# that the web UI was not built; UI_REQUIRE=1 (make ui) makes both errors.
HOSTCC     ?= $(CC)
NPM        ?= npm
NPM_CI     := $(NPM) ci --no-audit --no-fund --prefer-offline --loglevel=error \
              --fetch-retries=1 --fetch-retry-mintimeout=2000 --fetch-retry-maxtimeout=10000
UI_REQUIRE ?=
UI_UPLOT   := web/node_modules/uplot/dist/uPlot.iife.min.js web/node_modules/uplot/dist/uPlot.min.css
UI_INPUT    = web/index.html web/favicon.svg $(wildcard web/js/*.js web/css/*.css) $(UI_UPLOT)
UI_STAMP   := web/node_modules/.package-lock.json
UI_OBJ     := $(B)/obj/gen/ui_assets.o

.PHONY: all deps run test tsan unit ui ui-npm bench bench-slurm bench-ui fuzz install clean distclean \
	check-banned check-clang FORCE
all: $(B)/sluiced $(B)/sluice

deps:
	@scripts/deps.sh

$(B)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -c -o $@ $<

# Kept between runs: make would delete them as intermediate files, and then
# regenerate them (and relink everything) on every run.
.PRECIOUS: $(B)/gen/%_migrations.list $(B)/gen/%_migrations.c
$(B)/gen/%_migrations.list: FORCE
	@mkdir -p $(dir $@)
	@echo $(sort $(wildcard src/store/migrations/$*/*.sql)) | cmp -s - $@ || \
	  echo $(sort $(wildcard src/store/migrations/$*/*.sql)) > $@

$(B)/gen/%_migrations.c: $(B)/gen/%_migrations.list src/store/migrations/embed.sh \
		$(wildcard src/store/migrations/*/*.sql)
	sh src/store/migrations/embed.sh $* $(sort $(wildcard src/store/migrations/$*/*.sql)) > $@.tmp
	mv $@.tmp $@

$(B)/obj/gen/%_migrations.o: $(B)/gen/%_migrations.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I. -c -o $@ $<

# npm ci, when web/node_modules is missing, lacks uPlot's bundle, or is
# older than the lockfile (npm writes node_modules/.package-lock.json last).
ui-npm:
	@if [ -f $(UI_STAMP) ] && [ -f $(firstword $(UI_UPLOT)) ] && \
	    [ ! web/package-lock.json -nt $(UI_STAMP) ] && [ ! web/package.json -nt $(UI_STAMP) ]; then \
	  :; \
	elif ! command -v $(firstword $(NPM)) >/dev/null 2>&1; then \
	  if [ "$(UI_REQUIRE)" = 1 ]; then echo "make ui: npm not found" >&2; exit 1; fi; \
	  echo "warning: npm not found: sluiced is built without its web UI (/ui/ says so; make ui builds it)" >&2; \
	else \
	  echo "cd web && $(NPM_CI)"; \
	  if ! (cd web && $(NPM_CI)); then \
	    if [ "$(UI_REQUIRE)" = 1 ]; then exit 1; fi; \
	    echo "warning: npm ci failed in web/: sluiced is built without its web UI (/ui/ says so; make ui builds it)" >&2; \
	  fi; \
	fi

$(B)/gen/ui.list: FORCE | ui-npm
	@mkdir -p $(dir $@)
	@cksum $(UI_INPUT) > $@.tmp 2>/dev/null; \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv $@.tmp $@; fi

$(B)/tools/ui_embed: src/ui/embed.c
	@mkdir -p $(dir $@)
	$(HOSTCC) -std=c17 -D_GNU_SOURCE -O1 $(WARN) -o $@ $<

$(B)/gen/ui_assets.c: $(B)/gen/ui.list $(B)/tools/ui_embed
	$(B)/tools/ui_embed $(if $(filter 1,$(UI_REQUIRE)),--require) web > $@.tmp
	mv $@.tmp $@

$(UI_OBJ): $(B)/gen/ui_assets.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I. -c -o $@ $<

ui:
	$(MAKE) UI_REQUIRE=1 $(B)/sluiced

$(B)/libsluice-core.a: $(CORE_OBJ)
	@mkdir -p $(dir $@)
	$(AR) rcs $@ $^

$(B)/sluiced: $(DAEMON_OBJ) $(UI_OBJ) $(B)/libsluice-core.a
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS) $(DAEMON_LIBS)

$(B)/sluice: $(CLI_OBJ) $(B)/libsluice-core.a
	$(CC) $(LDFLAGS) -o $@ $^ $(CLI_LIBS)

$(B)/tests/%.t: $(B)/obj/tests/unit/%.o $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A store backend's runner (tests/unit/test_store_BACKEND.c) runs the
# conformance suite every backend must pass (tests/store/conformance.c).
$(B)/tests/test_store_%.t: $(B)/obj/tests/unit/test_store_%.o $(B)/obj/tests/store/conformance.o \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# sluiced's settings are the daemon's, not the core library's.
$(B)/tests/test_config.t: $(B)/obj/tests/unit/test_config.o $(B)/obj/src/daemon/config.o $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The engine's unit test links the engine without the HTTP server and API.
ENGINE_OBJ := $(patsubst %.c,$(B)/obj/%.o,$(wildcard src/engine/*.c))
$(B)/tests/test_engine.t: $(B)/obj/tests/unit/test_engine.o $(ENGINE_OBJ) $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The engine's modules, each on its own (tests/unit/engine_harness.h): the
# same objects as test_engine.t.
$(B)/tests/test_engine_meter.t: $(B)/obj/tests/unit/test_engine_meter.o $(ENGINE_OBJ) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/test_engine_govern.t: $(B)/obj/tests/unit/test_engine_govern.o $(ENGINE_OBJ) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/test_engine_launch.t: $(B)/obj/tests/unit/test_engine_launch.o $(ENGINE_OBJ) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/test_engine_nodes.t: $(B)/obj/tests/unit/test_engine_nodes.o $(ENGINE_OBJ) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/test_engine_jobctl.t: $(B)/obj/tests/unit/test_engine_jobctl.o $(ENGINE_OBJ) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
$(B)/tests/test_engine_depwait.t: $(B)/obj/tests/unit/test_engine_depwait.o $(ENGINE_OBJ) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# The fuzz targets' replay drivers: each runs every saved input of its
# corpus (tests/fuzz/corpus/NAME) through its parser, as TAP. A target's
# parser is in the core library, or in the objects FUZZ_EXTRA_NAME names.
FUZZ_TARGETS := spec http_request http_query http_response trace audit trivy config slurm carbon ws
FUZZ_EXTRA_http_request := src/http/parse.c
FUZZ_EXTRA_http_query := src/http/parse.c
FUZZ_EXTRA_http_response := src/client/client.c
FUZZ_EXTRA_config := src/daemon/config.c $(wildcard src/exec/*.c)
FUZZ_EXTRA_trace := src/sim/trace.c
FUZZ_EXTRA_audit := src/audit/audit.c
FUZZ_EXTRA_slurm := src/exec/slurm_parse.c
FUZZ_TARGETS += jwt ident
FUZZ_EXTRA_jwt := src/ident/oidc.c
FUZZ_EXTRA_ident := src/ident/ident.c src/ident/oidc.c
FUZZ_REPLAY := $(FUZZ_TARGETS:%=$(B)/tests/fuzz_%_replay)
.SECONDEXPANSION:
$(B)/tests/fuzz_%_replay: $(B)/obj/tests/fuzz/fuzz_%.o $(B)/obj/tests/fuzz/replay_main.o \
		$$(patsubst %.c,$(B)/obj/%.o,$$(filter-out $$(CORE_SRC),$$(FUZZ_EXTRA_$$*))) \
		$(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# A stand-in for libnvidia-ml.so.1 (tests/fakenvml/fakenvml.c), loaded by
# the tests through SLUICE_NVML_LIB; no sanitizers in a dlopen'ed library.
$(B)/tests/libfakenvml.so: tests/fakenvml/fakenvml.c
	@mkdir -p $(dir $@)
	$(CC) -std=c17 -D_GNU_SOURCE -O1 -g -fPIC -shared $(WARN) -o $@ $<

# The audit verifier's mutation battery for real exports (tests/audit_battery.c).
$(B)/tests/audit-battery: $(B)/obj/tests/audit_battery.o $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# Allocation-failure sweeps (tests/fault/fault_alloc.c); built with SAN=fault.
$(B)/tests/fault_alloc.t: $(B)/obj/tests/fault/fault_alloc.o $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

# src/ident/oidc.c driven against tests/idp/fake_idp.py (tests/integration/oidc_idp.t).
$(B)/tests/oidc-probe: $(B)/obj/tests/idp/oidc_probe.o $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)
unit: $(B)/tests/oidc-probe

unit: $(UNIT_BIN) $(FUZZ_REPLAY) $(B)/tests/libfakenvml.so $(B)/tests/audit-battery

run: deps all
	scripts/run-dev.sh

# races.t runs its daemon from the ThreadSanitizer build (SLUICE_TSAN_BIN);
# the allocation-failure sweeps need a build without sanitizers. The
# integration suite runs twice in the one prove run: on SQLite, and on a
# PostgreSQL server tests/pg/suite.sh starts (build/pgsuite/t/*.t, each
# daemon with a database of its own), stopped whatever the result.
test: deps check-banned check-clang
	$(MAKE) SAN=1 all unit
	$(MAKE) SAN=fault build/fault/tests/fault_alloc.t
	$(MAKE) SAN=thread build/tsan/sluiced
	tests/pg/suite.sh start $(CURDIR)/build/pgsuite
	SLUICE_BIN=$(CURDIR)/build/asan SLUICE_TSAN_BIN=$(CURDIR)/build/tsan \
	  prove -j2 --exec '' build/asan/tests/*.t tests/integration/*.t \
	  build/fault/tests/fault_alloc.t $$(ls build/pgsuite/t/*.t 2>/dev/null); \
	  rc=$$?; tests/pg/suite.sh stop $(CURDIR)/build/pgsuite; exit $$rc

# Every suite against a ThreadSanitizer build: a race stops the process
# (halt_on_error), so the test that started it fails.
tsan: deps
	$(MAKE) SAN=thread all unit
	TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 $(TSAN_OPTIONS)" \
	  SLUICE_BIN=$(CURDIR)/build/tsan prove -j2 --exec '' build/tsan/tests/*.t tests/integration/*.t

check-banned:
	@scripts/check-banned.sh

# Product code is gcc and clang clean: every source through clang's front
# end with the same warnings (no code is generated, so it takes seconds).
CLANG_WARN := -Wall -Wextra -Wpedantic -Wshadow -Wformat=2 -Werror
check-clang:
	@printf '%s\n' $(CORE_SRC) $(DAEMON_SRC) $(CLI_SRC) $(UNIT_SRC) src/ui/embed.c | \
	  xargs -P2 -n8 clang -std=c17 -D_GNU_SOURCE -fsyntax-only $(CLANG_WARN) $(PKG_CFLAGS)

# The scheduler library's benchmark (bench/sched_bench.c), run by bench/sched.sh.
$(B)/bench/sched_bench: $(B)/obj/bench/sched_bench.o $(B)/libsluice-core.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS) -o $@ $^ $(LDLIBS)

bench: deps all $(B)/bench/sched_bench
	bench/run.sh
	bench/sched.sh all
	bench/joblist.py
	bench/store.sh
	bench/tls.sh

# Sluice with the Slurm executor against Slurm alone, end to end; then
# submissions/s through Sluice's API against slurmrestd's; then a trace
# replayed under Slurm's scheduler and under Sluice's (bench/README.md).
bench-slurm: deps all
	bench/slurm_e2e.sh
	bench/slurm_rest.sh
	bench/slurm_replay.sh

# The web UI at scale: the jobs page, its filters, the overview and the
# nodes page timed in headless Chromium against 1,000 fake nodes and
# 100,000 jobs; uPlot against Chart.js (bench/README.md). UI_REQUIRE: a
# sluiced without its UI has nothing to measure.
bench-ui: deps
	$(MAKE) UI_REQUIRE=1 all
	bench/ui_scale.sh

# Each target: its source, what it links beside FUZZ_SRC, its -max_len, its
# corpus under tests/fuzz/corpus/. New inputs land in build/fuzz/corpus/NAME;
# fold the useful ones in with -merge=1 (tests/fuzz/README.md, which also
# gives the commands of a long run).
FUZZ_SECONDS ?= 60
FUZZ_SRC := $(wildcard src/util/*.c src/core/*.c src/meter/*.c src/policy/*.c)
FUZZ_CC := clang -std=c17 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined \
	  -fno-sanitize-recover=undefined $(PKG_CFLAGS)
build/fuzz/fuzz_%: tests/fuzz/fuzz_%.c $$(FUZZ_EXTRA_$$*) $(FUZZ_SRC)
	@mkdir -p $(dir $@)
	$(FUZZ_CC) -o $@ $^ $(PKG_LIBS) -lpthread -ldl -lm
FUZZ_MAX_LEN_spec := 4096
FUZZ_MAX_LEN_http_request := 9000
FUZZ_MAX_LEN_http_query := 2048
FUZZ_MAX_LEN_http_response := 4096
FUZZ_MAX_LEN_trace := 8192
FUZZ_MAX_LEN_audit := 8192
FUZZ_MAX_LEN_trivy := 8192
FUZZ_MAX_LEN_config := 4096
FUZZ_MAX_LEN_slurm := 4096
FUZZ_MAX_LEN_carbon := 4096
FUZZ_MAX_LEN_ws := 4096
FUZZ_MAX_LEN_jwt := 17000
FUZZ_MAX_LEN_ident := 4096
# fuzz-run-NAME: one target for FUZZ_SECONDS (never a file, so always run).
# The target binary is kept for -merge=1 (tests/fuzz/README.md).
.PRECIOUS: build/fuzz/fuzz_%
fuzz: deps $(FUZZ_TARGETS:%=fuzz-run-%)
fuzz-run-%: build/fuzz/fuzz_%
	@mkdir -p build/fuzz/corpus/$*
	$< -max_total_time=$(FUZZ_SECONDS) -max_len=$(FUZZ_MAX_LEN_$*) -print_final_stats=1 \
	  -artifact_prefix=build/fuzz/ \
	  build/fuzz/corpus/$* tests/fuzz/corpus/$*

install: all
	install -d $(DESTDIR)$(PREFIX)/bin $(DESTDIR)$(PREFIX)/share/man/man1 $(DESTDIR)$(PREFIX)/share/man/man8
	install -m 0755 build/sluiced build/sluice $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 docs/man/sluice.1 $(DESTDIR)$(PREFIX)/share/man/man1/
	install -m 0644 docs/man/sluiced.8 $(DESTDIR)$(PREFIX)/share/man/man8/

clean:
	rm -rf build

distclean: clean
	rm -rf web/node_modules

-include $(shell find build -name '*.d' 2>/dev/null)
