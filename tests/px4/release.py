"""What each PX4 release does where the tier's expectations differ, as measured on it.

The tier runs against whatever build PX4_SITL names (v1.16.2, v1.17.0 and main were flown). Its
expectations come from PX4's behaviour, measured here, never from offboardd's own table
(`offboardd/core/px4_rules.py`), which is what the tier checks.
"""

from __future__ import annotations

import re

from offboardd.core.px4_rules import px4_version
from tests.px4.tee import AUTO_LOITER, AUTO_RTL, POSCTL
from tests.sim.client import Peer, d


def release_of(version: str) -> tuple[int, int]:
    """(major, minor) of a version as the daemon and `offboardd doctor` print it
    ("v1.16.2", "v1.19.0-dev")."""
    match = re.search(r"v(\d+)\.(\d+)", version)
    assert match, f"no PX4 version in {version!r}"
    return int(match.group(1)), int(match.group(2))


async def release_on_link(peer: Peer) -> tuple[int, int]:
    """(major, minor) from the AUTOPILOT_VERSION PX4 sends when asked."""
    peer.command(d.MAV_CMD_REQUEST_MESSAGE, d.MAVLINK_MSG_ID_AUTOPILOT_VERSION)
    msg = await peer.wait_for(lambda m: m.get_type() == "AUTOPILOT_VERSION", 3.0)
    major, minor, _, _ = px4_version(int(msg.flight_sw_version))
    return major, minor


def loss_fallback_without_rc(release: tuple[int, int], com_obl_rc_act: int) -> int:
    """The mode PX4 takes when offboard setpoints stop, with no RC, at default parameters.

    COM_OBL_RC_ACT = 0 (Position): v1.16.2 enters POSCTL and, with no sticks, descends
    (measured: "Matching flight task was not able to run", 5 m -> 3.0-3.2 m ~3 s later);
    from v1.17 (#26391) NAV_RCL_ACT's action instead, Return by default (main: AUTO.RTL).
    5 (Hold): AUTO.LOITER on all three."""
    if com_obl_rc_act == 5:
        return AUTO_LOITER
    assert com_obl_rc_act == 0, "the tier flies 0 and 5"
    return AUTO_RTL if release >= (1, 17) else POSCTL


def override_param(release: tuple[int, int]) -> str:
    """The parameter that lets stick movement take over: COM_RC_OVERRIDE until v1.18
    removed it (#27041) for MAN_OVERRIDE_SPD."""
    return "MAN_OVERRIDE_SPD" if release >= (1, 18) else "COM_RC_OVERRIDE"
