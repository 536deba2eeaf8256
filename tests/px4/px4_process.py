"""A real PX4 SIH SITL process for the real-PX4 tier: start, wait until it can fly, stop.

`PX4_SITL` names a PX4 build directory laid out as PX4 builds it (`bin/px4` beside the
`px4-<module>` links, `etc/`): `build/px4_sitl_default` of a PX4 checkout, or the prebuilt
`../shared/px4-sitl/build`. Instance N sends its onboard (API) MAVLink link from UDP 14580+N
to 127.0.0.1:14540+N and is MAVLink system N+1 (PX4's px4-rc.mavlink). A fresh working
directory is a freshly booted vehicle with default parameters.

PX4's startup script runs each module through a `px4-<module>` link beside the binary;
a copy of a build that lost its links (they arrive as small text files) gets a private
bin directory with the binary and real links, made once per test session.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

READY_LINE = "Ready for takeoff!"
BOOT_TIMEOUT_S = 40.0


class Px4BuildError(RuntimeError):
    """PX4_SITL does not name a usable PX4 SITL build."""


def check_build(build_dir: Path) -> None:
    if not (build_dir / "bin" / "px4").is_file():
        raise Px4BuildError(f"{build_dir}/bin/px4 not found: PX4_SITL must name a PX4 SITL "
                            "build directory (e.g. PX4-Autopilot/build/px4_sitl_default)")
    if not (build_dir / "etc" / "init.d-posix" / "rcS").is_file():
        raise Px4BuildError(f"{build_dir}/etc/init.d-posix/rcS not found: not a SITL build")


def runnable_bin_dir(build_dir: Path, scratch: Path) -> Path:
    """The build's bin/ if its module links work, else a private copy with real links."""
    bin_dir = build_dir / "bin"
    probe = bin_dir / "px4-param"
    if probe.is_symlink() or (probe.exists() and os.access(probe, os.X_OK)):
        return bin_dir
    links = build_dir / "bin-links.txt"
    names = (links.read_text().split() if links.exists()
             else [p.name for p in bin_dir.iterdir() if p.name.startswith("px4-")])
    private = scratch / "px4-bin"
    private.mkdir(parents=True, exist_ok=True)
    shutil.copy2(bin_dir / "px4", private / "px4")
    for script in bin_dir.glob("*.sh"):  # px4-alias.sh, sourced by the startup script
        shutil.copy2(script, private / script.name)
    for name in names:
        if not name.endswith(".sh") and not (private / name).exists():
            (private / name).symlink_to("px4")
    return private


@dataclass
class Px4Sitl:
    """One PX4 SIH instance: `start()`, `wait_ready()`, `param_set()`, `stop()`."""

    build_dir: Path
    bin_dir: Path
    instance: int
    workdir: Path = field(default_factory=lambda: Path(tempfile.mkdtemp(prefix="px4-sih-")))
    process: subprocess.Popen[bytes] | None = None
    boots: int = 0

    @property
    def system_id(self) -> int:
        return self.instance + 1

    @property
    def companion_port(self) -> int:  # where PX4 sends its onboard link
        return 14540 + self.instance

    @property
    def px4_port(self) -> int:  # where PX4 listens for the onboard link
        return 14580 + self.instance

    @property
    def gcs_port(self) -> int:  # where PX4 listens for its GCS link
        return 18570 + self.instance

    @property
    def log_path(self) -> Path:
        return self.workdir / f"px4-{self.boots}.log"

    def start(self) -> None:
        """Boot PX4 in `workdir` (parameters kept there survive a restart)."""
        assert self.process is None or self.process.poll() is not None, "already running"
        self.boots += 1
        env = {**os.environ, "PX4_SIM_MODEL": "sihsim_quadx", "PX4_SIMULATOR": "sihsim"}
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [str(self.bin_dir / "px4"), "-i", str(self.instance),
                 "-d", str(self.build_dir / "etc")],
                cwd=self.workdir, env=env, stdin=subprocess.DEVNULL, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True,
            )

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout_s: float = BOOT_TIMEOUT_S) -> float:
        """Block until PX4 says it can take off (the estimator converged); boot time in s."""
        t0 = time.monotonic()
        while READY_LINE not in self.log_text():
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"PX4 exited with {self.process.returncode}:\n"
                                   f"{self.log_text()[-3000:]}")
            if time.monotonic() - t0 > timeout_s:
                raise RuntimeError(f"PX4 not ready within {timeout_s} s:\n"
                                   f"{self.log_text()[-3000:]}")
            time.sleep(0.1)
        return time.monotonic() - t0

    def shell(self, *args: str) -> str:
        """Run a PX4 shell command on this instance (e.g. `param set NAV_RCL_ACT 5`)."""
        module, *rest = args
        out = subprocess.run(
            [str(self.bin_dir / f"px4-{module}"), "--instance", str(self.instance), *rest],
            cwd=self.workdir, capture_output=True, timeout=15, check=False,
        )
        return (out.stdout + out.stderr).decode(errors="replace")

    def param_set(self, name: str, value: int | float) -> None:
        out = self.shell("param", "set", name, str(value))
        if "not found" in out.lower() or "error" in out.lower():
            raise RuntimeError(f"PX4 refused param set {name} {value}: {out}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        if self.process is None or self.process.poll() is not None:
            return
        os.killpg(self.process.pid, sig)
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.workdir, ignore_errors=True)
