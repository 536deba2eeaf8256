"""The GNSS receiver, and what PX4's estimator makes of losing it.

[SITL main 2026-11-29] GPS cut in flight (MAV_CMD_INJECT_FAILURE, GPS off), hovering in
OFFBOARD, two runs: GPS_RAW_INT said "no fix" from its next message (fix_type 0, lat/lon
0, 255 satellites); EKF2 dead-reckoned on and gave up its horizontal estimate when
EKF2_NOAID_TOUT (5 s) ran out: ESTIMATOR_STATUS 895 -> 869 at 5.2-5.3 s (101 two seconds
on), and at the same instant the position controller's "blind land" and PX4's Descend.
LOCAL_POSITION_NED went on throughout (telemetry.py). GPS back 6.5 s after the cut: a fix
in the next GPS_RAW_INT, the estimate back 0.3-1.3 s later (895; four runs; after a cut of
8 s, ~2 s: two runs, the daemon's view 2.3 s; not played), and ~1.1 s
after that PX4 left Descend for its offboard-loss action (Return, without RC), the stream
being long gone: PX4's commander counts an estimate back only after 1 s of probation
(commander.py's POSITION_PROBATION_S).
The sim's estimate is the truth throughout: PX4's dead reckoning drifts (~2 m in 9 s).
"""

from __future__ import annotations

from dataclasses import dataclass

# From the fix back to the horizontal estimate again (PX4: 0.3-1.3 s).
REACQUIRE_S = 0.8


@dataclass
class Gnss:
    lost_at_s: float | None = None  # the cut, while it lasts
    back_at_s: float | None = None  # the fix again, until the estimate follows
    took_estimate: bool = False  # the cut outlasted EKF2_NOAID_TOUT: the estimate went with it
    _last_cut_s: float = 0.0  # when the cut that ended last began

    @property
    def has_fix(self) -> bool:
        return self.lost_at_s is None

    def cut(self, now_s: float) -> None:
        if self.lost_at_s is not None:
            return
        # cut again before the aiding resumed: the dead reckoning never stopped (review)
        resumed = self.back_at_s is None or self.took_estimate
        self.lost_at_s = now_s if resumed else self._last_cut_s
        self.back_at_s = None

    def restore(self, now_s: float) -> None:
        if self.lost_at_s is not None:
            self._last_cut_s = self.lost_at_s
            self.lost_at_s, self.back_at_s = None, now_s

    def rebooted(self, now_s: float) -> None:
        """The FC booted again: with the receiver still cut its estimator starts without a
        horizontal position (no dead reckoning to count down); with it, as fresh."""
        cut = self.lost_at_s is not None
        self.lost_at_s = now_s if cut else None
        self.back_at_s, self.took_estimate = None, cut

    def estimate_change(self, now_s: float, noaid_timeout_s: float) -> bool | None:
        """False when the dead reckoning runs out, True when the estimate comes back after
        a fix again; None when the estimate is not the GNSS's business now."""
        if (self.lost_at_s is not None and not self.took_estimate
                and now_s - self.lost_at_s >= noaid_timeout_s):
            self.took_estimate = True
            return False
        if self.back_at_s is not None and now_s - self.back_at_s >= REACQUIRE_S:
            self.back_at_s = None
            if self.took_estimate:
                self.took_estimate = False
                return True
        return None
