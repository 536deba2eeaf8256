"""Judge an `FcProbe`: one check line each for the FC itself, its PX4 version and the
parameters offboard depends on (px4-offboard.md §1, §3). Pure.

The rules are the daemon's own: the stream-period margin is `core.fc_link.LOSS_TIMEOUT_MARGIN`,
the parameters judged are the ones the PX4 release has (`core.px4_rules`), and the warnings
about COM_OBL_RC_ACT / NAV_RCL_ACT / COM_RC_OVERRIDE / MAN_OVERRIDE_SPD / COM_RCL_EXCEPT are
the texts `FcChecks` produces, so the doctor and the running daemon never disagree.
"""

from __future__ import annotations

from offboardd.core.fc_link import LOSS_TIMEOUT_MARGIN, PX4_LIMIT_PARAMS, REQUIRED_PARAMS
from offboardd.core.px4_rules import MIN_SUPPORTED, format_version, px4_version, rules_for
from offboardd.doctor.fc_probe import FcProbe
from offboardd.doctor.report import Check, fail, note, ok, warn
from offboardd.mavlink.codec import dialect

MIN_PX4_VERSION = MIN_SUPPORTED  # offboardd relies on v1.14+ behaviour (px4-offboard.md)
# COM_OBL_RC_ACT values that keep a multicopter safe without RC (§3): Hold, Land.
_SAFE_LOSS_ACTIONS = "COM_OBL_RC_ACT = 5 (Hold) or 4 (Land)"


def fc_verdicts(probe: FcProbe, setpoint_rate_hz: float) -> list[Check]:
    found = _identity(probe)
    if found.status.value == "FAIL":
        return [found]
    return [found, _version(probe), *_params(probe, setpoint_rate_hz), *_limits(probe)]


def _limits(probe: FcProbe) -> list[Check]:
    """PX4's own flight limits looser than the envelope's (FcChecks' texts), if read."""
    return [warn("envelope", text, "PX4 flies steps and its Return to its own limits, not "
                 "the envelope's (docs/safety-envelope.md)")
            for text in probe.param_warnings if text.split("=")[0] in PX4_LIMIT_PARAMS]


def _identity(probe: FcProbe) -> Check:
    hb = probe.heartbeat
    where = str(probe.url)
    if hb is not None:
        return ok("flight controller", f"PX4 (sysid {hb.source_system}, compid "
                  f"{hb.source_component}, {_enum('MAV_TYPE', hb.mav_type)}) on {where}")
    if probe.other_autopilots:
        names = ", ".join(_enum("MAV_AUTOPILOT", a) for a in probe.other_autopilots)
        return fail("flight controller", f"heard {names} on {where}, not PX4",
                    "offboardd speaks PX4's offboard protocol only")
    waited = f"in {probe.timeout_s:g} s"
    if "in use" in probe.link_detail or "device busy" in probe.link_detail:  # UDP, serial
        return fail("flight controller", f"{probe.link_detail}",
                    "another process owns it (offboardd itself? systemctl stop offboardd "
                    "while the doctor runs)")
    if probe.bytes_in == 0:
        return fail("flight controller", f"nothing received on {where} {waited} "
                    f"({probe.link_detail})", _silent_fix(probe))
    if probe.frames_ok == 0:
        return fail("flight controller", f"{probe.bytes_in} bytes but no MAVLink on {where} "
                    f"{waited}", "wrong baud rate (mavlink.url vs PX4's SER_TEL2_BAUD), or "
                    "the port carries something else (a console, a GPS)")
    return fail("flight controller", f"MAVLink on {where} but no PX4 HEARTBEAT {waited}",
                "check mavlink.fc_system_id and that the autopilot, not only a GCS or "
                "camera, is on this link")


def _silent_fix(probe: FcProbe) -> str:
    if probe.url.is_serial:
        return ("check wiring (FC TX -> companion RX and back, common GND) and that PX4 runs "
                "MAVLink on that port: MAV_1_CONFIG = TELEM 2, MAV_1_MODE = Onboard, "
                "SER_TEL2_BAUD = the baud in mavlink.url")
    return ("PX4 (or mavlink-router) must send to this address: PX4 SITL sends to udp 14540; "
            "a mavlink-router endpoint needs Mode = Normal and this port")


def _version(probe: FcProbe) -> Check:
    if probe.version is None:
        return warn("PX4 version", "no answer to the AUTOPILOT_VERSION request",
                    f"offboardd needs PX4 >= v{MIN_PX4_VERSION[0]}.{MIN_PX4_VERSION[1]}")
    raw = probe.version.flight_sw_version
    major, minor, patch, _ = px4_version(raw)
    text = format_version(raw)
    if (major, minor, patch) == (0, 0, 0):
        return warn("PX4 version", "PX4 reports v0.0.0 (a build without a release tag?)",
                    "check it is v1.14 or later")
    if (major, minor) < MIN_PX4_VERSION:
        return fail("PX4 version", f"PX4 {text} is older than v1.14",
                    "update PX4 (QGroundControl > Vehicle Setup > Firmware)")
    rules = rules_for(major, minor)
    if probe.version_warnings:
        return warn("PX4 version", f"PX4 {text}; " + "; ".join(probe.version_warnings))
    return ok("PX4 version", f"PX4 {text} ({rules.label}: " + "; ".join(rules.notes()) + ")")


def _params(probe: FcProbe, setpoint_rate_hz: float) -> list[Check]:
    params = probe.params
    judged = probe.wanted or REQUIRED_PARAMS
    surprise = {name: text for text in probe.param_warnings
                for name in judged if text.startswith(name)}
    checks = []
    for name in judged:
        if name not in params:
            missing = ("could not be read (no PARAM_VALUE answer): offboardd will refuse to "
                       "engage" if name in REQUIRED_PARAMS else "could not be read")
            make = fail if name in REQUIRED_PARAMS else warn
            checks.append(make(name, missing, "the link must carry our bytes to the FC too "
                               "(serial TX wire, the UDP reply path)"))
            continue
        value = params[name]
        if name == "MAV_FWDEXTSP":
            checks.append(ok(name, "1: PX4 takes setpoints from this link") if int(value) == 1
                          else fail(name, f"{int(value)}: PX4 ignores every setpoint "
                                    "from this link", "set MAV_FWDEXTSP = 1"))
        elif name == "COM_OF_LOSS_T":
            checks.append(_loss_timeout(float(value), setpoint_rate_hz))
        elif name == "COM_OBL_RC_ACT":
            what = probe.loss_action or str(int(value))
            checks.append(warn(name, surprise[name], f"set {_SAFE_LOSS_ACTIONS}")
                          if name in surprise else
                          ok(name, f"{int(value)}: on offboard loss PX4 goes to {what}"))
        else:
            checks.append(note(name, surprise[name]) if name in surprise
                          else ok(name, str(int(value))))
    return checks


def _loss_timeout(loss_t_s: float, setpoint_rate_hz: float) -> Check:
    period_s = 1.0 / setpoint_rate_hz
    limit_s = loss_t_s / LOSS_TIMEOUT_MARGIN
    rule = (f"stream period {period_s:.3f} s vs COM_OF_LOSS_T/{LOSS_TIMEOUT_MARGIN:g} = "
            f"{limit_s:.3f} s")
    if period_s > limit_s:
        need_hz = LOSS_TIMEOUT_MARGIN / loss_t_s
        return fail("COM_OF_LOSS_T", f"{loss_t_s:g} s: {rule}: too slow, offboardd will refuse "
                    "to engage", f"engine.setpoint_rate_hz >= {need_hz:g}, or raise COM_OF_LOSS_T")
    return ok("COM_OF_LOSS_T", f"{loss_t_s:g} s; {rule}")


def _enum(enum_name: str, value: int) -> str:
    entry = dialect.enums.get(enum_name, {}).get(value)
    if entry is None:
        return f"{enum_name} {value}"
    return str(entry.name).removeprefix(enum_name + "_").replace("_", " ").lower()
