"""The flights directory: one folder per flight, named by its UTC start, ordered as
recorded (ORDER_NAME), and its budget.

Oldest first is the only pruning rule: folders older than `max_age_days` go (only when
the clock now and the folder's stamp were both synchronised: CLOCK_SYNCED_NAME), then the
oldest while all flights take more than `max_total_mb` or the file system has less than
`min_free_mb` free. The flight being written is never pruned; when it alone breaks the
budget the writer stops writing it (`BudgetVerdict.over`).

`within_budget` is the check the writer makes every few seconds of a flight: a closed
flight's folder does not change, so their total is what the last walk found
(`BudgetVerdict.closed_bytes`), and the check costs one `statvfs`. Walking every folder
instead took 7.5-12.6 ms of CPU with 300 flights on the bench's VM, every 5 s, with the
GIL held against the control loop much of that time (bench/stream-plan.md).
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path

from offboardd.recorder import clocksync
from offboardd.recorder.settings import RecorderSettings

_MB = 1024 * 1024
# Before this, a wall clock was not set (a companion computer without a real-time clock
# boots in 1970 and, at a field with no network, never gets NTP): such a stamp says
# nothing of a flight's age, and an unset clock now knows no age either. Age pruning
# judges neither; the size budget still does (review: back home, the clock set, every
# flight from the field read 56 years old and was deleted).
CLOCK_SET_AFTER_UNIX_S = 1_735_689_600.0  # 2025-01-01T00:00:00Z, before offboardd
# A plausible year is not enough: fake-hwclock boots a board weeks back after a month
# unpowered (a flight flown at the field, stamped 40 days old, was deleted once NTP set the
# clock at home), and a clock ahead by a year made every flight "old" (review). A folder's
# stamp is trusted for its age only if this file in it says the clock was synchronised
# when the stamp was made (clocksync.clock_synced: the kernel's word, or timesyncd's or
# timedated's under the unit), and the clock now only when it is synchronised too.
CLOCK_SYNCED_NAME = ".clock_synced"
# A flight's place in recording order, a number in a file of its folder. Names go by the
# wall clock, which on a board without a real-time clock starts again at each boot (1970,
# or fake-hwclock's last save: a battery pulled, up to an hour back): ordered by name,
# `latest` was an older flight than the one just flown and the size budget deleted the
# newest first (review).
ORDER_NAME = ".order"


def folder_name(start_unix_s: float) -> str:
    return time.strftime("%Y-%m-%dT%H-%M-%SZ", time.gmtime(start_unix_s))


def unique_folder(root: Path, name: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    candidate, n = root / name, 1
    while candidate.exists():
        n += 1
        candidate = root / f"{name}-{n}"
    return candidate


def flight_folders(root: Path) -> list[Path]:
    """Flight folders, in the order they were recorded (oldest first). A folder we cannot
    read is none of ours (a partition's root-owned lost+found, a flight copied with sudo):
    walked, its PermissionError turned recording off for good (review, 2026-11-29)."""
    try:
        entries = [p for p in root.iterdir() if p.is_dir() and not p.name.startswith(".")
                   and os.access(p, os.R_OK | os.X_OK)]
    except FileNotFoundError:
        return []
    return sorted(entries, key=_recorded_order)


def recorded_order(folder: Path) -> int | None:
    """A flight's place in recording order (ORDER_NAME), None when it has none."""
    try:
        text = (folder / ORDER_NAME).read_text(encoding="ascii")
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.strip().isdigit() else None


def next_order(root: Path) -> int:
    """The recording order of a flight started now: after every flight in `root` (the
    last in recorded order holds the highest, if any has one)."""
    folders = flight_folders(root)
    return 1 + ((recorded_order(folders[-1]) if folders else None) or 0)


def _recorded_order(folder: Path) -> tuple[int, int, str, int]:
    """The sort key: a flight's recorded order; a folder without one (from before the
    order was kept) first, by its name and its unique_folder suffix as a number
    (`…Z-10` after `…Z-2`: as text it came first, and `latest` and pruning picked the
    wrong flight: review)."""
    order = recorded_order(folder)
    if order is not None:
        return 1, order, "", 0
    base, _, suffix = folder.name.rpartition("-")
    if base and suffix.isdigit() and len(suffix) <= 4:
        return 0, 0, base, int(suffix)
    return 0, 0, folder.name, 1


def folder_bytes(folder: Path) -> int:
    total = 0
    for entry in os.scandir(folder):
        if entry.is_file(follow_symlinks=False):
            total += entry.stat(follow_symlinks=False).st_size
    return total


@dataclass
class BudgetVerdict:
    pruned: list[str] = field(default_factory=list)
    over: str | None = None  # why the open flight must stop being written
    closed_bytes: int = 0  # what the folders other than `keep` take, after pruning


def mark_clock(folder: Path, synced: bool) -> None:
    """Say in `folder` whether its stamp (its mtime: this call's own change, the last one)
    was made with a synchronised clock (CLOCK_SYNCED_NAME)."""
    marker = folder / CLOCK_SYNCED_NAME
    if synced:
        marker.touch()
    else:
        marker.unlink(missing_ok=True)


def enforce_budget(root: Path, settings: RecorderSettings, *, keep: Path | None,
                   now_unix_s: float | None = None,
                   clock_synced: bool | None = None) -> BudgetVerdict:
    """Prune (see the module docstring); `now_unix_s` and `clock_synced` default to the
    wall clock and whether it is synchronised (clocksync)."""
    verdict = BudgetVerdict()
    if not root.exists():
        return verdict
    now_unix_s = time.time() if now_unix_s is None else now_unix_s
    clock_synced = clocksync.clock_synced() if clock_synced is None else clock_synced
    folders = [(p, folder_bytes(p), _age_stamp(p)) for p in flight_folders(root)]
    old = [f for f in folders if f[0] != keep]
    budget, min_free = _limits_bytes(settings)

    def prune(folder: Path) -> None:
        shutil.rmtree(folder, ignore_errors=True)
        verdict.pruned.append(folder.name)

    max_age_s = settings.max_age_days * 86400.0
    if now_unix_s < CLOCK_SET_AFTER_UNIX_S or not clock_synced:
        max_age_s = 0.0
    for entry in list(old):
        stamp_s = entry[2]  # None: no synchronised stamp, no age known
        if (max_age_s and stamp_s is not None and stamp_s >= CLOCK_SET_AFTER_UNIX_S
                and now_unix_s - stamp_s > max_age_s):
            prune(entry[0])
            old.remove(entry)
    total = sum(size for p, size, _ in folders if p.name not in verdict.pruned)
    while old and (total > budget or shutil.disk_usage(root).free < min_free):
        path, size, _ = old.pop(0)
        prune(path)
        total -= size
    keep_bytes = next((size for p, size, _ in folders if p == keep), 0)
    verdict.closed_bytes = total - keep_bytes
    if keep is not None:
        if total > budget:
            verdict.over = f"flights take {total / _MB:.1f} MB, more than max_total_mb"
        elif (free := shutil.disk_usage(root).free) < min_free:
            verdict.over = (f"the file system of {root} has {free / _MB:.0f} MB free, less "
                            f"than min_free_mb = {settings.min_free_mb:g}")
    return verdict


def _age_stamp(folder: Path) -> float | None:
    """The folder's mtime when a synchronised clock made it (CLOCK_SYNCED_NAME), else None."""
    if not (folder / CLOCK_SYNCED_NAME).exists():
        return None
    return folder.stat().st_mtime


def within_budget(root: Path, settings: RecorderSettings, closed_bytes: int,
                  open_bytes: int) -> bool:
    """True when the closed flights (`closed_bytes`, as last walked) and the open one
    (`open_bytes`, as written) fit `max_total_mb` and the file system keeps `min_free_mb`.
    False means: walk the folders (`enforce_budget`)."""
    budget, min_free = _limits_bytes(settings)
    try:
        free = shutil.disk_usage(root).free
    except OSError:
        return False
    return closed_bytes + open_bytes <= budget and free >= min_free


def _limits_bytes(settings: RecorderSettings) -> tuple[int, int]:
    """(max_total_mb, min_free_mb) in bytes: the one reading of the budget's two bounds."""
    return int(settings.max_total_mb * _MB), int(settings.min_free_mb * _MB)
