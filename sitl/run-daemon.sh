#!/usr/bin/env bash
# Run offboardd against PX4 SITL on this machine (see sitl/README.md).
#
#   sitl/run-daemon.sh [--with-broker] [extra `offboardd run` arguments]
#
# Uses config/sitl.toml (PX4's onboard link -> udpin://127.0.0.1:14540, broker
# 127.0.0.1:1883, vehicle id "sitl"); OFFBOARDD_CONFIG=FILE picks another file.
# --with-broker also starts a private mosquitto on the configured loopback port for as long
# as the daemon runs (when none is listening there already). Ctrl-C stops both; the daemon
# releases the vehicle to Hold first if it was flying it.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
config="${OFFBOARDD_CONFIG:-$repo_dir/config/sitl.toml}"
with_broker=0
if [ "${1:-}" = "--with-broker" ]; then with_broker=1; shift; fi

checked="$("${offboardd[@]}" check-config "$config")"
echo "$checked"
# the broker the config names (check-config prints "broker HOST:PORT"), to say (or fix)
# at once what would otherwise be silent retries
broker="$(sed -n 's/.*broker \([^,]*\):\([0-9]*\),.*/\1 \2/p' <<< "$checked")"
read -r host port <<< "${broker:-127.0.0.1 1883}"
listening() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

broker_pid=""
if ! listening; then
    if [ "$with_broker" = 1 ]; then
        case "$host" in 127.*|localhost) ;; *)
            echo "--with-broker starts a loopback broker only; the config names $host" >&2; exit 2;;
        esac
        mosquitto_bin="$(command -v mosquitto || echo /usr/sbin/mosquitto)"
        [ -x "$mosquitto_bin" ] || { echo "mosquitto is not installed: sudo apt-get install mosquitto" >&2; exit 2; }
        broker_conf="$(mktemp)"
        printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nset_tcp_nodelay true\n' "$port" > "$broker_conf"
        "$mosquitto_bin" -c "$broker_conf" &
        broker_pid=$!
        trap 'kill "$broker_pid" 2>/dev/null; wait "$broker_pid" 2>/dev/null; rm -f "$broker_conf"' EXIT
        for _ in $(seq 50); do listening && break; sleep 0.1; done
        listening || { echo "mosquitto did not start on 127.0.0.1:$port" >&2; exit 1; }
    else
        echo "warning: no MQTT broker on $host:$port yet; offboardd retries until one answers" \
             "(start one, or use --with-broker)" >&2
    fi
fi

# Not exec: the EXIT trap must stop the broker after the daemon. The daemon runs in the
# background, where a script's children ignore the terminal's Ctrl-C, so Ctrl-C and
# SIGTERM both reach it as SIGTERM: it releases the vehicle if it flies it, then exits.
"${offboardd[@]}" run --config "$config" "$@" &
daemon_pid=$!
trap 'kill -TERM "$daemon_pid" 2>/dev/null || true' TERM INT
while true; do
    status=0
    wait "$daemon_pid" || status=$?
    kill -0 "$daemon_pid" 2>/dev/null || break   # else a signal interrupted the wait
done
exit "$status"
