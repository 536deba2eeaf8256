#!/usr/bin/env bash
# Start PX4 SITL headless on loopback (see sitl/README.md).
#
#   PX4_SITL=<build dir> sitl/start-px4.sh [INSTANCE] [WORKDIR]   # a built SIH quadrotor
#   PX4_DIR=~/PX4-Autopilot sitl/start-px4.sh gz|sih               # build and run from a checkout
#
# With PX4_SITL (a PX4 SITL build directory: bin/px4 and etc/, e.g.
# PX4-Autopilot/build/px4_sitl_default, or the output of sitl/build-px4-sih.sh) it runs the
# SIH quadrotor (airframe 10040 sihsim_quadx, no Gazebo) as instance N (default 0):
#   onboard/API link: PX4 sends from UDP 14580+N to 127.0.0.1:14540+N (offboardd listens)
#   GCS link:         PX4 sends from UDP 18570+N to 127.0.0.1:14550 (QGroundControl)
#   MAVLink system id N+1.
# WORKDIR (default: a fresh temporary directory) keeps parameters and logs; a fresh one is a
# freshly booted vehicle with default parameters. PX4 runs in the foreground; Ctrl-C or
# SIGTERM stops it. It reports "Ready for takeoff!" once its estimator has converged.
#
# With PX4_DIR and gz|sih it runs PX4's own `make px4_sitl gz_x500` / `sihsim_quadx`
# (HEADLESS=1 runs Gazebo without its window).
set -euo pipefail

if [ -n "${PX4_SITL:-}" ]; then
    build="$(cd "$PX4_SITL" && pwd)"
    inst="${1:-0}"
    work="${2:-$(mktemp -d /tmp/px4-sih.XXXXXX)}"
    [ -x "$build/bin/px4" ] && [ -f "$build/etc/init.d-posix/rcS" ] || {
        echo "PX4_SITL=$PX4_SITL is not a PX4 SITL build (no bin/px4 or etc/init.d-posix/rcS)" >&2
        exit 2
    }
    case "$inst" in ''|*[!0-9]*) echo "INSTANCE must be a number, not '$inst'" >&2; exit 2;; esac
    bin="$build/bin"
    # PX4's startup script runs each module through a px4-<module> link beside the binary.
    # A copied build whose links became plain files gets a private bin dir with real links.
    if [ ! -L "$bin/px4-param" ] && [ ! -x "$bin/px4-param" ]; then
        private="$(mktemp -d /tmp/px4-bin.XXXXXX)"
        cp "$bin/px4" "$private/"
        cp "$bin"/*.sh "$private/" 2>/dev/null || true
        for f in "$bin"/px4-*; do
            name="$(basename "$f")"
            case "$name" in *.sh) ;; *) [ -e "$private/$name" ] || ln -s px4 "$private/$name";; esac
        done
        bin="$private"
    fi
    mkdir -p "$work" && cd "$work"
    echo "PX4 SIH instance $inst (system $((inst + 1))) in $work:" \
         "onboard link 14580+$inst -> 127.0.0.1:$((14540 + inst)), GCS 18570+$inst -> :14550" >&2
    export PX4_SIM_MODEL=sihsim_quadx PX4_SIMULATOR=sihsim
    exec "$bin/px4" -i "$inst" -d "$build/etc"
fi

px4_dir="${PX4_DIR:-$HOME/PX4-Autopilot}"
[ -f "$px4_dir/Makefile" ] && [ -d "$px4_dir/ROMFS" ] || {
    echo "set PX4_SITL=<PX4 SITL build dir>, or PX4_DIR=<PX4-Autopilot checkout> (git clone" \
         "--recursive https://github.com/PX4/PX4-Autopilot.git); see sitl/README.md" >&2
    exit 2
}
case "${1:-gz}" in
    gz) target=gz_x500 ;;
    sih) target=sihsim_quadx ;;
    *) echo "usage: $0 [gz|sih]   (or PX4_SITL=<build dir> $0 [INSTANCE] [WORKDIR])" >&2; exit 2 ;;
esac
cd "$px4_dir"
exec make px4_sitl "$target"
