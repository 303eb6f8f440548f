# The two commands a newcomer runs: `make demo` and `make test`. Both install what is missing
# first (tools/install-deps.sh) and build in build/.
BUILD ?= build
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=

.PHONY: all deps build demo test test-asan fuzz clean

all: build

deps:
	@bash tools/install-deps.sh

build: deps
	cmake -S . -B $(BUILD) -DMI_WERROR=ON $(CMAKE_FLAGS)
	cmake --build $(BUILD) -j$(JOBS)

# PoCL's cache of compiled OpenCL programs, shared by the tests of both suites (MI_POCL_CACHE;
# tests/README.md): what PoCL compiles depends on the kernel source and options, not on our build,
# so the sanitizer suite after `make test` finds them compiled. Compiling them again inside an
# ASan process took about 10 s a program at load 6 against 0.9 s in the plain build, and timed
# out test_opencl_conv_tiled and tune_knobs_gpu (CI, 2026-12-05). The plugins' own program
# caches (MI_CACHE_DIR) stay per test: they are what the cache tests check.
POCL_TEST_CACHE = $(abspath $(BUILD))/tests/pocl-cache

test: build
	mkdir -p $(POCL_TEST_CACHE)
	MI_POCL_CACHE=$(POCL_TEST_CACHE) ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

# The whole suite under AddressSanitizer + UndefinedBehaviorSanitizer (any report fails the
# test). LeakSanitizer suppressions cover third-party drivers only (tests/fuzz/lsan.supp).
# use_tls=0: LeakSanitizer's tracer, reading threads' dynamic TLS at exit, died with "Tracer
# caught signal 11" in some processes that still run driver threads (deterministically for
# runtime_deploy in one checkout on 2026-11-30, intermittently before); without the TLS scan it
# does not, and the few third-party allocations held only through thread-specific data are
# suppressed by library (docs/fuzzing.md). A failing test fails the run: no retry.
# handle_segv/sigbus/sigfpe=0: the crash-isolation tests make workers die by a real signal on
# purpose; ASan's own handler would turn that into "exit 1". MI_LOADER_NODELETE=1:
# plugins and their drivers stay mapped, so leaks are attributed to named code.
ASAN_ENV = ASAN_OPTIONS=detect_leaks=1:handle_segv=0:handle_sigbus=0:handle_sigfpe=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	LSAN_OPTIONS=suppressions=$(CURDIR)/tests/fuzz/lsan.supp:print_suppressions=0:use_tls=0 \
	MI_LOADER_NODELETE=1 MI_POCL_CACHE=$(POCL_TEST_CACHE)
test-asan: deps
	cmake -S . -B $(BUILD)-asan -DMI_WERROR=ON -DMI_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	mkdir -p $(POCL_TEST_CACHE)
	$(ASAN_ENV) ctest --test-dir $(BUILD)-asan --output-on-failure -j$(JOBS)

# Every parser under libFuzzer for FUZZ_SECONDS each (docs/fuzzing.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	bash tools/fuzz.sh $(FUZZ_SECONDS)

demo: build
	@bash tools/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan build-fuzz
