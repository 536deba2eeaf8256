"""`offboardd log plot`: one PNG of a recorded flight.

Left, the top view (east right, north up, equal scale): flown against commanded. Right,
altitude and speed over time, flown against commanded, with the daemon's phases shaded
and failsafes marked. matplotlib (the `demo` extra) is imported here only, with the Agg
backend, so it needs no display.
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from offboardd.recorder.store import Flight
from offboardd.recorder.tracks import Tracks, load_tracks

INSTALL_HINT = "`log plot` needs matplotlib: pip install 'offboardd[demo]'"
# the daemon's phases, shaded; idle and the ends of control are left white
_PHASE_COLOURS = {"warmup": "#fff3bf", "engaging": "#ffe8cc", "arming": "#ffd8a8",
                  "active": "#d3f9d8", "holding": "#d0ebff", "releasing": "#e5dbff",
                  "failsafe": "#ffc9c9", "preempted": "#f1f3f5"}


def write_flight_plot(flight: Flight, path: Path) -> Path:
    import matplotlib  # noqa: PLC0415 (optional dependency)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    tracks = load_tracks(flight)
    fig = plt.figure(figsize=(13, 7), constrained_layout=True)
    grid = fig.add_gridspec(2, 2, width_ratios=(1, 1.3))
    top = fig.add_subplot(grid[:, 0])
    altitude = fig.add_subplot(grid[0, 1])
    speed = fig.add_subplot(grid[1, 1], sharex=altitude)
    t0 = tracks.start_t
    flown_t = [f.t - t0 for f in tracks.flown]
    cmd_t = [c.t - t0 for c in tracks.commanded]

    top.plot([c.east_m for c in tracks.commanded], [c.north_m for c in tracks.commanded],
             ".", ms=2, color="tab:orange", label="commanded")
    top.plot([f.east_m for f in tracks.flown], [f.north_m for f in tracks.flown],
             color="tab:blue", lw=1.2, label="flown")
    top.set(xlabel="east (m)", ylabel="north (m)", title="top view")
    top.set_aspect("equal", adjustable="datalim")
    top.legend(loc="best")

    altitude.plot(cmd_t, [-c.down_m for c in tracks.commanded], ".", ms=2,
                  color="tab:orange", label="commanded")
    altitude.plot(flown_t, [-f.down_m for f in tracks.flown], color="tab:blue", label="flown")
    altitude.set(ylabel="altitude above origin (m)")
    speed.plot(cmd_t, [c.speed_m_s for c in tracks.commanded], ".", ms=2,
               color="tab:orange", label="commanded velocity")
    speed.plot(flown_t, [f.speed_m_s for f in tracks.flown], color="tab:blue", label="flown")
    speed.set(xlabel="time since the flight's start (s)", ylabel="speed (m/s)")
    for axes in (altitude, speed):
        _shade_phases(axes, tracks)
        for t, _ in tracks.failsafes:
            axes.axvline(t - t0, color="tab:red", lw=1.5, ls="--")
        axes.grid(alpha=0.3)
    altitude.legend(handles=_legend(altitude, tracks), loc="best", fontsize="small")
    s = flight.summary
    fig.suptitle(f"{flight.name}: {s.duration_s:.0f} s, max {s.max_altitude_m:.1f} m, "
                 f"{s.max_speed_m_s:.1f} m/s, {s.failsafes} failsafe(s)")
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _shade_phases(axes: Any, tracks: Tracks) -> None:
    end = tracks.flown[-1].t if tracks.flown else (tracks.phases[-1][0] if tracks.phases else 0)
    bounds = [*tracks.phases, (end, "")]
    for (t, phase), (t_next, _) in itertools.pairwise(bounds):
        colour = _PHASE_COLOURS.get(phase)
        if colour is not None and t_next > t:
            axes.axvspan(t - tracks.start_t, t_next - tracks.start_t, color=colour, lw=0)


def _legend(axes: Any, tracks: Tracks) -> list[Any]:
    from matplotlib.lines import Line2D  # noqa: PLC0415
    from matplotlib.patches import Patch  # noqa: PLC0415

    handles, _ = axes.get_legend_handles_labels()
    seen = [p for p in dict.fromkeys(phase for _, phase in tracks.phases) if p in _PHASE_COLOURS]
    handles += [Patch(color=_PHASE_COLOURS[p], label=p) for p in seen]
    if tracks.failsafes:
        handles.append(Line2D([], [], color="tab:red", ls="--", label="failsafe"))
    return list(handles)
