"""A PX4-faithful simulated vehicle (`offboardd sim`), for tests, demos and users.

It follows ../shared/px4-offboard.md: a pure model of PX4's commander rules
(`vehicle.py`, `commander.py`, `setpoints.py`, `flight.py`, `dynamics.py`) inside an
asyncio MAVLink server (`server.py`) laid out like PX4 SITL. It never imports
`offboardd.core`: it judges raw MAVLink fields itself so it can catch the daemon's mistakes.

It plays one PX4 release, `px4_version` "1.16" (v1.16.2, measured), "1.17", "1.18"
(the default; measured on PX4 main of August 2026 and release/1.18) or "main" (1.18 with
Descend named as its own mode). What differs is in
`px4_versions.py`: the offboard-loss action without RC (1.17+: NAV_RCL_ACT's, Return by
default, instead of Position), one DO_SET_MODE ACK instead of two (1.17+), CURRENT_MODE
on status changes capped by the requested interval (1.17+), COM_RC_OVERRIDE and
COM_RC_STICK_OV replaced by MAN_OVERRIDE_SPD, PARAM_ERROR for unknown parameters and the
old request commands (AUTOPILOT_CAPABILITIES, GET_HOME_POSITION...) UNSUPPORTED (1.18),
and AUTOPILOT_VERSION's flight_sw_version.

In-process API (tests):

    from offboardd.sim import SimConfig, SimServer

    cfg = SimConfig(udp_bind=("127.0.0.1", 0), udp_remote=None, gcs_bind=None)
    async with SimServer(cfg) as sim:
        port = sim.udp_port            # the companion link's bound UDP port
        sim.vehicle.mode_name          # "OFFBOARD", "AUTO.LOITER", "POSCTL"...
        sim.vehicle.intended_mode_name # PX4's user intention (CURRENT_MODE.intended)
        sim.vehicle.armed, sim.vehicle.landed, sim.vehicle.landed_state
        sim.vehicle.position_ned_m, sim.vehicle.velocity_ned_m_s, sim.vehicle.attitude_rad
        sim.vehicle.home.point         # PX4's home (lat/lon/alt, ned_m): moved at arming,
                                       # take-off, DO_SET_HOME (home.py); the local frame
                                       # stays about sim.vehicle.origin
        sim.vehicle.params.get("COM_OF_LOSS_T")
        sim.record                     # SimRecord: setpoints (time, verdict, reason),
                                       # commands, acks, mode_changes (time, cause),
                                       # statustexts, armed_changes, offboard_requests,
                                       # first_valid_setpoint_s, reboots
        sim.now()                      # the clock record times are in (loop.time())
        await sim.wait_until(lambda: sim.vehicle.armed, timeout_s=5)
        # faults
        sim.pilot_mode_switch("AUTO.LOITER")   # a GCS/pilot mode change: ends the intent
        sim.rc_takeover()                      # POSCTL if COM_RC_OVERRIDE & 2 (1.16,
                                               # 1.17) or MAN_OVERRIDE_SPD >= 0 (1.18)
        sim.set_estimator_valid(False)         # flips ESTIMATOR_STATUS's flags (101);
                                               # the positions go on, as PX4's
        sim.set_gnss(False)                    # a GNSS cut: the estimate goes after
                                               # EKF2_NOAID_TOUT (5 s); set_gnss(True)
        sim.pause_link(2.0)                    # or pause_link(2.0, "udp"); drop_link();
        sim.restore_link()
        sim.set_packet_loss(0.2)               # lose 20 % of frames each way
        sim.reboot()                           # gap, then disarmed, boot time from 0

Wiring a daemon to it: either give the sim the daemon's port (`udp_remote=("127.0.0.1",
daemon_port)`, the daemon listening with udpin, as with PX4 SITL) or point the daemon at
`sim.udp_port` (udpout); with `udp_remote=None` the sim stays silent until a peer speaks.

`SimConfig` fields: system_id/component_id (1/1), udp_bind/udp_remote (companion link,
default 127.0.0.1:14580 -> :14540), gcs_bind/gcs_remote (:18570 -> :14550; None
disables), tcp_port, pty/pty_symlink (read `sim.pty_path`), profile "px4" | "light" |
"heavy", px4_version ("1.18"), double_ack (None = as the release does; True = v1.16.2's
two DO_SET_MODE ACKs, False = one), params (initial overrides, names as the release has
them), home_lat_deg/home_lon_deg/home_alt_m (where it boots: the local origin and the
first home), boot_mode ("AUTO.LOITER"), boot_ready_s (3.0: PX4 SIH's boot timeline, UNINIT
and arming refused that long, the estimate valid after 2/3 of it; 0: ready at once), faults
(scheduled FaultSpec, see faults.py), tick_hz, reboot_gap_s, signing_key (32 bytes: sign
everything, like PX4 v1.17 with a key) and require_signing (refuse unsigned and wrongly
signed frames; counted in `sim.link(name).codec.stats`), see signing.py.
"""

from offboardd.sim.config import FaultSpec, SimConfig
from offboardd.sim.record import SimRecord
from offboardd.sim.server import SimServer

__all__ = ["FaultSpec", "SimConfig", "SimRecord", "SimServer"]
