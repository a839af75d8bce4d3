# Front door. `make run` trains a small GPT, samples from it and explains one of its predictions
# (explain.svg); `make test` runs the suite; `make install PREFIX=/opt/strix` installs the
# headers, libstrix.a/.so, the strix command, the GPU plugins, strix.pc and the CMake package.
# Everything is built by CMake in build/ (build-asan/ for the sanitizer run). Every target that
# configures first runs scripts/deps.sh: missing build packages are installed with apt-get when
# run as root, otherwise it prints the `sudo apt-get install -y ...` line and stops
# (SKIP_DEPS=1 skips the check).
BUILD      ?= build
JOBS       ?= $(shell nproc 2>/dev/null || echo 2)
CMAKE_ARGS ?=
MODEL      ?= model.safetensors
RUN_STEPS  ?= 5000
RUN_TIME   ?= 120
EXPLAIN_PROMPT ?= The Bionic Dog drinks too much and kicks over the Nat
PREFIX     ?= /usr/local
SKIP_DEPS  ?=

.PHONY: all deps configure build run test test-asan bench install clean

all: build

deps:
	@STRIX_SKIP_DEPS=$(SKIP_DEPS) bash scripts/deps.sh

configure: deps
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX=$(PREFIX) \
	    $(CMAKE_ARGS) >/dev/null

build: configure
	@cmake --build $(BUILD) -j $(JOBS)
	@cat $(BUILD)/strix-backends.txt

install: build
	cmake --install $(BUILD) --prefix $(PREFIX)

# The main job builds only what it runs: the strix command (and its GPU plugins), not the tests.
run: configure
	@cmake --build $(BUILD) -j $(JOBS) --target strix_cli
	@cat $(BUILD)/strix-backends.txt
	./$(BUILD)/strix train --steps $(RUN_STEPS) --time $(RUN_TIME) --out $(MODEL) --force
	./$(BUILD)/strix sample --model $(MODEL) --tokens 400
	@echo
	./$(BUILD)/strix explain --model $(MODEL) --prompt '$(EXPLAIN_PROMPT)' --svg explain.svg

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-asan: deps
	@cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=Debug -DSTRIX_SANITIZE=ON -DSTRIX_BUILD_BENCH=OFF $(CMAKE_ARGS) >/dev/null
	@cmake --build build-asan -j $(JOBS)
	cd build-asan && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 ctest --output-on-failure -j $(JOBS) -LE slow

bench: build
	bash bench/gpt_train.sh
	bash bench/zoo_train.sh
	./$(BUILD)/bench_explain

clean:
	rm -rf $(BUILD) build-asan
