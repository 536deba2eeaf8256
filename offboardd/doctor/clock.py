"""The host clock: synchronised or not, by which source, and what the recorder does with it.

The recorder prunes flights older than `max_age_days` only while the clock is synchronised
(recorder/clocksync.py, folders.py). The doctor runs outside the unit and may ask the
kernel; the daemon, under the unit, may not (adjtimex is denied) and asks systemd-timesyncd
or systemd-timedated instead. Both views are judged: a clock the kernel calls synchronised
that the service cannot see as such is the case worth a warning (age pruning silently off).
A clock not synchronised is a note: at a field with no network that is expected.
"""

from __future__ import annotations

from offboardd.doctor.report import Check, note, ok, warn
from offboardd.recorder.clocksync import KERNEL, TIMEDATED, TIMESYNCD, ClockSync, clock_sync
from offboardd.recorder.settings import RecorderSettings, RecordMode

_SOURCE_NAMES = {KERNEL: "the kernel", TIMESYNCD: TIMESYNCD, TIMEDATED: TIMEDATED}


def clock_views() -> tuple[ClockSync, ClockSync]:
    """(what the doctor can ask here, what the service can ask under its unit)."""
    here = clock_sync()
    if here.source != KERNEL:  # the kernel is denied here too: the same view
        return here, here
    return here, clock_sync(kernel=lambda: None)


def clock_checks(recorder: RecorderSettings, here: ClockSync, service: ClockSync,
                 ) -> list[Check]:
    """One line: synchronised or not, who says so, and what the recorder makes of it."""
    seen = _seen(here, service)
    if recorder.mode is RecordMode.OFF or not recorder.max_age_days:
        why = "is off" if recorder.mode is RecordMode.OFF else "has max_age_days = 0"
        state = "synchronised" if service.synced else "not synchronised"
        return [ok("clock", f"{state} ({seen}): the recorder {why}, no flight's age is judged")]
    if service.synced:
        return [ok("clock", f"synchronised ({seen}): the recorder prunes flights older than "
                   f"max_age_days ({recorder.max_age_days:g})")]
    if not here.synced:
        return [note("clock", f"not synchronised ({seen}): the recorder prunes flights by "
                     "size only until it is")]
    return [warn("clock", f"synchronised ({_seen(here, here)}), but the service cannot see it "
                 f"under its unit ({_why_not(service)}): flights go by size only, never by age",
                 _fix(service))]


def _seen(here: ClockSync, service: ClockSync) -> str:
    """Who said so, and whom the service asks when that is someone else."""
    who = _SOURCE_NAMES.get(here.source)
    text = f"says {who}" if who else "no source could be asked"
    if service.source != here.source:
        other = _SOURCE_NAMES.get(service.source)
        text += f"; the service asks {other}" if other else "; the service can ask no source"
    return text


def _why_not(service: ClockSync) -> str:
    if service.source == TIMESYNCD:
        return "systemd-timesyncd runs and has not marked a synchronisation"
    if service.source == TIMEDATED:
        return "systemd-timedated says not synchronised"
    return "no systemd-timesyncd, and systemd-timedated did not answer"


def _fix(service: ClockSync) -> str:
    if service.source == TIMEDATED:  # it disagrees with the kernel: a timedated before v243
        return ("systemd-timedated before v243 reads STA_UNSYNC, which chronyd clears only "
                "with `rtcsync` in chrony.conf")
    if service.source == TIMESYNCD:  # it runs, but someone else set the clock
        return ("run one NTP client: systemd-timesyncd runs beside the one that synchronised "
                "the clock (timedatectl timesync-status)")
    return ("the service asks systemd-timedated on the system bus: as user offboardd, "
            "`timedatectl show -p NTPSynchronized` must answer yes")
