"""Where the daemon writes, as the service will: the flights folder and the signing
timestamp file.

The shipped unit makes the whole file system read-only (`ProtectSystem=strict`) but for
/var/lib/offboardd (`StateDirectory`), hides /home (`ProtectHome`) and gives the service a
/tmp of its own that goes with each stop (`PrivateTmp`). A `[recorder] dir` or a
`signing_timestamp_file` elsewhere (a bigger SD partition, a USB stick) needs a drop-in
`ReadWritePaths=`; `check-config` said ok, the doctor said nothing, and the daemon found
out at start-up (review, 2026-11-29).
"""

from __future__ import annotations

import os
from pathlib import Path

from offboardd.config import DaemonConfig
from offboardd.doctor.device import User, may_access
from offboardd.doctor.report import Check, Status, fail, note, ok, warn
from offboardd.recorder.settings import DEFAULT_STATE_DIR, RecordMode, flights_root

_UNIT_WRITABLE = Path(DEFAULT_STATE_DIR)  # the unit's StateDirectory
_HIDDEN = (Path("/home"), Path("/root"), Path("/run/user"), Path("/tmp"), Path("/var/tmp"))


def writable_checks(config: DaemonConfig, user: User) -> list[Check]:
    checks: list[Check] = []
    recorder = config.recorder
    if recorder.mode is RecordMode.OFF:
        checks.append(note("flights folder", "the recorder is off ([recorder] mode)"))
    else:
        folder = flights_root(recorder, environ={})  # as the unit's $STATE_DIRECTORY gives it
        checks.append(_place("flights folder", folder, user, "[recorder] dir"))
        free_mb = _free_mb(folder)
        if checks[-1].status is not Status.FAIL and free_mb is not None \
                and free_mb < recorder.min_free_mb:
            checks.append(warn("flights space", f"{free_mb:.0f} MB free where {folder} is, "
                               f"below [recorder] min_free_mb = {recorder.min_free_mb:g}: the "
                               "recorder prunes the oldest flights, then stops recording",
                               "free space, or set [recorder] dir on a larger file system"))
    timestamp = config.mavlink.signing_timestamp_file
    if timestamp and config.mavlink.signing_key_file:
        checks.append(_place("signing timestamp", Path(timestamp).parent, user,
                             "mavlink.signing_timestamp_file"))
    return checks


def _place(name: str, folder: Path, user: User, key: str) -> Check:
    if not folder.is_absolute():
        return fail(name, f"{folder} ({key}) is relative: the service starts in /",
                    "give an absolute path")
    if folder == _UNIT_WRITABLE or _UNIT_WRITABLE in folder.parents:
        # the unit's StateDirectory: systemd creates it, and owns it to the service user
        return ok(name, f"{folder} (the unit's StateDirectory)")
    existing = _nearest_existing(folder)
    try:
        st = existing.stat()
    except OSError as exc:
        return fail(name, f"{existing}: {exc.strerror}", f"check {key}")
    if not may_access(st.st_mode, st.st_uid, st.st_gid, user.uid, user.gids):
        what = "write" if existing == folder else f"create {folder} in"
        return fail(name, f"user {user.name} cannot {what} {existing}",
                    f"mkdir -p {folder}; chown {user.name}: {folder}")
    hidden = next((p for p in _HIDDEN if p == folder or p in folder.parents), None)
    if hidden is not None:
        return warn(name, f"{folder} is under {hidden}, which the systemd unit hides from the "
                    "service (ProtectHome=yes) or gives it a private, short-lived copy of "
                    "(PrivateTmp=yes)", f"set {key} outside /home and /tmp")
    return warn(name, f"{folder} is outside {_UNIT_WRITABLE}: the systemd unit makes it "
                "read-only (ProtectSystem=strict)",
                f"`systemctl edit offboardd`, add: [Service] ReadWritePaths={folder}")


def _nearest_existing(path: Path) -> Path:
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path("/")


def _free_mb(folder: Path) -> float | None:
    try:
        fs = os.statvfs(_nearest_existing(folder))
    except OSError:
        return None
    return fs.f_bavail * fs.f_frsize / 1e6
