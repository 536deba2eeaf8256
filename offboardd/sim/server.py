"""SimServer: the asyncio MAVLink server around the vehicle model.

Reads the loop clock once per wake-up, feeds received messages and the time into the
`Vehicle`, and sends its replies and the telemetry streams on every link (each link has
its own codec, so its own sequence numbers, and its own stream rates). Owns links,
pauses and reboots; PX4's rules stay in the model. Usage:

    async with SimServer(SimConfig(udp_bind=("127.0.0.1", 0))) as sim:
        sim.vehicle.mode_name, sim.record.mode_changes, sim.udp_port ...
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import Callable
from types import TracebackType

from offboardd.mavlink.codec import Message
from offboardd.sim import faults
from offboardd.sim.commands import is_gcs_heartbeat
from offboardd.sim.config import SimConfig
from offboardd.sim.current_mode_stream import CurrentModeStream
from offboardd.sim.outbox import TO_ALL, TO_CURRENT_MODE, TO_GCS, Outgoing
from offboardd.sim.record import SimRecord
from offboardd.sim.signing import link_codec
from offboardd.sim.streams import (
    HEAVY_FILLER_HZ,
    PROFILES,
    PX4_UNSENT_STREAMS,
    UNLIMITED_STREAMS,
    PrebuiltFrames,
    SimLink,
    StreamScheduler,
)
from offboardd.sim.telemetry import BUILDERS, STREAM_IDS
from offboardd.sim.transports import Endpoint, PtyEndpoint, TcpSender, UdpEndpoint
from offboardd.sim.vehicle import Vehicle


class SimServer:
    def __init__(self, config: SimConfig | None = None) -> None:
        self.config = config or SimConfig()
        self.links: list[SimLink] = []
        self._udp: list[UdpEndpoint] = []
        self._pty: PtyEndpoint | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._rebooting_until_s: float | None = None
        self._started_s = 0.0
        self.vehicle: Vehicle  # set by start()
        self.udp_port: int | None = None
        self.gcs_port: int | None = None
        self.tcp_port: int | None = None
        self.pty_path: str | None = None
        self.error: BaseException | None = None  # what killed the tick loop, if anything

    # ---- lifecycle ------------------------------------------------------------
    async def __aenter__(self) -> SimServer:
        await self.start()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:  # fmt: skip
        await self.stop()

    def now(self) -> float:
        """The sim clock: the running loop's time() (what `record` times are in)."""
        return asyncio.get_running_loop().time()

    async def start(self) -> None:
        cfg = self.config
        now = self.now()
        self._started_s = now
        self.vehicle = Vehicle(cfg, now)
        self.vehicle.stream_interval_us = self._stream_interval_us
        self.udp_port = await self._open_udp("udp", cfg.profile, cfg.udp_bind, cfg.udp_remote)
        self.gcs_port = await self._open_udp("gcs", "gcs", cfg.gcs_bind, cfg.gcs_remote)
        if cfg.pty:
            link = self._add_link("pty", cfg.profile)
            self._pty = PtyEndpoint(self._receiver(link), cfg.pty_symlink, cfg.pty_baud)
            link.sender, self.pty_path = self._pty, self._pty.path
        if cfg.tcp_port is not None:
            from offboardd.mavlink.links import open_link  # noqa: PLC0415 (only when asked)

            link = self._add_link("tcp", cfg.profile)
            tcp = open_link(f"tcpin://127.0.0.1:{cfg.tcp_port}", self._receiver(link),
                            lambda _state: None)  # fmt: skip
            link.sender, self.tcp_port = TcpSender(tcp), cfg.tcp_port
            self._tasks.append(asyncio.create_task(tcp.run()))
        self._tasks.append(asyncio.create_task(self._tick_loop()))

    async def _open_udp(self, name: str, profile: str, bind: Endpoint | None,
                        remote: Endpoint | None) -> int | None:  # fmt: skip
        if bind is None:
            return None
        link = self._add_link(name, profile)
        try:
            ep = await UdpEndpoint.open(bind, remote, self._receiver(link))
        except OSError as exc:  # (a second sim on the default ports: EADDRINUSE)
            raise OSError(exc.errno, f"the {name} link cannot bind UDP {bind[0]}:{bind[1]}: "
                          f"{exc.strerror or exc}") from exc  # fmt: skip
        link.sender = ep
        self._udp.append(ep)
        return ep.bound[1]

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        self._tasks.clear()
        for ep in self._udp:
            ep.close()
        if self._pty is not None:
            self._pty.close()
        if self.error is not None:  # never let a broken sim pass for a quiet vehicle
            raise RuntimeError(f"the sim's tick loop failed: {self.error!r}") from self.error

    def _add_link(self, name: str, profile: str) -> SimLink:
        cfg, now = self.config, self.now()
        link = SimLink(len(self.links), name, profile, link_codec(cfg, len(self.links)),
                       self._streams(name, profile, now))
        if profile == "heavy":
            link.prebuilt = PrebuiltFrames(cfg.system_id, cfg.component_id)
            link.filler = StreamScheduler(HEAVY_FILLER_HZ, now)
        self.links.append(link)
        return link

    def _streams(self, link_name: str, profile: str, now: float) -> StreamScheduler:
        """The profile's streams, less those the release has none of or never sends
        (v1.16: GNSS_INTEGRITY; before v1.18: ESC_INFO, ESC_STATUS...)."""
        px4 = self.vehicle.px4
        absent = {STREAM_IDS.get(i) for i in px4.streamless_ids | px4.silent_ids}
        rates = {n: hz for n, hz in PROFILES[profile].items() if n not in absent}
        unsent = [n for n in PX4_UNSENT_STREAMS if n not in absent]
        onboard = profile in ("px4", "heavy")  # PX4's onboard mode, as measured
        return StreamScheduler(rates, now, self._datarate_b_s(link_name),
                               unsent=unsent if onboard else (),
                               unlimited=UNLIMITED_STREAMS if onboard else ())  # fmt: skip

    def _stream_interval_us(self, link_id: int, msg_id: int) -> int:
        """MAV_CMD_GET_MESSAGE_INTERVAL's answer on one link (commands.py asks)."""
        link, name = self.links[link_id], STREAM_IDS.get(msg_id)
        if name == "CURRENT_MODE" and link.current_mode is not None:
            return int(link.current_mode.interval_s * 1e6)
        interval = None if name is None else link.streams.interval_us(name)
        return self.vehicle.px4.absent_stream_interval_us if interval is None else interval

    def _datarate_b_s(self, link_name: str) -> float | None:
        """An emulated UART's stream budget: PX4's default, half the line (baud/20)."""
        baud = self.config.pty_baud
        return baud / 20 if link_name == "pty" and baud is not None else None

    @property
    def pty(self) -> PtyEndpoint | None:
        """The emulated UART (its byte counters), when the sim serves one."""
        return self._pty

    @property
    def record(self) -> SimRecord:
        return self.vehicle.record

    def link(self, name: str) -> SimLink:
        return next(lnk for lnk in self.links if lnk.name == name)

    # ---- receive --------------------------------------------------------------
    def _receiver(self, link: SimLink) -> Callable[[bytes], None]:
        def on_bytes(data: bytes) -> None:
            now = self.now()
            if link.paused(now) or self._rebooting_until_s is not None:
                return  # a paused link or a rebooting autopilot hears nothing
            if link.loss_fraction and link.rng.random() < link.loss_fraction:
                return
            for msg in link.codec.decode(data):
                link.received_msgs += 1
                if is_gcs_heartbeat(msg):
                    link.is_gcs = True
                try:
                    self._dispatch(self.vehicle.handle(msg, now, link.link_id), now)
                except Exception as exc:  # a model bug: keep serving, fail loudly at stop()
                    self.error = self.error or exc
            self._after_input(now)

        return on_bytes

    def _after_input(self, now: float) -> None:
        v = self.vehicle
        for req in v.link_requests:
            link = self.links[req.link_id]
            if req.msg_name == "CURRENT_MODE" and v.px4.current_mode_on_status:
                link.current_mode = (None if req.interval_us < 0
                                     else CurrentModeStream(req.interval_us))  # fmt: skip
            else:
                link.streams.set_interval(req.msg_name, req.interval_us, now)
        v.link_requests.clear()
        self._flush(now)
        if v.reboot_requested:
            v.reboot_requested = False
            self.reboot()

    def _dispatch(self, outgoing: list[Outgoing], now: float) -> None:
        for out in outgoing:
            for link in self._targets(out.dest):
                msg: Message | None = out.msg
                if out.dest == TO_CURRENT_MODE and link.current_mode is not None:
                    msg = link.current_mode.publish(out.msg, now)  # v1.17+: capped
                if msg is not None and not link.paused(now):
                    link.pending.append(link.codec.encode(msg))

    def _targets(self, dest: int | str) -> list[SimLink]:
        if dest == TO_ALL:
            return self.links
        if dest == TO_GCS:
            return [lnk for lnk in self.links if lnk.is_gcs]
        if dest == TO_CURRENT_MODE:
            return [lnk for lnk in self.links if lnk.wants_current_mode()]
        return [self.links[int(dest)]]

    def _flush(self, now: float) -> None:
        for link in self.links:
            if link.pending:
                frames, link.pending = link.pending, []
                if link.loss_fraction:
                    frames = [f for f in frames if link.rng.random() >= link.loss_fraction]
                if link.sender is not None and not link.paused(now):
                    link.sender.send_frames(frames)

    # ---- time -----------------------------------------------------------------
    async def _tick_loop(self) -> None:
        loop = asyncio.get_running_loop()
        period = 1.0 / self.config.tick_hz
        pending_faults = sorted(self.config.faults, key=lambda f: f.at_s)
        next_s = loop.time()
        while True:
            now = loop.time()
            while pending_faults and now >= self._started_s + pending_faults[0].at_s:
                faults.apply(self, pending_faults.pop(0))
            try:
                self._tick(now)
            except Exception as exc:
                self.error = exc
                raise
            next_s += period
            if next_s < now:  # we fell behind (a loaded machine): do not try to catch up
                next_s = now + period
            await asyncio.sleep(next_s - loop.time())

    def _tick(self, now: float) -> None:
        if self._rebooting_until_s is not None:
            if now < self._rebooting_until_s:
                return
            self._finish_reboot(now)
        self._dispatch(self.vehicle.step(now), now)
        cache: dict[str, Message | None] = {}
        for link in self.links:
            if link.paused(now):
                continue
            for name in link.streams.due(now):
                if name not in cache:
                    cache[name] = BUILDERS[name](self.vehicle, now)
                msg = cache[name]
                if msg is not None:
                    link.pending.append(link.codec.encode(msg))
            held = link.current_mode.due(now) if link.current_mode is not None else None
            if held is not None:
                link.pending.append(link.codec.encode(held))
            if link.filler is not None and link.prebuilt is not None:
                for name in link.filler.due(now):
                    link.pending.append(link.prebuilt.take(name, link.codec))
        self._flush(now)

    # ---- faults (see faults.py for the scheduled forms) ------------------------
    def _vehicle_acts(self, act: Callable[[float], list[Outgoing]]) -> None:
        """A fault on the vehicle model, now: what it says goes out at once."""
        now = self.now()
        self._dispatch(act(now), now)
        self._flush(now)

    def pilot_mode_switch(self, mode_name: str) -> None:
        """A GCS/pilot mode switch to any mode; it ends the offboard intent."""
        self._vehicle_acts(lambda now: self.vehicle.pilot_mode_switch(mode_name, now))

    def flight_termination(self) -> None:
        self._vehicle_acts(self.vehicle.flight_termination)

    def rc_takeover(self) -> None:
        self._vehicle_acts(self.vehicle.rc_takeover)

    def set_global_valid(self, valid: bool) -> None:
        self._vehicle_acts(lambda now: self.vehicle.set_global_valid(valid, now))

    def set_terrain_valid(self, valid: bool) -> None:
        self.vehicle.set_terrain_valid(valid)

    def set_estimator_valid(self, valid: bool) -> None:
        self._vehicle_acts(lambda now: self.vehicle.set_estimator_valid(valid, now))

    def set_gnss(self, has_fix: bool) -> None:
        """GNSS cut (False) or back (True); the estimate follows as PX4's does (gnss.py)."""
        self._vehicle_acts(lambda now: self.vehicle.set_gnss(has_fix, now))

    def pause_link(self, duration_s: float, name: str | None = None) -> None:
        """Stop sending and receiving on one link (or all) for `duration_s`."""
        until = self.now() + duration_s
        for link in self.links:
            if name is None or link.name == name:
                link.paused_until_s = until

    def set_packet_loss(self, fraction: float, name: str | None = None) -> None:
        """Lose `fraction` (0..1) of frames sent and of datagrams received; 0 restores."""
        for link in self.links:
            if name is None or link.name == name:
                link.loss_fraction = min(1.0, max(0.0, fraction))

    def drop_link(self, name: str | None = None) -> None:
        self.pause_link(math.inf, name)

    def restore_link(self, name: str | None = None) -> None:
        for link in self.links:
            if name is None or link.name == name:
                link.paused_until_s = -math.inf

    def reboot(self) -> None:
        """Silence for `reboot_gap_s`, then boot: disarmed, boot time from 0, params kept."""
        self._rebooting_until_s = self.now() + self.config.reboot_gap_s

    def _finish_reboot(self, now: float) -> None:
        self._rebooting_until_s = None
        self.vehicle.reboot(now)
        cfg = self.config
        for link in self.links:  # a rebooted PX4 starts its sequence numbers afresh
            link.codec = link_codec(cfg, link.link_id, link.codec)
            link.streams = self._streams(link.name, link.profile, now)
            link.current_mode = None
            link.pending.clear()

    async def wait_until(self, predicate: Callable[[], bool], timeout_s: float,
                         poll_s: float = 0.01) -> bool:  # fmt: skip
        """Poll `predicate` on the loop until true (True) or `timeout_s` passes (False)."""
        deadline = self.now() + timeout_s
        while not predicate():
            if self.now() >= deadline:
                return False
            await asyncio.sleep(poll_s)
        return True
