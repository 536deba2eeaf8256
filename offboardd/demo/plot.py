"""The demo's picture: the flown path against the commanded one, as a PNG.

Left, the top view (east right, north up, equal scale): planned (the commanded setpoints,
and for path / orbit legs the daemon's own plan) against flown; right, altitude over time
with each leg's start marked, and below it the speed: the daemon's planned profile of the
path and orbit legs against the flown speed (from the position telemetry). matplotlib
is imported here only (the `demo` extra), with the Agg backend, so it needs no display.
It reads a Summary and writes one file.
"""

from __future__ import annotations

from pathlib import Path

from offboardd.scenario.report import PathSample, Summary

INSTALL_HINT = "the demo's plot needs matplotlib: run `make demo` or pip install 'offboardd[demo]'"


def plotting_available() -> bool:
    try:
        import matplotlib  # noqa: F401, PLC0415
    except ImportError:
        return False
    return True


def _columns(samples: tuple[PathSample, ...]) -> tuple[list[float], list[float],
                                                         list[float], list[float]]:
    return ([s.t_s for s in samples], [s.north_m for s in samples],
            [s.east_m for s in samples], [s.altitude_m for s in samples])


def _speeds(samples: tuple[PathSample, ...]) -> tuple[list[float], list[float]]:
    """Speed from consecutive position samples at least 0.15 s apart (telemetry jitter)."""
    times: list[float] = []
    speeds: list[float] = []
    last: PathSample | None = None
    for s in samples:
        if last is not None and s.t_s - last.t_s >= 0.15:
            step = ((s.north_m - last.north_m) ** 2 + (s.east_m - last.east_m) ** 2
                    + (s.down_m - last.down_m) ** 2) ** 0.5
            times.append((s.t_s + last.t_s) / 2)
            speeds.append(step / (s.t_s - last.t_s))
            last = s
        elif last is None:
            last = s
    return times, speeds


def _leg_labels(summary: Summary) -> list[tuple[float, str]]:
    """Leg start times and names; legs that start within 3 % of the flight of the one
    before share its label (a release is over in a tenth of a second)."""
    labels: list[tuple[float, str]] = []
    for leg in summary.legs:
        if labels and leg.start_s - labels[-1][0] < 0.03 * max(summary.total_s, 1.0):
            labels[-1] = (labels[-1][0], f"{labels[-1][1]}, {leg.name}")
        else:
            labels.append((leg.start_s, leg.name))
    return labels


def write_flight_png(summary: Summary, path: Path) -> Path:
    import matplotlib  # noqa: PLC0415 (optional dependency, see the module docstring)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    c_t, c_north, c_east, c_alt = _columns(summary.commanded)
    f_t, f_north, f_east, f_alt = _columns(summary.flown)
    fig = plt.figure(figsize=(13, 7), dpi=100)
    grid = fig.add_gridspec(2, 2, width_ratios=[1, 1.4])
    top, side = fig.add_subplot(grid[:, 0]), fig.add_subplot(grid[0, 1])
    speed = fig.add_subplot(grid[1, 1], sharex=side)
    worst = summary.max_tracking_error_m
    verdict = "completed" if summary.ok else f"FAILED: {summary.failure}"
    fig.suptitle(f"offboardd demo: mission {summary.mission!r} {verdict} in "
                 f"{summary.total_s:.1f} s"
                 + ("" if worst is None else f", max tracking error {worst:.2f} m"))

    top.plot(c_east, c_north, "--", color="tab:orange", lw=2, label="planned / commanded")
    top.plot(f_east, f_north, "-", color="tab:blue", lw=1.5, label="flown")
    if f_east:
        top.plot(f_east[0], f_north[0], "o", color="tab:green", label="start")
        top.plot(f_east[-1], f_north[-1], "s", color="tab:red", label="end")
    top.set_xlabel("east (m)")
    top.set_ylabel("north (m)")
    top.set_title("top view (local NED)")
    top.set_aspect("equal", adjustable="datalim")
    top.grid(True, alpha=0.3)
    top.legend(loc="best", fontsize="small")

    side.step(c_t, c_alt, "--", where="post", color="tab:orange", lw=2, label="commanded")
    side.plot(f_t, f_alt, "-", color="tab:blue", lw=1.5, label="flown")
    for start_s, label in _leg_labels(summary):
        side.axvline(start_s, color="grey", lw=0.6, alpha=0.6)
        side.annotate(label, (start_s, 1.0), xycoords=("data", "axes fraction"),
                      rotation=90, va="top", ha="right", fontsize="x-small", color="dimgrey")
    side.set_xlabel("time since the mission started (s)")
    side.set_ylabel("altitude above the EKF origin (m)")
    side.set_title("altitude")
    side.grid(True, alpha=0.3)
    side.legend(loc="lower center", fontsize="small")

    if summary.planned_speed:
        p_t, p_v = zip(*summary.planned_speed, strict=True)
        speed.plot(p_t, p_v, "--", color="tab:orange", lw=2, label="planned (path, orbit)")
    s_t, s_v = _speeds(summary.flown)
    speed.plot(s_t, s_v, "-", color="tab:blue", lw=1.2, label="flown")
    speed.set_xlabel("time since the mission started (s)")
    speed.set_ylabel("speed (m/s)")
    speed.set_title("speed")
    speed.grid(True, alpha=0.3)
    speed.legend(loc="upper right", fontsize="small")

    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return path
