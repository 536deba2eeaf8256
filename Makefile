# offboardd: the two commands a fresh machine needs are `make demo` and `make test`.
# Both create .venv, install the package with what it needs, and install Debian's
# mosquitto when it is missing (as root; otherwise they stop and say what to install).
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-test
PYTEST_ARGS ?=

.PHONY: test test-px4 demo lint bench bench-fence bench-motion bench-recorder bench-slow-link soak dialect deps system-tools mosquitto clean

# One install per extra: $(VENV)/.installed-test installs '.[test]', and so on.
$(VENV)/.installed-%: pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[$*]'
	touch $@

deps: $(STAMP) system-tools

# Debian packages the suite and the demo use: the broker and its clients (the README's
# examples), and systemd-analyze (the unit is verified as installed).
SYSTEM_TOOLS := mosquitto:mosquitto mosquitto_pub:mosquitto-clients \
                mosquitto_rr:mosquitto-clients systemd-analyze:systemd
system-tools:
	@missing=""; for pair in $(SYSTEM_TOOLS); do \
	  tool=$${pair%%:*}; pkg=$${pair##*:}; \
	  command -v $$tool >/dev/null 2>&1 || [ -x /usr/sbin/$$tool ] || missing="$$missing $$pkg"; \
	done; \
	missing=$$(echo $$missing | tr ' ' '\n' | sort -u | tr '\n' ' '); \
	if [ -n "$${missing% }" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else \
	    echo "missing Debian packages: run 'sudo apt-get install $$missing' and retry" >&2; exit 1; \
	  fi; \
	fi

mosquitto: system-tools  # the name the demo and bench targets depend on

test: deps
	$(PY) -m pytest -n 2 -q $(PYTEST_ARGS)

# The real-PX4 tier: flies the daemon through MQTT against a real PX4 SIH SITL (one fresh
# PX4 per scenario). Not part of `make test`: it needs a PX4 SITL build, e.g.
#   make test-px4 PX4_SITL=../shared/px4-sitl/build
#   make test-px4 PX4_SITL=~/PX4-Autopilot/build/px4_sitl_default
# Without PX4_SITL it stops with an error; it never skips. See sitl/README.md.
PX4_SITL ?=
PX4_REPORT ?= $(CURDIR)/.px4-tier-report.jsonl
test-px4: deps
	@if [ -z "$(PX4_SITL)" ]; then \
	  echo "make test-px4 needs PX4_SITL=<PX4 SITL build directory> (bin/px4 and etc/), e.g." >&2; \
	  echo "  make test-px4 PX4_SITL=../shared/px4-sitl/build   (see sitl/README.md)" >&2; exit 2; fi
	@test -x "$(PX4_SITL)/bin/px4" || { echo "no PX4 binary at $(PX4_SITL)/bin/px4" >&2; exit 2; }
	rm -f $(PX4_REPORT)
	OFFBOARDD_PX4_TIER=1 PX4_SITL="$(PX4_SITL)" OFFBOARDD_PX4_REPORT=$(PX4_REPORT) \
	  $(PY) -m pytest tests/px4 -n 2 -q -p no:randomly $(PYTEST_ARGS)

lint: $(STAMP)
	$(VENV)/bin/ruff check offboardd tests bench
	$(VENV)/bin/mypy

# The demo needs less than the tests: the package and matplotlib (the `demo` extra).
DEMO_STAMP := $(VENV)/.installed-demo
DEMO_ARGS ?=

# Flies the demo mission against the built-in sim through a private broker; writes
# demo-out/flight.png (e.g. `make demo DEMO_ARGS="--out /tmp/demo"`).
demo: $(DEMO_STAMP) mosquitto
	$(PY) -m offboardd demo $(DEMO_ARGS)

# The benchmark: offboardd at 20/50/100 Hz, MAVSDK and a pymavlink loop, side by side under
# the sim's px4 and heavy telemetry loads, three rounds in turn; writes
# bench/results.{md,json,png} in about ten minutes (a quick look: `make bench
# BENCH_ARGS="--rounds 1 --seconds 5 --only 20hz"`; see bench/README.md).
BENCH_STAMP := $(VENV)/.installed-bench
BENCH_ARGS ?=

bench: $(BENCH_STAMP) mosquitto
	$(PY) -m bench $(BENCH_ARGS)

# The soak run (issue 15): the daemon flown for SOAK_SECONDS through broker restarts, FC
# link drops, reboots, GCS takeovers and lease lapses, its RSS / fds / threads sampled;
# writes bench/soak-results.{md,json}. `make soak SOAK_SECONDS=3600` for the hour.
SOAK_SECONDS ?= 300
soak: $(STAMP) mosquitto
	$(PY) -m bench.soak --seconds $(SOAK_SECONDS)

# The onboard-motion figures (issue 16): tracking at 3 m/s, the streamed limits, planning
# time and the CPU a running motion costs at 50 Hz; writes bench/motion-results.{md,json}.
bench-motion: $(STAMP) mosquitto
	$(PY) -m bench.motion

# The flight recorder's cost (issue 17): the same 20 Hz workload under ~400 msg/s with
# recording off and on, alternating; writes bench/recorder-results.{md,json}.
bench-recorder: $(STAMP) mosquitto
	$(PY) -m bench.recorder

# What the geofence costs a stream tick, 4 to 256 polygon corners (pure, in-process);
# writes bench/fence-results.md.
bench-fence: $(STAMP)
	$(PY) -m bench.fence

# The stream plan on a 57,600-baud line (issue 18): bytes/s each way on the sim's pty, PX4's
# streams left alone against the plan; writes bench/slow-link-results.{md,json}.
bench-slow-link: $(STAMP)
	$(PY) -m bench.slow_link

# The daemon's slim MAVLink dialect, generated from pymavlink's definitions: after a
# pymavlink upgrade or a change of its message list (tests/mavlink/test_slim_dialect.py
# fails until this is run and the result committed).
dialect: $(STAMP)
	$(PY) -m offboardd.mavlink.slim_dialect_gen

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache demo-out
