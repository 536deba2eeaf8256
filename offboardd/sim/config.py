"""SimConfig: everything that shapes one simulated vehicle and its links (a frozen value).

Defaults are laid out like PX4 SITL (px4-offboard.md §5): the companion link binds
udp 127.0.0.1:14580 and sends to :14540, the GCS link binds :18570 and sends to :14550.
Tests pass port 0 (kernel-chosen) and read the bound ports back from the server.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from offboardd.mavlink.params import ParamValue
from offboardd.sim.px4_versions import DEFAULT_VERSION, VERSION_NAMES

Endpoint = tuple[str, int]
PROFILE_NAMES = ("px4", "light", "heavy")


# Parts of the boot (SimConfig.boot_ready_s, 3.0 s on PX4 SIH main from its first
# HEARTBEAT): GLOBAL_POSITION_INT came ~1.5 s in, ESTIMATOR_STATUS's horizontal position
# ~2.0 s.
BOOT_GLOBAL = 0.5
BOOT_ESTIMATE = 2.0 / 3.0


@dataclass(frozen=True)
class FaultSpec:
    """One scheduled fault: `name` at `at_s` seconds after start, with an optional argument.

    Names: estimator_invalid[:duration_s], estimator_valid, global_invalid[:duration_s],
    global_valid, terrain_invalid[:duration_s], terrain_valid, gps_off[:duration_s], gps_on,
    mode:<MODE> (a GCS/pilot mode switch), rc_takeover, link_pause:<seconds>, link_drop,
    link_restore, packet_loss:<fraction>, reboot, flight_termination (faults.FAULT_NAMES).
    """

    name: str
    at_s: float
    arg: str = ""


@dataclass(frozen=True)
class SimConfig:
    system_id: int = 1
    component_id: int = 1
    # Companion (offboard/API) link: bind here, send to remote until someone else speaks.
    udp_bind: Endpoint | None = ("127.0.0.1", 14580)
    udp_remote: Endpoint | None = ("127.0.0.1", 14540)
    # GCS link (QGroundControl), PX4's "normal" stream set. None disables it.
    gcs_bind: Endpoint | None = ("127.0.0.1", 18570)
    gcs_remote: Endpoint | None = ("127.0.0.1", 14550)
    tcp_port: int | None = None  # serve MAVLink on tcp 127.0.0.1:PORT (0 = kernel-chosen)
    pty: bool = False  # serve one end of a pseudo-terminal pair (a serial link)
    pty_symlink: str | None = None  # also expose the pty's slave under this path
    pty_baud: int | None = None  # emulate a UART at this rate (8N1) each way; None: as fast
    profile: str = "px4"  # telemetry on the companion, TCP and pty links
    # The PX4 release to play, "1.16" | "1.17" | "1.18" (px4_versions.py).
    px4_version: str = DEFAULT_VERSION
    # DO_SET_MODE answered twice, the first always ACCEPTED (PX4 v1.16.2) or once (v1.17+);
    # None: as px4_version does. True/False overrides the release.
    double_ack: bool | None = None
    params: Mapping[str, ParamValue] = field(default_factory=dict)
    home_lat_deg: float = 47.397742  # PX4 SITL's default home (Zurich)
    home_lon_deg: float = 8.545594
    home_alt_m: float = 488.0
    boot_mode: str = "AUTO.LOITER"
    # PX4 SIH main's boot as the onboard link sees it ([SITL main 2026-11-29], from its
    # first HEARTBEAT): GLOBAL_POSITION_INT after ~1.5 s, ESTIMATOR_STATUS's horizontal
    # position after ~2.0 s, system_status UNINIT and arming TEMPORARILY_REJECTED until
    # ~3.0 s. This many seconds, that timeline scaled to it (again after each reboot);
    # 0: ready at once.
    boot_ready_s: float = 3.0
    tick_hz: float = 100.0  # physics and telemetry tick (ATTITUDE is 100/s on PX4)
    reboot_gap_s: float = 3.0  # silence while "rebooting"
    faults: tuple[FaultSpec, ...] = ()
    # MAVLink 2 signing like PX4 v1.17 with a key (sim/signing.py): sign everything sent;
    # with require_signing also refuse unsigned and wrongly signed frames.
    signing_key: bytes | None = field(default=None, repr=False)
    require_signing: bool = False

    def __post_init__(self) -> None:
        if self.px4_version not in VERSION_NAMES:
            raise ValueError(
                f"px4_version must be one of {VERSION_NAMES}, not {self.px4_version!r}"
            )
        if self.profile not in PROFILE_NAMES:
            raise ValueError(f"profile must be one of {PROFILE_NAMES}, not {self.profile!r}")
        for name, value in (("system_id", self.system_id), ("component_id", self.component_id)):
            if not 1 <= value <= 255:
                raise ValueError(f"{name} must be 1..255, not {value}")
        if not 10.0 <= self.tick_hz <= 1000.0:
            raise ValueError(f"tick_hz must be 10..1000, not {self.tick_hz}")
        if self.signing_key is not None and len(self.signing_key) != 32:
            raise ValueError(f"signing_key must be 32 bytes, not {len(self.signing_key)}")
        if self.pty_baud is not None and not 1200 <= self.pty_baud <= 4_000_000:
            raise ValueError(f"pty_baud must be 1200..4000000, not {self.pty_baud}")
        if self.require_signing and self.signing_key is None:
            raise ValueError("require_signing needs a signing_key")
