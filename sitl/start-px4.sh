#!/usr/bin/env bash
# Start PX4 SITL from your PX4-Autopilot checkout (see sitl/README.md).
#
#   PX4_DIR=~/PX4-Autopilot sitl/start-px4.sh [gz|sih]
#
# gz  (default): Gazebo with the x500 quadrotor, `make px4_sitl gz_x500`
# sih:           PX4's built-in simulator (SIH), no Gazebo needed, `make px4_sitl sihsim_quadx`
# HEADLESS=1 runs Gazebo without its window. Both send the onboard link to UDP 14540,
# where config/sitl.toml listens.
set -euo pipefail
px4_dir="${PX4_DIR:-$HOME/PX4-Autopilot}"
[ -f "$px4_dir/Makefile" ] && [ -d "$px4_dir/ROMFS" ] || {
    echo "no PX4-Autopilot checkout at $px4_dir: set PX4_DIR (git clone --recursive" \
         "https://github.com/PX4/PX4-Autopilot.git)" >&2
    exit 2
}
case "${1:-gz}" in
    gz) target=gz_x500 ;;
    sih) target=sihsim_quadx ;;
    *) echo "usage: $0 [gz|sih]" >&2; exit 2 ;;
esac
cd "$px4_dir"
exec make px4_sitl "$target"
