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

test: build
	ctest --test-dir $(BUILD) --output-on-failure -j$(JOBS)

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
	MI_LOADER_NODELETE=1
test-asan: deps
	cmake -S . -B $(BUILD)-asan -DMI_WERROR=ON -DMI_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug $(CMAKE_FLAGS)
	cmake --build $(BUILD)-asan -j$(JOBS)
	$(ASAN_ENV) ctest --test-dir $(BUILD)-asan --output-on-failure -j$(JOBS)

# Every parser under libFuzzer for FUZZ_SECONDS each (docs/fuzzing.md).
FUZZ_SECONDS ?= 60
fuzz: deps
	bash tools/fuzz.sh $(FUZZ_SECONDS)

demo: build
	@bash tools/demo.sh $(BUILD)

clean:
	rm -rf $(BUILD) $(BUILD)-asan build-fuzz
