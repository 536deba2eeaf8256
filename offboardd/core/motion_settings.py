"""MotionSettings: the `[motion]` section, for the motions the daemon plans (issue 16).

Speed and acceleration limits are the envelope's (a motion never goes faster, accelerates
harder or tilts further than [envelope] allows); this section adds what only a planned
motion has: its jerk limit and what a lease lapse does to it.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from offboardd.core.envelope_limits import horizontal_acceleration_limit
from offboardd.core.envelope_settings import EnvelopeSettings
from offboardd.core.motion_profile import Limits
from offboardd.core.settings_checks import check_ranges, coerce_choice
from offboardd.errors import ConfigError


class OnLeaseLapse(StrEnum):
    HOLD = "hold"  # stop the motion jerk-limited, then the usual hold and loss action
    FINISH = "finish"  # an accepted motion finishes first (at most max_unleased_s)


@dataclass(frozen=True)
class MotionSettings:
    # PX4's own smooth auto modes use MPC_JERK_AUTO = 4 m/s^3 by default.
    max_jerk_m_s3: float = 4.0
    on_lease_lapse: OnLeaseLapse = OnLeaseLapse.HOLD
    max_unleased_s: float = 30.0
    # The planned point leads the vehicle by about this at most: its clock slows from half
    # of it and waits at it (take-off, PX4's own limits, wind: motion_clock); a motion is
    # done with the vehicle within half of it of its end. 0: timed alone, as planned.
    max_lead_m: float = 2.0

    def __post_init__(self) -> None:
        coerce_choice(self, "on_lease_lapse", OnLeaseLapse)
        check_ranges(self, ("max_jerk_m_s3", 0.5, 100.0), ("max_unleased_s", 0.0, 600.0),
                     ("max_lead_m", 0.0, 50.0))
        if 0.0 < self.max_lead_m < 1.0:  # PX4 tracks a motion within ~0.3 m, estimates lag
            raise ConfigError(f"max_lead_m must be 0 (off) or at least 1, got {self.max_lead_m}")

    def limits(self, envelope: EnvelopeSettings, speed_m_s: float) -> Limits:
        """A motion's limits at `speed_m_s`: the envelope's, with the tilt limit turned
        into the horizontal acceleration it allows."""
        return Limits(
            speed_m_s=speed_m_s,
            max_horizontal_m_s=envelope.max_horizontal_speed_m_s,
            max_up_m_s=envelope.max_up_speed_m_s,
            max_down_m_s=envelope.max_down_speed_m_s,
            max_accel_m_s2=min(envelope.max_acceleration_m_s2,
                               horizontal_acceleration_limit(envelope)),
            max_jerk_m_s3=self.max_jerk_m_s3,
        )
