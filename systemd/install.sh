#!/usr/bin/env bash
# Install offboardd as a systemd service on a Raspberry Pi, a Jetson or any systemd Linux:
#   a system user `offboardd` in the serial groups, a virtualenv in /opt/offboardd/venv with
#   offboardd from the checkout this script sits in, /etc/offboardd/offboardd.toml (only if
#   absent: your edits are kept), the unit in /etc/systemd/system, then enable + start.
# Re-runnable: every step checks what is already there.
set -euo pipefail

usage() {
    cat <<'EOF'
usage: sudo systemd/install.sh [options]

Installs offboardd from this checkout as the systemd service `offboardd`.

options:
  --python PYTHON          interpreter for the virtualenv (>= 3.11); default: the newest of
                           python3.13, python3.12, python3.11, python3 found on PATH
  --root DIR               install into DIR as if it were / (for tests and image builds):
                           files are written, but useradd/usermod/chown/systemctl are only
                           printed as skipped
  --no-deps                install offboardd alone, offline: its wheel is built with
                           PYTHON's own setuptools and wheel (no download) and its
                           dependencies are not installed (they must already be importable,
                           e.g. with --system-site-packages); `offboardd --version` works
                           without them. Meant for tests and offline re-installs.
  --system-site-packages   let the virtualenv see the interpreter's own packages
                           (Debian's python3-serial, python3-paho-mqtt...)
  --no-start               enable the service but do not (re)start it
  -h, --help               show this help

After installing: edit /etc/offboardd/offboardd.toml, put OFFBOARDD_MQTT_PASSWORD=... in
/etc/offboardd/env if the broker needs one, then check the deployment (the doctor needs the
flight controller's link for itself while it runs):
  sudo systemctl stop offboardd
  sudo /opt/offboardd/venv/bin/offboardd doctor --config /etc/offboardd/offboardd.toml
  sudo systemctl start offboardd
EOF
}

say() { printf 'offboardd install: %s\n' "$*"; }
skip() { printf 'offboardd install: skipped (--root): %s\n' "$*"; }
die() { printf 'offboardd install: error: %s\n' "$*" >&2; exit 1; }

ROOT=""
PYTHON=""
NO_DEPS=0
SYSTEM_SITE=0
START=1
while [ $# -gt 0 ]; do
    case "$1" in
        --root) [ $# -ge 2 ] || die "--root needs a directory"; ROOT="${2%/}"; shift 2 ;;
        --root=*) ROOT="${1#--root=}"; ROOT="${ROOT%/}"; shift ;;
        --python) [ $# -ge 2 ] || die "--python needs an interpreter"; PYTHON="$2"; shift 2 ;;
        --python=*) PYTHON="${1#--python=}"; shift ;;
        --no-deps) NO_DEPS=1; shift ;;
        --system-site-packages) SYSTEM_SITE=1; shift ;;
        --no-start) START=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; die "unknown option: $1" ;;
    esac
done

SRC="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
SERVICE_USER=offboardd
OPT_DIR="$ROOT/opt/offboardd"
VENV="$OPT_DIR/venv"
ETC_DIR="$ROOT/etc/offboardd"
UNIT_DIR="$ROOT/etc/systemd/system"
UNIT="offboardd.service"

[ -f "$SRC/pyproject.toml" ] && [ -d "$SRC/offboardd" ] \
    || die "$SRC does not look like an offboardd checkout (no pyproject.toml / offboardd/)"
[ -f "$SRC/systemd/$UNIT" ] || die "missing $SRC/systemd/$UNIT"
[ -f "$SRC/config/offboardd.toml" ] || die "missing $SRC/config/offboardd.toml"
if [ -z "$ROOT" ] && [ "$(id -u)" -ne 0 ]; then
    die "run as root (sudo $0), or use --root DIR to install into a scratch directory"
fi
if [ -n "$ROOT" ]; then
    mkdir -p "$ROOT"
    ROOT="$(cd "$ROOT" && pwd)"
    OPT_DIR="$ROOT/opt/offboardd"; VENV="$OPT_DIR/venv"
    ETC_DIR="$ROOT/etc/offboardd"; UNIT_DIR="$ROOT/etc/systemd/system"
    say "installing into scratch root $ROOT"
fi

# --- the interpreter -------------------------------------------------------------------
python_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; }
if [ -z "$PYTHON" ]; then
    for candidate in python3.13 python3.12 python3.11 python3; do
        if command -v "$candidate" >/dev/null 2>&1 && python_ok "$candidate"; then
            PYTHON="$candidate"; break
        fi
    done
    [ -n "$PYTHON" ] || die "no Python >= 3.11 found. Raspberry Pi OS Bookworm ships 3.11;
  on JetPack 6 / Ubuntu 22.04 (3.10): sudo add-apt-repository ppa:deadsnakes/ppa &&
  sudo apt install python3.11 python3.11-venv, then re-run with --python python3.11"
fi
command -v "$PYTHON" >/dev/null 2>&1 || die "--python $PYTHON: not found"
python_ok "$PYTHON" || die "$PYTHON is $("$PYTHON" -V 2>&1); offboardd needs Python >= 3.11"
"$PYTHON" -c 'import venv, ensurepip' 2>/dev/null \
    || die "$PYTHON cannot create virtualenvs: install its venv module (e.g. apt install python3.11-venv)"
say "using $("$PYTHON" -V 2>&1) ($(command -v "$PYTHON"))"

# --- the service user ------------------------------------------------------------------
# dialout owns the UARTs and USB serial adapters; a Jetson's /dev/ttyTHS* may belong to
# another group (tty on older L4T): join whatever group owns them.
GROUPS_WANTED="dialout"
for tty_ths in /dev/ttyTHS*; do
    [ -c "$tty_ths" ] || continue
    owner_group="$(stat -c %G "$tty_ths")"
    case ",$GROUPS_WANTED,root," in  # already wanted, or root (nothing to join)
        *",$owner_group,"*) ;;
        *) GROUPS_WANTED="$GROUPS_WANTED,$owner_group" ;;
    esac
done
if [ -n "$ROOT" ]; then
    skip "useradd --system --user-group $SERVICE_USER; usermod -aG $GROUPS_WANTED $SERVICE_USER"
else
    if id -u "$SERVICE_USER" >/dev/null 2>&1; then
        say "user $SERVICE_USER exists"
    else
        say "creating system user $SERVICE_USER"
        # its own group, or the one a previous (half-undone) install left behind
        group_args=(--user-group)
        getent group "$SERVICE_USER" >/dev/null && group_args=(--gid "$SERVICE_USER")
        useradd --system "${group_args[@]}" --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin --comment "offboardd daemon" "$SERVICE_USER"
    fi
    for group in ${GROUPS_WANTED//,/ }; do
        if getent group "$group" >/dev/null; then
            usermod -aG "$group" "$SERVICE_USER"
        else
            say "group $group does not exist here; skipped"
        fi
    done
fi

# --- the virtualenv --------------------------------------------------------------------
want_version="$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ -x "$VENV/bin/python" ]; then
    have_version="$("$VENV/bin/python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' \
        2>/dev/null || echo broken)"
    if [ "$have_version" != "$want_version" ]; then
        say "virtualenv has Python $have_version, want $want_version: recreating it"
        rm -rf "$VENV"
    fi
fi
venv_args=()
[ "$SYSTEM_SITE" -eq 1 ] && venv_args+=(--system-site-packages)
# --no-deps: no pip inside the venv (seeding it takes most of the time); PYTHON's pip
# installs into it with --python. A later full install seeds pip with ensurepip.
[ "$NO_DEPS" -eq 1 ] && venv_args+=(--without-pip)
if [ -x "$VENV/bin/python" ]; then
    say "virtualenv $VENV exists"
else
    say "creating virtualenv $VENV"
    mkdir -p "$OPT_DIR"
    "$PYTHON" -m venv ${venv_args[@]+"${venv_args[@]}"} "$VENV"
fi
if [ "$NO_DEPS" -eq 0 ] && ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then
    "$VENV/bin/python" -m ensurepip --upgrade >/dev/null
fi
venv_pip() {
    if [ "$NO_DEPS" -eq 1 ]; then
        "$PYTHON" -m pip --python "$VENV/bin/python" "$@"
    else
        "$VENV/bin/python" -m pip "$@"
    fi
}
# The unit runs with ProtectHome=yes: an interpreter under /home or /root (pyenv's and
# uv's defaults) is invisible to the service and it would fail with status 203/EXEC.
real_python="$(readlink -f "$VENV/bin/python")"
case "$real_python" in
    /home/*|/root/*|/run/user/*)
        message="the virtualenv's interpreter is $real_python, which the service cannot see
  (ProtectHome=yes). Use a Python outside /home and /root: Debian's, deadsnakes', or uv's
  installed with UV_PYTHON_INSTALL_DIR=/opt/offboardd/python uv python install 3.11"
        if [ -n "$ROOT" ]; then say "warning: $message"; else die "$message"; fi ;;
esac

# Build from a copy of the sources, so the checkout gets no build/ or egg-info litter.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/dist"
cp -R "$SRC/pyproject.toml" "$SRC/offboardd" "$work/src/"
[ -f "$SRC/README.md" ] && cp "$SRC/README.md" "$work/src/"
find "$work/src" -name __pycache__ -prune -exec rm -rf {} +
if [ "$NO_DEPS" -eq 1 ]; then
    "$PYTHON" -c 'import setuptools, wheel' 2>/dev/null || die "--no-deps builds offline with \
$PYTHON's own setuptools and wheel: install them (pip install wheel / apt install python3-wheel)"
    say "building offboardd (offline, no dependencies)"
    "$PYTHON" -m pip wheel --quiet --no-deps --no-build-isolation --no-index \
        -w "$work/dist" "$work/src"
else
    say "building offboardd"
    "$VENV/bin/python" -m pip wheel --quiet --no-deps -w "$work/dist" "$work/src"
fi
wheel_file="$(ls "$work"/dist/offboardd-*.whl)"
say "installing $(basename "$wheel_file") into $VENV"
venv_pip install --quiet --no-index --no-deps --force-reinstall "$wheel_file"
if [ "$NO_DEPS" -eq 0 ]; then
    say "installing its dependencies (pymavlink, pyserial, aiomqtt, structlog)"
    "$VENV/bin/python" -m pip install --quiet "$wheel_file"
fi
"$VENV/bin/offboardd" --version >/dev/null || die "$VENV/bin/offboardd does not run"
say "installed $("$VENV/bin/offboardd" --version)"

# --- configuration ---------------------------------------------------------------------
# root owns it (the service cannot rewrite its own limits), the service's group reads it,
# nobody else does (it may hold the broker password).
set_owner() {  # path mode
    chmod "$2" "$1"
    if [ -n "$ROOT" ]; then
        skip "chown root:$SERVICE_USER $1"
    else
        chown "root:$SERVICE_USER" "$1"
    fi
}
mkdir -p "$ETC_DIR"
set_owner "$ETC_DIR" 0750
if [ -e "$ETC_DIR/offboardd.toml" ]; then
    say "keeping existing $ETC_DIR/offboardd.toml"
else
    say "writing $ETC_DIR/offboardd.toml (edit mavlink.url and [mqtt] for this vehicle)"
    cp "$SRC/config/offboardd.toml" "$ETC_DIR/offboardd.toml"
fi
set_owner "$ETC_DIR/offboardd.toml" 0640
if [ ! -e "$ETC_DIR/env" ]; then
    say "writing $ETC_DIR/env (secrets for the service's environment)"
    printf '%s\n' "# Read by offboardd.service (EnvironmentFile=). Keep it 0640 root:offboardd." \
        "# OFFBOARDD_MQTT_PASSWORD=" > "$ETC_DIR/env"
fi
set_owner "$ETC_DIR/env" 0640

# --- the unit --------------------------------------------------------------------------
mkdir -p "$UNIT_DIR"
if [ -f "$UNIT_DIR/$UNIT" ] && cmp -s "$SRC/systemd/$UNIT" "$UNIT_DIR/$UNIT"; then
    say "$UNIT_DIR/$UNIT is up to date"
else
    say "installing $UNIT_DIR/$UNIT"
    install -m 0644 "$SRC/systemd/$UNIT" "$UNIT_DIR/$UNIT"
fi

if [ -n "$ROOT" ]; then
    skip "systemctl daemon-reload; systemctl enable offboardd; systemctl restart offboardd"
else
    systemctl daemon-reload
    systemctl enable "$UNIT" >/dev/null
    say "enabled $UNIT"
    if [ "$START" -eq 1 ]; then
        systemctl restart "$UNIT"
        say "started $UNIT: systemctl status offboardd; journalctl -u offboardd -f"
    fi
fi
say "done. Check the deployment (stop the service first: the doctor needs the link):"
say "  sudo systemctl stop offboardd"
say "  sudo /opt/offboardd/venv/bin/offboardd doctor --config /etc/offboardd/offboardd.toml"
say "  sudo systemctl start offboardd"
