# `make test` (the README's test command) and `make demo` (its training example). Both install
# missing Debian packages (as root; otherwise they print the apt-get line), configure, build, then
# run.
#
# `make test` is the whole suite: it also makes the venv of pinned Python oracles the parity tests
# compare against (the official mlperf_logging, HF tokenizers, TensorFlow, PyTorch ...; PyPI, once,
# reused after) and ends with one line counting passed, failed and skipped tests, each skip's
# reason listed above it.
#   make test OFFLINE=1            no oracle venv (a machine without PyPI): the parity tests are
#                                  skipped, and the summary says loudly which did not run
#   make test MLBERT_PYTHON=PATH   use an existing interpreter that has the oracles instead
BUILD ?= build
JOBS ?= $(shell nproc)
RUNS ?= 1
CMAKE_ARGS ?=
VENV ?= build-venv
OFFLINE ?=

ifneq ($(MLBERT_PYTHON),)
  ORACLES :=
else ifneq ($(OFFLINE),)
  ORACLES :=
else
  MLBERT_PYTHON := $(abspath $(VENV))/bin/python
  ORACLES := $(VENV)/.installed
endif

.PHONY: all deps configure build build-venv test demo fuzz clean format

all: build

deps:
	@scripts/deps.sh install

configure: deps
	@cmake -S . -B $(BUILD) -G Ninja -DMLBERT_PYTHON=$(MLBERT_PYTHON) $(CMAKE_ARGS) > $(BUILD).configure.log 2>&1 || { cat $(BUILD).configure.log; exit 1; }
	@grep -E '^-- mlbert' $(BUILD).configure.log || true

build: configure
	cmake --build $(BUILD) -j $(JOBS)

# The oracle venv: made once; remade only when tests/parity/requirements.txt changes.
build-venv: $(VENV)/.installed
$(VENV)/.installed: tests/parity/requirements.txt | deps
	@echo "mlbert: installing the parity oracles into $(VENV) (tests/parity/requirements.txt; once)"
	python3 -m venv $(VENV)
	$(VENV)/bin/pip install -q --upgrade pip
	$(VENV)/bin/pip install -q -r tests/parity/requirements.txt
	@touch $@

test: $(ORACLES) build
	@scripts/run_tests.sh $(BUILD) $(JOBS) $(if $(OFFLINE),--offline)

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
