"""Fixtures of the real-PX4 tier (`make test-px4 PX4_SITL=<build dir>`).

Never part of `make test`: the root conftest leaves this folder out unless
OFFBOARDD_PX4_TIER=1 (the Makefile's test-px4 target sets it). Here PX4_SITL must name a
PX4 SITL build, or the run stops with an error: the tier never skips.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.px4.px4_process import Px4BuildError, Px4Sitl, check_build, runnable_bin_dir


def _build_dir() -> Path:
    value = os.environ.get("PX4_SITL", "")
    if not value:
        raise pytest.UsageError("the real-PX4 tier needs PX4_SITL=<PX4 SITL build directory>, "
                                "e.g. make test-px4 PX4_SITL=../shared/px4-sitl/build")
    build = Path(value).resolve()
    try:
        check_build(build)
    except Px4BuildError as exc:
        raise pytest.UsageError(str(exc)) from None
    return build


def pytest_configure(config: pytest.Config) -> None:
    _build_dir()  # fail the whole run at once, before any test, if PX4 is missing


@pytest.fixture(scope="session")
def px4_bin(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    build = _build_dir()
    return build, runnable_bin_dir(build, tmp_path_factory.mktemp("px4"))


def px4_instance() -> int:
    """Instance 1 + the xdist worker's index: never 0, which a developer's own SITL uses."""
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    return 1 + int(worker.removeprefix("gw") or 0)


@pytest.fixture
def px4(px4_bin: tuple[Path, Path]) -> Iterator[Px4Sitl]:
    """A freshly booted PX4 SIH (default parameters), ready for takeoff."""
    build, bin_dir = px4_bin
    sitl = Px4Sitl(build, bin_dir, px4_instance())
    sitl.start()
    try:
        sitl.wait_ready()
        yield sitl
    finally:
        sitl.cleanup()


REPORT_ENV = "OFFBOARDD_PX4_REPORT"


@pytest.fixture
def measured(request: pytest.FixtureRequest) -> Iterator[dict[str, object]]:
    """Figures a scenario measured on real PX4, appended (one JSON line per test) to the
    file named by OFFBOARDD_PX4_REPORT and printed at the end of the run."""
    figures: dict[str, object] = {}
    yield figures
    path = os.environ.get(REPORT_ENV)
    if path and figures:
        with open(path, "a") as out:
            out.write(json.dumps({"test": request.node.name, **figures}) + "\n")


def pytest_terminal_summary(terminalreporter: Any) -> None:
    path = os.environ.get(REPORT_ENV)
    if not path or not Path(path).exists():
        return
    terminalreporter.section("measured on real PX4")
    for line in Path(path).read_text().splitlines():
        row = json.loads(line)
        name = row.pop("test")
        terminalreporter.write_line(f"{name}: " + ", ".join(f"{k}={v}" for k, v in row.items()))
