# The README's two commands: `make test` and `make demo`. Both install missing Debian packages
# (as root; otherwise they print the apt-get line), configure, build, then run.
BUILD ?= build
JOBS ?= $(shell nproc)
RUNS ?= 1
CMAKE_ARGS ?=

.PHONY: all deps configure build test demo fuzz clean format

all: build

deps:
	@scripts/deps.sh install

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja $(CMAKE_ARGS) > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }
	@grep -E '^-- mlbert' $(BUILD).configure.log || true

build: configure
	cmake --build $(BUILD) -j $(JOBS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

# The demo needs only the CLI, not the tests.
demo: configure
	cmake --build $(BUILD) -j $(JOBS) --target mlbert mlbert-core
	$(BUILD)/bin/mlbert demo --runs $(RUNS)

fuzz:
	scripts/fuzz.sh $(or $(SECONDS),60)

format:
	git ls-files '*.h' '*.cc' '*.cu' '*.cuh' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD).configure.log
