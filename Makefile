# offboardd: the two commands a fresh machine needs are `make demo` and `make test`.
# Both create .venv, install the package with what it needs, and install Debian's
# mosquitto when it is missing (as root; otherwise they stop and say what to install).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=

.PHONY: test demo lint bench deps mosquitto clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

deps: $(STAMP) mosquitto

mosquitto:
	@command -v mosquitto >/dev/null 2>&1 || [ -x /usr/sbin/mosquitto ] || { \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian's mosquitto (MQTT broker used by the tests and the demo)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mosquitto mosquitto-clients >/dev/null; \
	  else \
	    echo "mosquitto is missing: run 'sudo apt-get install mosquitto mosquitto-clients' and retry" >&2; exit 1; \
	  fi; }

test: deps
	$(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check offboardd tests
	$(VENV)/bin/mypy

# The demo needs less than the tests: the package and matplotlib (the `demo` extra).
DEMO_STAMP := $(VENV)/.installed-demo
DEMO_ARGS ?=

$(DEMO_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[demo]'
	touch $(DEMO_STAMP)

# Flies the demo mission against the built-in sim through a private broker; writes
# demo-out/flight.png (e.g. `make demo DEMO_ARGS="--out /tmp/demo"`).
demo: $(DEMO_STAMP) mosquitto
	$(PY) -m offboardd demo $(DEMO_ARGS)

# The benchmark: offboardd at 20/50/100 Hz, MAVSDK and a pymavlink loop, side by side under
# the sim's px4 and heavy telemetry loads; writes bench/results.{md,json,png} in a few
# minutes (e.g. `make bench BENCH_ARGS="--seconds 5 --only 20hz"`; see bench/README.md).
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_ARGS ?=

$(BENCH_STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

bench: $(BENCH_STAMP) mosquitto
	$(PY) -m bench $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
