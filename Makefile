# Thin wrapper over CMake/CTest. Every target installs what is missing first (scripts/deps.sh).
#
#   make run        build (Release-ish, CUDA when nvcc is found) and run the demo: the stencil
#                   (apps/stencil) on every local GPU, else apps/halo_demo on the host
#   make check      build and run every test; GPU tests skip (code 77) without a GPU
#   make sanitize   AddressSanitizer + UBSan build in $(ASAN_DIR), runs the cpu-labelled tests
#   make tsan       ThreadSanitizer build in $(TSAN_DIR), runs the tests labelled threads (the
#                   datatype engine, the common layer, host ranks, queues and notifications
#                   from several threads at once; suppressions in tests/tsan.supp)
#   make fuzz       clang + libFuzzer build in $(FUZZ_DIR), fuzzes the datatype engine for
#                   FUZZ_SECONDS (default 60)
#   make bench      build and run the benchmarks (CTest label "bench"), one at a time
#   make clean      remove the build directories
#
# Variables: BUILD_DIR ASAN_DIR TSAN_DIR FUZZ_DIR GPU_DIR (scripts/gpu-check.sh) BUILD_TYPE CMAKE_ARGS JOBS CTEST_JOBS FUZZ_SECONDS FUZZ_LOG,
# e.g. `make check CMAKE_ARGS=-DGCOMM_CUDA=OFF`.

BUILD_DIR    ?= build
ASAN_DIR     ?= build-asan
TSAN_DIR     ?= build-tsan
FUZZ_DIR     ?= build-fuzz
GPU_DIR      ?= build-gpu
BUILD_TYPE   ?= RelWithDebInfo
CMAKE_ARGS   ?=
JOBS         ?= $(shell nproc 2>/dev/null || echo 2)
CTEST_JOBS   ?= 2
FUZZ_SECONDS ?= 60
FUZZ_LOG     ?= $(FUZZ_DIR)/fuzz.log
# The sanitizer and fuzz builds test host code only: CUDA off keeps them fast (and ASan away from
# the CUDA runtime's address-space reservations). Override with SANITIZE_CMAKE_ARGS=...
SANITIZE_CMAKE_ARGS ?= -DGCOMM_CUDA=OFF -DGCOMM_BUILD_BENCH=OFF
FUZZ_CMAKE_ARGS     ?= -DGCOMM_CUDA=OFF -DGCOMM_MPI=OFF -DGCOMM_BUILD_BENCH=OFF
TSAN_CMAKE_ARGS     ?= -DGCOMM_CUDA=OFF -DGCOMM_MPI=OFF -DGCOMM_BUILD_BENCH=OFF

# Leak reports from inside Open MPI and its helpers are not ours. Open MPI unloads its plugins at
# MPI_Finalize, which would leave their leaks without a module name to suppress: keep them loaded.
LSAN_SUPP = $(ASAN_DIR)/lsan.supp
SAN_ENV = ASAN_OPTIONS=detect_leaks=1:fast_unwind_on_malloc=0:strict_string_checks=1 \
          UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
          LSAN_OPTIONS=suppressions=$(abspath $(LSAN_SUPP)):print_suppressions=0 \
          OMPI_MCA_mca_base_component_disable_dlclose=1

CMAKE ?= cmake
CTEST ?= ctest
SHELL := /bin/bash

# run_ctest DIR ARGS: runs ctest in DIR, then prints why each skipped test skipped (the first lines
# of its output, from DIR/Testing/Temporary/LastTest.log); keeps ctest's exit status.
define run_ctest
set -o pipefail; rc=0; \
$(CTEST) --test-dir $(1) --output-on-failure $(2) 2>&1 | tee $(1)/ctest-output.log || rc=$$?; \
if grep -q '(Skipped)$$' $(1)/ctest-output.log; then \
  echo "Why tests were skipped:"; \
  awk 'FNR == NR { if ($$0 ~ /\(Skipped\)$$/) skip[$$3] = 1; next } \
       /^[0-9]+\/[0-9]+ Test: / { name = $$3; cap = 0; next } \
       /^Output:$$/ { cap = (name in skip); lines = 0; next } \
       /^<end of output>$$/ { cap = 0; next } \
       cap && !/^-+$$/ && lines++ < 3 { print "  " name ": " $$0 }' \
    $(1)/ctest-output.log $(1)/Testing/Temporary/LastTest.log; \
fi; exit $$rc
endef

.PHONY: all deps configure build run check sanitize tsan fuzz bench clean

all: build

deps:
	@bash scripts/deps.sh

# Configure once; later builds re-run CMake by themselves when a CMakeLists.txt changes.
# CMAKE_ARGS given on the command line always re-configure.
configure: deps
	@if [ ! -f $(BUILD_DIR)/CMakeCache.txt ] || [ -n "$(strip $(CMAKE_ARGS))" ]; then \
	  echo "==> configuring $(BUILD_DIR) ($(BUILD_TYPE))"; \
	  $(CMAKE) -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(CMAKE_ARGS); \
	fi

build: configure
	@echo "==> building $(BUILD_DIR)"
	$(CMAKE) --build $(BUILD_DIR) -j $(JOBS)

# The stencil demo (dCUDA's Fig. 2 on gcomm) on every local GPU; without a GPU (or a build
# without CUDA) the host demo instead, saying so.
run: build
	@if [ -x $(BUILD_DIR)/apps/stencil/stencil_dcuda ] && nvidia-smi -L >/dev/null 2>&1; then \
	  echo "==> running apps/stencil/stencil_dcuda on every local GPU"; \
	  $(BUILD_DIR)/apps/stencil/stencil_dcuda --ni 512 --nj-per-rank 16 --steps 100; \
	else \
	  echo "==> no GPU here (or no CUDA build): running the same stencil program on host ranks" \
	       "(apps/stencil/stencil_host: 4 threads of this process as gcomm ranks)"; \
	  $(BUILD_DIR)/apps/stencil/stencil_host --ni 512 --nj-per-rank 16 --steps 100 --ranks 4; \
	fi

check: build
	@echo "==> running the tests ($(BUILD_DIR))"
	@$(call run_ctest,$(BUILD_DIR),-j $(CTEST_JOBS))

sanitize: deps
	@if [ ! -f $(ASAN_DIR)/CMakeCache.txt ]; then \
	  echo "==> configuring $(ASAN_DIR) (AddressSanitizer + UBSan)"; \
	  $(CMAKE) -S . -B $(ASAN_DIR) -DCMAKE_BUILD_TYPE=Debug -DGCOMM_SANITIZE=ON \
	    $(SANITIZE_CMAKE_ARGS) $(CMAKE_ARGS); \
	fi
	$(CMAKE) --build $(ASAN_DIR) -j $(JOBS)
	@printf '%s\n' leak:/openmpi/ leak:libmpi.so leak:libopen-pal.so leak:libopen-rte.so \
	  leak:libpmix.so leak:libhwloc.so leak:libevent leak:libucp.so leak:libucs.so > $(LSAN_SUPP)
	@echo "==> running the cpu tests under ASan/UBSan ($(ASAN_DIR))"
	@export $(SAN_ENV); $(call run_ctest,$(ASAN_DIR),-L cpu -j $(CTEST_JOBS))

tsan: deps
	@if [ ! -f $(TSAN_DIR)/CMakeCache.txt ]; then \
	  echo "==> configuring $(TSAN_DIR) (ThreadSanitizer)"; \
	  $(CMAKE) -S . -B $(TSAN_DIR) -DCMAKE_BUILD_TYPE=RelWithDebInfo -DGCOMM_TSAN=ON \
	    $(TSAN_CMAKE_ARGS) $(CMAKE_ARGS); \
	fi
	$(CMAKE) --build $(TSAN_DIR) -j $(JOBS)
	@echo "==> running the tests labelled threads under ThreadSanitizer ($(TSAN_DIR))"
	@export TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1:suppressions=$(abspath tests/tsan.supp); \
	  $(call run_ctest,$(TSAN_DIR),-L threads -j 1)

fuzz:
	@bash scripts/deps.sh --fuzz
	@if [ ! -f $(FUZZ_DIR)/CMakeCache.txt ]; then \
	  echo "==> configuring $(FUZZ_DIR) (clang, libFuzzer, ASan/UBSan)"; \
	  CC=clang $(CMAKE) -S . -B $(FUZZ_DIR) -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	    -DGCOMM_FUZZ=ON -DGCOMM_SANITIZE=ON $(FUZZ_CMAKE_ARGS) $(CMAKE_ARGS); \
	fi
	$(CMAKE) --build $(FUZZ_DIR) -j $(JOBS) --target fuzz_datatype
	@mkdir -p $(FUZZ_DIR)/corpus $(FUZZ_DIR)/artifacts
	@echo "==> fuzzing gcomm datatypes for $(FUZZ_SECONDS) s (corpus $(FUZZ_DIR)/corpus, log $(FUZZ_LOG))"
	@# libFuzzer prints a line per new or reduced input (~0.5 MB a minute), which buried the test
	@# summaries of a CI log. The whole output goes to $(FUZZ_LOG); the console gets all but those
	@# progress lines and the recommended dictionary: settings, start, end, statistics and any report.
	@rc=0; UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	  $(FUZZ_DIR)/tests/fuzz/fuzz_datatype -max_total_time=$(FUZZ_SECONDS) -timeout=20 \
	  -rss_limit_mb=4096 -max_len=4096 -print_final_stats=1 \
	  -artifact_prefix=$(FUZZ_DIR)/artifacts/ $(FUZZ_DIR)/corpus >$(FUZZ_LOG) 2>&1 || rc=$$?; \
	  grep -vE '^#[0-9]+[[:space:]]+(NEW|REDUCE|pulse)[[:space:]]|^[[:space:]]+NEW_FUNC\[|^".*" # Uses: [0-9]+$$' $(FUZZ_LOG); \
	  echo "==> fuzz_datatype exit $$rc ($$(grep -cE '^#[0-9]+[[:space:]]+(NEW|REDUCE)' $(FUZZ_LOG)) progress lines left out)"; \
	  exit $$rc

bench: build
	@echo "==> running the benchmarks (label bench, one at a time)"
	@if [ "$$($(CTEST) --test-dir $(BUILD_DIR) -N -L bench | awk '/^Total Tests:/ { print $$3 }')" = 0 ]; then \
	  echo "no benchmarks are registered yet (CTest label bench)"; \
	else \
	  $(CTEST) --test-dir $(BUILD_DIR) -L bench --output-on-failure -j 1; \
	fi

clean:
	rm -rf $(BUILD_DIR) $(ASAN_DIR) $(TSAN_DIR) $(FUZZ_DIR) $(GPU_DIR)
