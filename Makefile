# Convenience wrapper; the scripts under scripts/ are the source of truth.
.PHONY: all build test test-asan example fuzz bench format clean

JOBS ?= 2
FUZZ_SECONDS ?= 600

all: build

build:
	@test -f build/build.ninja || cmake -G Ninja -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo \
	  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
	cmake --build build -j $(JOBS)

test:
	bash scripts/test.sh

test-asan:
	bash scripts/test.sh --only asan

example:
	bash scripts/example.sh

fuzz:
	bash scripts/fuzz.sh $(FUZZ_SECONDS)

bench: build
	cmake -S . -B build -DESI_BUILD_BENCH=ON > /dev/null
	cmake --build build -j $(JOBS)
	build/esi_bench --benchmark_counters_tabular=true

# Google style at 100 columns unless the repository grows a .clang-format.
FORMAT_STYLE := $(if $(wildcard .clang-format),file,{BasedOnStyle: Google, ColumnLimit: 100})
format:
	git ls-files '*.cpp' '*.hpp' | xargs clang-format -i --style='$(FORMAT_STYLE)'

clean:
	rm -rf build build-asan build-fuzz
