"""Who else is using the serial device: processes holding it open, and the kernel console.

A login getty on the flight controller's UART is the classic Raspberry Pi failure: it
answers PX4's bytes with login prompts and fights offboardd for the port. This module
scans /proc for open descriptors of the device and reads the kernel command line; it only
reads, never signals or stops anything. The /proc root is a parameter so tests can point
it at a fake tree; the live scan is exercised against real processes holding a real pty.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

_GETTY_NAMES = ("agetty", "getty", "mingetty", "serial-getty", "nvgetty")


@dataclass(frozen=True)
class Holder:
    pid: int
    comm: str  # /proc/PID/comm: the process name
    cmdline: str


@dataclass(frozen=True)
class HolderScan:
    holders: tuple[Holder, ...]
    unreadable: int  # processes whose descriptors we may not list (not root)


def find_holders(device: str, proc_root: Path = Path("/proc"),
                 exclude_pid: int | None = None) -> HolderScan:
    """Processes with `device` (symlinks resolved) open; `exclude_pid` is left out (us)."""
    target = os.path.realpath(device)
    holders: list[Holder] = []
    unreadable = 0
    try:
        entries = [e for e in os.listdir(proc_root) if e.isdigit()]
    except OSError:
        return HolderScan((), 0)
    for entry in entries:
        pid = int(entry)
        if pid == exclude_pid:
            continue
        fd_dir = proc_root / entry / "fd"
        try:
            fds = os.listdir(fd_dir)
        except PermissionError:
            unreadable += 1
            continue
        except OSError:  # the process ended while we looked
            continue
        for fd in fds:
            try:
                if os.readlink(fd_dir / fd) == target:
                    holders.append(_holder(proc_root, pid))
                    break
            except OSError:
                continue
    return HolderScan(tuple(sorted(holders, key=lambda h: h.pid)), unreadable)


def _holder(proc_root: Path, pid: int) -> Holder:
    def read(name: str) -> str:
        try:
            return (proc_root / str(pid) / name).read_bytes().decode(errors="replace")
        except OSError:
            return ""

    comm = read("comm").strip() or "?"
    cmdline = read("cmdline").replace("\0", " ").strip()
    return Holder(pid, comm, cmdline)


def is_getty(holder: Holder) -> bool:
    return holder.comm in _GETTY_NAMES or any(
        holder.cmdline.split(" ", 1)[0].endswith("/" + name) for name in _GETTY_NAMES
    )


def holder_fix(holder: Holder, device_real: str) -> str:
    """What to run so that `holder` lets go of the device for good."""
    tty = os.path.basename(device_real)
    if holder.comm == "nvgetty":  # NVIDIA's getty on Jetson's debug/serial UART
        return "systemctl disable --now nvgetty"
    if is_getty(holder):
        return (f"systemctl disable --now serial-getty@{tty}.service (Raspberry Pi: "
                "raspi-config > Interface Options > Serial Port: login shell No, hardware Yes)")
    if holder.comm == "ModemManager":  # probes every new ttyACM/ttyUSB for a modem
        return ("systemctl disable --now ModemManager (or a udev rule setting "
                "ENV{ID_MM_DEVICE_IGNORE}=\"1\")")
    if "offboardd run" in holder.cmdline or holder.cmdline.endswith("offboardd"):
        return ("offboardd itself holds it (the service?): systemctl stop offboardd while the "
                "doctor checks the flight controller, then start it again")
    if holder.comm == "mavlink-routerd":
        return ("mavlink-router owns the UART: point offboardd at one of its UDP endpoints "
                "(mavlink.url = udpin://127.0.0.1:14540) instead of the device")
    return f"stop {holder.comm} (pid {holder.pid}) or point it at another port"


def console_devices(cmdline: str, dev_root: Path = Path("/dev")) -> tuple[str, ...]:
    """The real device paths the kernel console writes to (console=ttyAMA0,115200 ...)."""
    out = []
    for word in cmdline.split():
        if not word.startswith("console="):
            continue
        name = word.removeprefix("console=").split(",", 1)[0]
        if not name or (name.startswith("tty") and name[3:].isdigit()):  # tty1: the screen
            continue
        out.append(os.path.realpath(dev_root / name))
    return tuple(out)


def console_fix(device_real: str) -> str:
    tty = os.path.basename(device_real)
    return (f"remove console={tty} (or console=serial0,...) from the kernel command line "
            "(/boot/firmware/cmdline.txt on a Pi, /boot/extlinux/extlinux.conf on a Jetson) "
            "and reboot")
