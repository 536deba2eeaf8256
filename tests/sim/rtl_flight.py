"""Return (AUTO.RTL) as PX4 flies it, judged the same way on the sim (tests/sim/test_rtl.py)
and on real PX4 SIH (tests/px4/test_px4_rtl.py): a differential test, the sim held to
what PX4 does.

Each case climbs over home in OFFBOARD, flies `away_m` north, hovers and switches to
AUTO.RTL; the track from there to the ground is a `ReturnTrack`. PX4 main (RtlDirect,
RTL::computeReturnAltitude; measured on SIH main 2026-11-27): it climbs on the spot to
its return altitude (near home 2 x the distance, else RTL_RETURN_ALT, never below where it
flies), flies home at it, starts its landing NAV_ACC_RAD (10 m) out and descends while
it closes, and lands on home. With RTL_LAND_DELAY it descends (still closing) to
RTL_DESCEND_ALT, waits there over home and then lands.

v1.16 and v1.17 fly the same RtlDirect with NAV_ACC_RAD 2 m (their multicopter defaults,
until #27738): near home the cone sets the return altitude (~1 x the distance), and the
landing begins ~2 m out, over home. Their SIH keeps IMU noise while thrusting: its
estimate put home up to ~1.2 m off the ground it armed on and the same flight's peak
anywhere in 4.7-7.6 m, so their heights are judged with 2.5 m of slack and their times
within 40 % (sitl/README.md).
"""

from __future__ import annotations

import asyncio
import math
import statistics
from dataclasses import dataclass, field

from tests.sim.client import RTL, Peer, position_sp
from tests.sim.home_flight import home_now, is_local, land_and_disarm, offboard_at

NAV_MC_ALT_RAD_M = 0.8  # an altitude counts as reached this far short of it
Release = tuple[int, int]  # (major, minor), as tests/px4/release.py reads PX4's
MAIN: Release = (1, 18)  # release/1.18 and main fly alike here


@dataclass(frozen=True)
class ReleaseRules:
    """How a release's Return and its SIH estimate differ, in one place."""

    nav_acc_rad_m: float  # where the leg home ends and the landing begins: NAV_ACC_RAD
    estimate_slack_m: float  # the SIH estimate's height above home off the truth
    closing_m: float  # the landing begins no nearer than this: still closing on home
    touchdown_share: float  # the touchdown time's tolerance, a share of PX4's
    land_delay_pinned: bool  # where RTL_LAND_DELAY's wait is known to start


# Main and release/1.18: NAV_ACC_RAD 10 (PX4 #27738), the estimate within 0.05 m, the
# landing begun on the way in; 0.2 of the touchdown time.
MAIN_RULES = ReleaseRules(10.0, 0.0, 2.0, 0.2, True)
# [SITL v1.17.0, v1.16.2] NAV_ACC_RAD 2 (rc.mc_defaults), so the landing begins over home;
# home 1.2 m below the ground it armed on, and NEAR's peak 4.7-7.6 m over eleven flights
# (the height it returned at, "7 m above destination" by its own account, is held in the
# global frame); the estimate's ~1 m, at the last metre's 0.3 m/s crawl, is ~4 s of the
# touchdown; the delay's wait not pinned down (down 3.2 s after it came within NAV_ACC_RAD
# of home, 7.5 m up, with a 5 s delay).
OLDER_RULES = ReleaseRules(2.0, 2.5, 0.0, 0.4, False)


# Real release/1.18 SIH flies as main, but its estimate wanders (IMU noise while
# thrusting): home 0.8-1.3 m off where it lands, NEAR's touchdown 21.4-26.1 s over 13
# flights (2026-11-28: one of them 26.13 s, past main's 20 %), and in one tier run a climb
# on the spot read as drifting more than main's 0.6 m. Judged with 2 m of slack and 30 %
# (the sim, which has no such noise, is held to main's).
PX4_R118_RULES = ReleaseRules(10.0, 2.0, 2.0, 0.3, True)


def rules_of(release: Release, *, real_px4: bool = False) -> ReleaseRules:
    if real_px4 and release == MAIN:
        return PX4_R118_RULES
    return MAIN_RULES if release >= MAIN else OLDER_RULES


@dataclass(frozen=True)
class Expect:
    """What PX4 did in one case: the altitude it returned at and when it was down."""

    return_alt_m: float  # above home: what PX4 climbs to (or keeps)
    touchdown_s: float  # Return -> on the ground


@dataclass(frozen=True)
class ReturnCase:
    name: str
    away_m: float  # north of home, where Return starts
    up_m: float  # above home, where Return starts
    params: dict[str, float]
    main: Expect  # [SITL main 2026-11-27]
    v1_17: Expect  # [SITL v1.17.0 2026-11-28]

    def expect(self, release: Release) -> Expect:
        return self.main if release >= MAIN else self.v1_17


# [SITL main 2026-11-27] (ReturnTrack.figures): 6.2 m out -> climbed to 11.8 m (of 12.5:
# it turns home NAV_MC_ALT_RAD short, then descends), left the spot at 8.0 s, 0.5 m below
# its peak 5.3 m out, down at 21.2 s; 15.2 m out, RTL_RETURN_ALT 15 -> 14.8 m, left at
# 8.6 s, at up to 3.9 m/s, 0.5 m down 6.0 m out, down at 26.2 s.
# [SITL v1.17.0 twice, v1.16.2 once, 2026-11-28; the full tiers after it agree] 6.1 m out:
# "RTL: start return at 496 m (7 m above destination)", peaks 6.1 / 4.7 / 5.9 m (the
# estimate), left at 5.1-5.2 s, 0.5 m down 1.1 m out, down at 17.9 / 17.0 / 23.2 s;
# 15 m out: 17.5 / 14.8 / 15.0 m, 0.8-1.0 m out, 32.3 / 30.6 / 29.5 s.
NEAR = ReturnCase("near", 6.0, 3.0, {}, Expect(12.0, 21.2), Expect(6.2, 19.4))
FAR = ReturnCase("far", 15.0, 3.0, {"RTL_RETURN_ALT": 15.0}, Expect(15.0, 26.2),
                 Expect(15.0, 30.8))  # fmt: skip
# Above RTL_RETURN_ALT: no climb, home at the altitude it flies; from 25 m: left at 1.5 s,
# 0.5 m down 6.3 m out, down at 26.1 s. [SITL v1.17.0, v1.16.2] 0.9-1.2 m out, down at
# 34.7 / 32.5 / 37.4 s (the whole 25 m over home).
HIGH = ReturnCase("high", 15.0, 25.0, {"RTL_RETURN_ALT": 15.0}, Expect(25.0, 26.1),
                  Expect(25.0, 34.9))  # fmt: skip
# RTL_LAND_DELAY 5 s at RTL_DESCEND_ALT 8 m, from NEAR's spot: the same climb, 0.5 m down
# 5.4 m out, within NAV_MC_ALT_RAD of 8 m at 10.2 s (1.4 m out), over home at 8.0 m from
# 13.4 s, the landing begun at 16.1 s (5.9 s after it came within the radius: PX4 counts
# the delay from there), down at 26.8 s. [SITL v1.17.0, v1.16.2] it waits at its return
# altitude (below RTL_DESCEND_ALT), over home; down at 22.6 / 22.8 / 24.9 s.
DELAY = ReturnCase("land-delay", 6.0, 3.0, {"RTL_DESCEND_ALT": 8.0, "RTL_LAND_DELAY": 5.0},
                   Expect(12.0, 26.8), Expect(6.2, 23.4))  # fmt: skip
CASES = (NEAR, FAR, HIGH, DELAY)


@dataclass
class ReturnTrack:
    """Local NED positions (s after the RTL command, north, east, down) to the ground."""

    home_ned_m: tuple[float, float, float]
    samples: list[tuple[float, float, float, float]] = field(default_factory=list)

    def above_home_m(self, sample: tuple[float, float, float, float]) -> float:
        return self.home_ned_m[2] - sample[3]

    def from_home_m(self, sample: tuple[float, float, float, float]) -> float:
        return math.hypot(sample[1] - self.home_ned_m[0], sample[2] - self.home_ned_m[1])

    def touchdown_s(self) -> float:
        """When it came within 0.25 m of the lowest it got after its peak: the ground, as
        the estimate has it (v1.16-1.17 SIH's is up to ~1.2 m off home's)."""
        peak = max(self.samples, key=self.above_home_m)
        after = [s for s in self.samples if s[0] >= peak[0]]
        ground_m = min(self.above_home_m(s) for s in after)
        return next(s[0] for s in after if self.above_home_m(s) < ground_m + 0.25)

    def figures(self) -> dict[str, float]:
        peak = max(self.samples, key=self.above_home_m)
        start = self.samples[0]
        moved = next((s for s in self.samples if math.hypot(s[1] - start[1], s[2] - start[2])
                      > 1.0), start)  # fmt: skip
        lowering = next((s for s in self.samples if s[0] > peak[0]
                         and self.above_home_m(s) < self.above_home_m(peak) - 0.5), peak)
        last = self.samples[-1]
        return {
            "peak_m": round(self.above_home_m(peak), 2),
            "left_spot_s": round(moved[0], 2),
            "descending_from_m": round(self.from_home_m(lowering), 2),
            "touchdown_s": round(self.touchdown_s(), 2),
            "landed_from_home_m": round(self.from_home_m(last), 2),
        }


def check_return(track: ReturnTrack, case: ReturnCase, release: Release, *,
                 real_px4: bool = False) -> None:
    """What PX4 does (RtlDirect; measured on SIH main and v1.17.0), with the sim's slack."""
    f = track.figures()
    rules = rules_of(release, real_px4=real_px4)
    expect, slack_m = case.expect(release), rules.estimate_slack_m
    start = track.samples[0]
    climbs = expect.return_alt_m > case.up_m
    # Climbs to the return altitude (reached NAV_MC_ALT_RAD short), or keeps a higher one
    lowest = (expect.return_alt_m - NAV_MC_ALT_RAD_M if climbs else case.up_m) - 0.5 - slack_m
    assert lowest <= f["peak_m"] <= expect.return_alt_m + 0.7 + slack_m, (f, case)
    # ... on the spot: nothing toward home before it is up there
    if climbs:
        for s in track.samples:
            if track.above_home_m(s) > lowest:
                break
            assert math.hypot(s[1] - start[1], s[2] - start[2]) < 0.6 + slack_m / 4, (s, f)
    # Lands while still closing, from no farther than NAV_ACC_RAD out (v1.16-1.17: over home)
    assert rules.closing_m <= f["descending_from_m"] <= rules.nav_acc_rad_m + 0.5, f
    # On home (main's SIH within 0.05 m; release/1.18's estimate wanders, IMU noise while
    # thrusting: 0.44-1.09 m), and about when PX4 is
    assert f["landed_from_home_m"] < 1.5, f
    tolerance_s = rules.touchdown_share * expect.touchdown_s
    assert abs(f["touchdown_s"] - expect.touchdown_s) <= tolerance_s, (f, case)
    if case.params.get("RTL_LAND_DELAY", 0.0) > 0 and rules.land_delay_pinned:
        _check_land_delay(track, case)  # (elsewhere its touchdown is judged above)


def _check_land_delay(track: ReturnTrack, case: ReturnCase) -> None:
    """It waits over home at RTL_DESCEND_ALT (the return altitude if that is lower),
    RTL_LAND_DELAY from coming within NAV_ACC_RAD of home and NAV_MC_ALT_RAD of that
    altitude (PX4's loiter item counts from there: [SITL main] 5.9 s for 5)."""
    hold_m = min(case.params["RTL_DESCEND_ALT"], case.main.return_alt_m)
    delay_s, acceptance_m = case.params["RTL_LAND_DELAY"], MAIN_RULES.nav_acc_rad_m
    peak_m = max(track.above_home_m(s) for s in track.samples)
    after = track.samples[next(i for i, s in enumerate(track.samples)
                               if track.above_home_m(s) > peak_m - 0.1):]  # fmt: skip
    reached = next(s for s in after if track.from_home_m(s) <= acceptance_m
                   and track.above_home_m(s) <= hold_m + NAV_MC_ALT_RAD_M)  # fmt: skip
    waiting = [track.above_home_m(s) for s in after
               if reached[0] + 1.0 <= s[0] <= reached[0] + delay_s - 0.5]  # fmt: skip
    waited_m = statistics.median(waiting)
    assert abs(waited_m - hold_m) <= 0.3, (waited_m, hold_m)
    landing = next(s for s in after if s[0] > reached[0] + 1.0
                   and track.above_home_m(s) < waited_m - 0.3)  # fmt: skip
    assert delay_s <= landing[0] - reached[0] <= delay_s + 2.0, (reached, landing)
    # over home (not on the way in, up to NAV_ACC_RAD out): main within 0.05 m, release/1.18's
    # wandering estimate 0.52 m once (as at touchdown, check_return)
    assert track.from_home_m(landing) < 1.5, landing


async def fly_return(peer: Peer, case: ReturnCase) -> ReturnTrack:
    """Over home to `up_m`, `away_m` north, then AUTO.RTL until disarmed (PX4: params set
    by the caller)."""
    await peer.wait_for(is_local, 5)
    home = await home_now(peer)
    to = (peer.target_system, 1)
    north, down = home.ned_m[0], home.ned_m[2] - case.up_m
    await offboard_at(peer, north, down)
    await peer.wait_for(lambda m: is_local(m) and abs(m.z - down) < 0.3, 30)
    home = await home_now(peer)  # where it armed
    north = home.ned_m[0] + case.away_m
    peer.stream(lambda: position_sp(north=north, down=down, target=to))
    await peer.wait_for(lambda m: is_local(m) and abs(m.x - north) < 0.3 and abs(m.vx) < 0.2
                        and abs(m.z - down) < 0.3, 30)  # fmt: skip
    await asyncio.sleep(1.0)
    t0 = asyncio.get_running_loop().time()
    await land_and_disarm(peer, RTL, max(case.main.touchdown_s, case.v1_17.touchdown_s) * 1.5 + 10)
    track = ReturnTrack(home.ned_m)
    track.samples = [(t - t0, float(m.x), float(m.y), float(m.z))
                     for t, m in peer.of_type("LOCAL_POSITION_NED", t0)]  # fmt: skip
    return track
