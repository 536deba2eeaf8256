#!/usr/bin/env bash
# Fly the demo mission through offboardd over MQTT: takeoff, a square, a velocity leg,
# release, land (see sitl/README.md). Works with any broker and vehicle id.
#
#   sitl/fly-scenario.sh [--broker HOST:PORT] [--vehicle ID] [--mission square|short]
#                        [--json FILE] [--ready-timeout S]
#
# Defaults: broker 127.0.0.1:1883, vehicle "sitl" (config/sitl.toml), mission square;
# OFFBOARDD_BROKER / OFFBOARDD_VEHICLE set other defaults. The password, if the broker
# needs one, comes from OFFBOARDD_MQTT_PASSWORD. Exit status: 0 the mission completed,
# 1 it failed (the runner asked for a landing unless a pilot had taken over), 2 usage,
# 4 broker unreachable, 130 Ctrl-C.
#
# It ARMS AND FLIES the vehicle the daemon is connected to: in SITL that is the point;
# on a real vehicle only with a safety pilot and room for an 8 m square at 5 m.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
exec "${offboardd[@]}" scenario --broker "${OFFBOARDD_BROKER:-127.0.0.1:1883}" \
    --vehicle "${OFFBOARDD_VEHICLE:-sitl}" "$@"
