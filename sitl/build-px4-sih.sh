#!/usr/bin/env bash
# Build PX4's SIH SITL (software-in-the-loop, no Gazebo) in your PX4-Autopilot checkout,
# then say how to start it (see sitl/README.md).
#
#   sitl/build-px4-sih.sh [PX4_DIR]        # default: $PX4_DIR or ~/PX4-Autopilot
#
# The checkout is PX4's own, with its submodules (git clone --recursive
# https://github.com/PX4/PX4-Autopilot.git; a release: git checkout v1.16.0 && git submodule
# update --init --recursive), and its toolchain installed as PX4's documentation describes
# (Tools/setup/ubuntu.sh --no-sim-tools is enough for SIH). This runs PX4's standard target,
# `make px4_sitl_default`, with one job per core (two cores: about 8 minutes).
set -euo pipefail
px4_dir="${1:-${PX4_DIR:-$HOME/PX4-Autopilot}}"
[ -f "$px4_dir/Makefile" ] && [ -d "$px4_dir/ROMFS" ] && [ -d "$px4_dir/src/modules/commander" ] || {
    echo "no PX4-Autopilot checkout at $px4_dir (give its path, or set PX4_DIR)" >&2
    exit 2
}
[ -f "$px4_dir/src/modules/mavlink/mavlink/message_definitions/v1.0/common.xml" ] || {
    echo "$px4_dir has no submodules: run 'git submodule update --init --recursive' there" >&2
    exit 2
}
jobs="$(nproc 2>/dev/null || echo 2)"
cd "$px4_dir"
make px4_sitl_default -j"$jobs"
build="$px4_dir/build/px4_sitl_default"
[ -x "$build/bin/px4" ] || { echo "the build did not produce $build/bin/px4" >&2; exit 1; }
version="$(git -C "$px4_dir" describe --tags --always 2>/dev/null || echo unknown)"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cat <<MSG
Built PX4 $version SITL in $build

Start the SIH quadrotor headless (instance 0: PX4 sends to udp 127.0.0.1:14540):
  PX4_SITL=$build $here/start-px4.sh 0
Fly offboardd against it (another terminal):
  $here/run-daemon.sh --with-broker
  $here/fly-scenario.sh
Or run offboardd's real-PX4 test tier against it:
  make test-px4 PX4_SITL=$build
MSG
