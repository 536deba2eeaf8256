"""Serial-device checks: present, a character device, usable by the service user, allowed by
the unit's device policy, and not held by anyone else.

The service user is `offboardd` (with the unit's SupplementaryGroups) when it exists, else
whoever runs the doctor. Permission logic is a pure function of stat values and ids so it
is tested without creating users. Read-only: this module never changes a mode or owner.
"""

from __future__ import annotations

import contextlib
import glob
import grp
import os
import pwd
import stat
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from offboardd.doctor.holders import (
    console_devices,
    console_fix,
    find_holders,
    holder_fix,
    is_getty,
)
from offboardd.doctor.report import Check, fail, note, ok, warn

SERVICE_USER = "offboardd"
# systemd/offboardd.service: SupplementaryGroups= and the DeviceAllow= driver names.
UNIT_SUPPLEMENTARY_GROUPS = ("dialout",)
UNIT_ALLOWED_DRIVERS = frozenset({"ttyS", "ttyAMA", "ttyTHS", "ttyUSB", "ttyACM"})
_CANDIDATE_GLOBS = ("/dev/serial/by-id/*", "/dev/serial0", "/dev/serial1", "/dev/ttyAMA*",
                    "/dev/ttyTHS*", "/dev/ttyUSB*", "/dev/ttyACM*")


@dataclass(frozen=True)
class User:
    name: str
    uid: int
    gids: frozenset[int]
    service: bool  # the systemd service's user (unit groups included)


def resolve_user(name: str | None) -> User:
    """`name`, else the service user if it exists, else the user running the doctor."""
    wanted = name or SERVICE_USER
    try:
        pw = pwd.getpwnam(wanted)
    except KeyError:
        if name is not None:
            raise
        uid = os.getuid()
        return User(_user_name(uid), uid, frozenset({os.getgid(), *os.getgroups()}), False)
    gids = set(os.getgrouplist(pw.pw_name, pw.pw_gid))
    service = pw.pw_name == SERVICE_USER
    if service:
        for group in UNIT_SUPPLEMENTARY_GROUPS:
            with contextlib.suppress(KeyError):  # no such group on this system
                gids.add(grp.getgrnam(group).gr_gid)
    return User(pw.pw_name, pw.pw_uid, frozenset(gids), service)


def may_access(st_mode: int, st_uid: int, st_gid: int, uid: int, gids: Iterable[int],
               *, write: bool = True) -> bool:
    """Classic Unix permission check (no ACLs): read, and write unless `write` is False.
    The owner class decides alone when it applies, as in the kernel; root may do anything."""
    if uid == 0:
        return True
    if uid == st_uid:
        read_bit, write_bit = stat.S_IRUSR, stat.S_IWUSR
    elif st_gid in set(gids):
        read_bit, write_bit = stat.S_IRGRP, stat.S_IWGRP
    else:
        read_bit, write_bit = stat.S_IROTH, stat.S_IWOTH
    need = read_bit | (write_bit if write else 0)
    return st_mode & need == need


def drivers_for_major(major: int, proc_devices: str) -> set[str]:
    """Names /proc/devices gives a character major (4 -> {'tty', 'ttyS', '/dev/vc/0'})."""
    names: set[str] = set()
    in_char = False
    for line in proc_devices.splitlines():
        if line.startswith("Character devices"):
            in_char = True
        elif line.startswith("Block devices"):
            in_char = False
        elif in_char and line.split()[:1] and line.split()[0].isdigit():
            number, name = line.split(None, 1)
            if int(number) == major:
                names.add(name.strip())
    return names


def device_checks(device: str, user: User, proc_root: Path = Path("/proc")) -> list[Check]:
    """One line each: presence, access, unit policy, other holders, kernel console."""
    real = os.path.realpath(device)
    shown = device if real == device else f"{device} -> {real}"
    try:
        st = os.stat(device)
    except FileNotFoundError:
        return [fail("serial device", f"{device} does not exist{_candidates(device)}",
                     _missing_fix(device))]
    except OSError as exc:
        return [fail("serial device", f"{device}: {exc.strerror}")]
    if not stat.S_ISCHR(st.st_mode):
        return [fail("serial device", f"{shown} is not a character device",
                     "point mavlink.url at the UART, e.g. serial:///dev/serial0:921600")]
    checks = [ok("serial device", f"{shown} present")]
    checks.append(_access(real, st, user))
    checks.append(_policy(real, st, proc_root))
    checks.extend(_holders(device, real, proc_root))
    try:
        cmdline = (proc_root / "cmdline").read_text()
    except OSError:
        cmdline = ""
    if real in console_devices(cmdline):
        checks.append(warn("kernel console", f"the kernel writes its console to {real}",
                           console_fix(real)))
    if os.path.basename(real).startswith("ttyS") and _is_raspberry_pi(proc_root):
        checks.append(note("mini UART", f"{real} is the Pi's mini UART (its baud rate follows "
                           "the core clock)", "dtoverlay=disable-bt in config.txt gives "
                           "GPIO 14/15 the full PL011 UART (ttyAMA0)"))
    return checks


def _access(real: str, st: os.stat_result, user: User) -> Check:
    owner, group = _user_name(st.st_uid), _group_name(st.st_gid)
    perms = f"{owner}:{group} {stat.S_IMODE(st.st_mode):04o}"
    who = f"user {user.name}" + (" (with the unit's groups)" if user.service else "")
    if may_access(st.st_mode, st.st_uid, st.st_gid, user.uid, user.gids):
        return ok("serial access", f"{who} can read and write {real} ({perms})")
    if st.st_mode & (stat.S_IRGRP | stat.S_IWGRP) == stat.S_IRGRP | stat.S_IWGRP:
        fix = f"usermod -aG {group} {user.name}, then restart the service"
    else:
        fix = (f"a udev rule giving it to group dialout: KERNEL==\"{os.path.basename(real)}\", "
               "GROUP=\"dialout\", MODE=\"0660\" in /etc/udev/rules.d/99-offboardd.rules")
    return fail("serial access", f"{who} cannot read and write {real} ({perms})", fix)


def _policy(real: str, st: os.stat_result, proc_root: Path) -> Check:
    major = os.major(st.st_rdev)
    try:
        names = drivers_for_major(major, (proc_root / "devices").read_text())
    except OSError:
        names = set()
    allowed = names & UNIT_ALLOWED_DRIVERS
    if allowed:
        return ok("device policy", f"the unit's DeviceAllow=char-{min(allowed)} covers {real}")
    driver = min(names) if names else f"major {major}"
    return warn("device policy", f"{real} ({driver}) is outside the unit's DeviceAllow= list: "
                "the service will get 'Operation not permitted'",
                f"systemctl edit offboardd: [Service] DeviceAllow=char-{driver} rw")


def _holders(device: str, real: str, proc_root: Path) -> list[Check]:
    scan = find_holders(device, proc_root, exclude_pid=os.getpid())
    if not scan.holders:
        detail = f"no other process has {real} open"
        if scan.unreadable:
            return [note("serial holders", f"{detail} among those we may inspect "
                         f"({scan.unreadable} hidden)", "run the doctor as root to see all")]
        return [ok("serial holders", detail)]
    checks = []
    for h in scan.holders:
        what = "a login getty" if is_getty(h) else h.comm
        checks.append(fail("serial holders", f"{real} is held by {what} (pid {h.pid}: "
                           f"{h.cmdline or h.comm})", holder_fix(h, real)))
    return checks


def _candidates(device: str) -> str:
    found = sorted({p for pattern in _CANDIDATE_GLOBS for p in glob.glob(pattern)} - {device})
    return f"; serial devices here: {', '.join(found)}" if found else "; no serial devices here"


def _missing_fix(device: str) -> str:
    name = os.path.basename(device)
    if name.startswith("ttyTHS"):
        return ("Jetson: the 40-pin header UART is /dev/ttyTHS1 on Orin/Xavier (ttyTHS0 or "
                "ttyTHS2 on some carriers); set mavlink.url to one that exists")
    if name.startswith(("serial", "ttyAMA", "ttyS")):
        return ("Raspberry Pi: enable the UART (raspi-config > Interface Options > Serial "
                "Port: login shell No, hardware Yes, or enable_uart=1 in "
                "/boot/firmware/config.txt) and reboot")
    return ("plug in the flight controller / USB adapter; /dev/serial/by-id/ gives names "
            "that survive re-plugging")


def _is_raspberry_pi(proc_root: Path) -> bool:
    try:
        return "Raspberry Pi" in (proc_root / "device-tree" / "model").read_text()
    except OSError:
        return False


def _user_name(uid: int) -> str:
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:
        return str(uid)


def _group_name(gid: int) -> str:
    try:
        return grp.getgrgid(gid).gr_name
    except KeyError:
        return str(gid)
