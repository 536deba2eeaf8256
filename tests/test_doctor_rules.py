"""The doctor's judgements as pure functions: permissions, /proc parsing, FC verdicts,
the host clock."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from offboardd.core.events import FcAutopilotVersion, FcHeartbeat
from offboardd.core.fc_link import FcChecks
from offboardd.core.px4_rules import format_version
from offboardd.doctor import clock as doctor_clock
from offboardd.doctor.clock import clock_checks
from offboardd.doctor.device import drivers_for_major, may_access
from offboardd.doctor.fc_probe import FcProbe
from offboardd.doctor.fc_verdicts import fc_verdicts
from offboardd.doctor.holders import Holder, console_devices, find_holders, holder_fix
from offboardd.doctor.report import Check, Status, exit_code, fail, ok, summary, warn
from offboardd.mavlink.links import parse_link_url
from offboardd.recorder.clocksync import ClockSync
from offboardd.recorder.settings import RecorderSettings, RecordMode

PX4_HB = FcHeartbeat(12, 2, 0, 0, 3, source_system=1, source_component=1)
V1_16_2 = (1 << 24) | (16 << 16) | (2 << 8) | 255
GOOD_PARAMS: dict[str, int | float] = {
    "COM_OF_LOSS_T": 1.0, "COM_OBL_RC_ACT": 5, "MAV_FWDEXTSP": 1, "COM_RC_OVERRIDE": 3,
    "COM_RCL_EXCEPT": 0,
}


def probe(url: str = "udpin://0.0.0.0:14540", *, heartbeat: FcHeartbeat | None = PX4_HB,
          version: int | None = V1_16_2, params: dict[str, int | float] | None = None,
          bytes_in: int = 1000, frames_ok: int = 10, others: tuple[int, ...] = ()) -> FcProbe:
    params = dict(GOOD_PARAMS if params is None else params)
    checks = FcChecks(1.0, 1, 1.0)  # the daemon's own surprise texts
    checks.start(0.0)
    fc_version = None if version is None else FcAutopilotVersion(version, 0xFFFF)
    warnings = [] if fc_version is None else checks.on_version(fc_version)
    warnings += [w for name, value in params.items() for w in checks.on_param(name, value)]
    return FcProbe(
        url=parse_link_url(url), timeout_s=5.0, link_detail="opened", bytes_in=bytes_in,
        frames_ok=frames_ok, garbage_bytes=0, heartbeat=heartbeat, other_autopilots=others,
        version=fc_version, params=params, param_warnings=tuple(warnings),
        wanted=checks.wanted(), loss_action=checks.loss_action_name(),
    )


def verdicts(p: FcProbe, rate_hz: float = 20.0) -> dict[str, tuple[Status, str, str]]:
    return {c.name: (c.status, c.detail, c.fix) for c in fc_verdicts(p, rate_hz)}


def test_good_fc_is_all_ok() -> None:
    assert {s for s, _, _ in verdicts(probe()).values()} == {Status.OK}


def test_version_rules() -> None:
    assert format_version(V1_16_2) == "v1.16.2"
    assert format_version((1 << 24) | (15 << 16) | (0 << 8) | 192) == "v1.15.0-rc"
    old = verdicts(probe(version=(1 << 24) | (13 << 16) | (3 << 8) | 255))["PX4 version"]
    assert old[0] is Status.FAIL and "v1.13.3 is older than v1.14" in old[1]
    assert verdicts(probe(version=None))["PX4 version"][0] is Status.WARN
    assert verdicts(probe(version=0))["PX4 version"][0] is Status.WARN


def test_parameter_rules() -> None:
    off = verdicts(probe(params={**GOOD_PARAMS, "MAV_FWDEXTSP": 0}))["MAV_FWDEXTSP"]
    assert off[0] is Status.FAIL and off[2] == "set MAV_FWDEXTSP = 1"
    # 5 Hz = 0.2 s period; COM_OF_LOSS_T 0.5 s / 4 = 0.125 s: too slow
    slow = verdicts(probe(params={**GOOD_PARAMS, "COM_OF_LOSS_T": 0.5}), rate_hz=5.0)
    assert slow["COM_OF_LOSS_T"][0] is Status.FAIL and "setpoint_rate_hz >= 8" in \
        slow["COM_OF_LOSS_T"][2]
    default = verdicts(probe(params={**GOOD_PARAMS, "COM_OBL_RC_ACT": 0,
                                     "COM_RC_OVERRIDE": 1, "COM_RCL_EXCEPT": 4}))
    assert default["COM_OBL_RC_ACT"][0] is Status.WARN and "descends" in default[
        "COM_OBL_RC_ACT"][1]
    assert default["COM_RC_OVERRIDE"][0] is Status.NOTE
    assert default["COM_RCL_EXCEPT"][0] is Status.NOTE
    missing = verdicts(probe(params={"COM_OF_LOSS_T": 1.0, "COM_OBL_RC_ACT": 5}))
    assert missing["MAV_FWDEXTSP"][0] is Status.FAIL  # required: the daemon would refuse
    assert missing["COM_RC_OVERRIDE"][0] is Status.WARN


def test_fc_identity_failures_say_what_to_check() -> None:
    serial = "serial:///dev/ttyAMA0:921600"
    silent = verdicts(probe(serial, heartbeat=None, bytes_in=0, frames_ok=0))
    assert list(silent) == ["flight controller"]
    status, detail, fix = silent["flight controller"]
    assert status is Status.FAIL and "nothing received" in detail and "MAV_1_CONFIG" in fix
    noise = verdicts(probe(serial, heartbeat=None, frames_ok=0))["flight controller"]
    assert "no MAVLink" in noise[1] and "baud" in noise[2]
    ardupilot = verdicts(probe(heartbeat=None, others=(3,)))["flight controller"]
    assert ardupilot[0] is Status.FAIL and "ardupilotmega" in ardupilot[1]


def test_permissions() -> None:
    chr_mode = stat.S_IFCHR
    assert may_access(chr_mode | 0o660, 0, 20, 1000, {20})  # dialout member
    assert not may_access(chr_mode | 0o660, 0, 20, 1000, {1000})
    assert may_access(chr_mode | 0o600, 0, 20, 0, set())  # root
    # the owner class decides alone: an owner without rw is refused even if "other" has it
    assert not may_access(chr_mode | 0o066, 1000, 20, 1000, {20})
    assert may_access(0o640, 0, 5, 1000, {5}, write=False)
    assert not may_access(0o640, 0, 5, 1000, {5})


def test_proc_devices_parsing() -> None:
    text = ("Character devices:\n  1 mem\n  4 /dev/vc/0\n  4 tty\n  4 ttyS\n204 ttyAMA\n"
            "\nBlock devices:\n  4 notchar\n")
    assert drivers_for_major(4, text) == {"/dev/vc/0", "tty", "ttyS"}
    assert drivers_for_major(204, text) == {"ttyAMA"}
    assert drivers_for_major(188, text) == set()


def test_kernel_console_and_fixes(tmp_path: Path) -> None:
    (tmp_path / "ttyS0").touch()
    (tmp_path / "serial0").symlink_to(tmp_path / "ttyS0")
    found = console_devices("quiet console=serial0,115200 console=tty1 root=/dev/x", tmp_path)
    assert found == (str(tmp_path / "ttyS0"),)
    getty = Holder(612, "agetty", "/sbin/agetty -o -p -- \\u --keep-baud 115200 ttyAMA0 vt220")
    assert "systemctl disable --now serial-getty@ttyAMA0.service" in holder_fix(
        getty, "/dev/ttyAMA0")
    assert "ModemManager" in holder_fix(Holder(9, "ModemManager", ""), "/dev/ttyACM0")
    router = Holder(7, "mavlink-routerd", "mavlink-routerd /dev/ttyAMA0")
    assert "udpin://" in holder_fix(router, "/dev/ttyAMA0")


def test_holders_from_a_fake_proc_tree(tmp_path: Path) -> None:
    device = tmp_path / "ttyUSB0"
    device.touch()
    for pid, comm, target in ((10, "agetty", device), (11, "bash", tmp_path / "other")):
        fd_dir = tmp_path / "proc" / str(pid) / "fd"
        fd_dir.mkdir(parents=True)
        os.symlink(target, fd_dir / "3")
        (tmp_path / "proc" / str(pid) / "comm").write_text(comm + "\n")
        (tmp_path / "proc" / str(pid) / "cmdline").write_bytes(comm.encode() + b"\0x")
    scan = find_holders(str(device), tmp_path / "proc")
    assert scan.holders == (Holder(10, "agetty", "agetty x"),)


def test_report_exit_code_and_summary() -> None:
    assert exit_code([ok("a", "x"), warn("b", "y")]) == 0
    assert exit_code([ok("a", "x"), fail("b", "y", "do z")]) == 1
    assert fail("b", "y", "do z").line().endswith("y -> fix: do z")
    assert summary([warn("b", "y")]).startswith("no FAIL, 1 warn")


def clock(here: ClockSync, service: ClockSync | None = None,
          settings: RecorderSettings | None = None) -> tuple[Status, str, str]:
    (check,) = clock_checks(settings or RecorderSettings(), here,
                            here if service is None else service)
    assert check.name == "clock"
    return check.status, check.detail, check.fix


def test_a_synchronised_clock_is_ok_and_says_who_the_service_asks() -> None:
    status, detail, _ = clock(ClockSync(True, "kernel"), ClockSync(True, "systemd-timedated"))
    assert status is Status.OK
    assert detail.startswith("synchronised (says the kernel; the service asks "
                             "systemd-timedated)")
    assert "prunes flights older than max_age_days (30)" in detail


def test_a_clock_not_synchronised_is_a_note_not_a_failure() -> None:
    """At a field with no network this is expected: nothing to fix, worth knowing."""
    status, detail, fix = clock(ClockSync(False, "kernel"), ClockSync(False, "systemd-timesyncd"))
    assert status is Status.NOTE and not fix
    assert detail == ("not synchronised (says the kernel; the service asks systemd-timesyncd):"
                      " the recorder prunes flights by size only until it is")
    assert exit_code([Check("clock", status, detail)]) == 0


def test_a_clock_the_service_cannot_see_synchronised_is_a_warning() -> None:
    """The kernel says synchronised, but under the unit (adjtimex denied) the service has
    no timesyncd mark and no answer from timedated: age pruning is silently off."""
    status, detail, fix = clock(ClockSync(True, "kernel"), ClockSync(False, ""))
    assert status is Status.WARN
    assert "the service cannot see it under its unit" in detail and "by size only" in detail
    assert "systemd-timedated" in fix and "as user offboardd" in fix
    chrony_old_timedated = clock(ClockSync(True, "kernel"),
                                 ClockSync(False, "systemd-timedated"))
    assert chrony_old_timedated[0] is Status.WARN and "rtcsync" in chrony_old_timedated[2]
    beside = clock(ClockSync(True, "kernel"), ClockSync(False, "systemd-timesyncd"))
    assert beside[0] is Status.WARN and "one NTP client" in beside[2]


def test_the_clock_matters_only_when_the_recorder_prunes_by_age() -> None:
    off = clock(ClockSync(False, "kernel"), ClockSync(False, ""),
                RecorderSettings(mode=RecordMode.OFF))
    assert off[0] is Status.OK and "the recorder is off" in off[1]
    no_age = clock(ClockSync(True, "kernel"), ClockSync(False, ""),
                   RecorderSettings(max_age_days=0))
    assert no_age[0] is Status.OK and "max_age_days = 0" in no_age[1]


def test_the_service_asks_what_the_doctor_asks_when_the_kernel_is_denied_to_both(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[object] = []

    def fake_clock_sync(**kwargs: object) -> ClockSync:
        calls.append(kwargs)
        return ClockSync(True, "systemd-timesyncd")

    monkeypatch.setattr(doctor_clock, "clock_sync", fake_clock_sync)
    here, service = doctor_clock.clock_views()
    assert here == service == ClockSync(True, "systemd-timesyncd") and len(calls) == 1
    status, detail, _ = clock(here, service)
    assert status is Status.OK and detail.startswith("synchronised (says systemd-timesyncd)")
