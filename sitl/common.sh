# Sourced by the sitl/ scripts: find the repository and the offboardd command.
# OFFBOARDD overrides the command (e.g. OFFBOARDD="python3.11 -m offboardd").
sitl_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_dir="$(dirname "$sitl_dir")"
if [ -n "${OFFBOARDD:-}" ]; then
    read -r -a offboardd <<< "$OFFBOARDD"
elif [ -x "$repo_dir/.venv/bin/offboardd" ]; then
    offboardd=("$repo_dir/.venv/bin/offboardd")   # the checkout's venv (`make demo` / `make test`)
elif command -v offboardd >/dev/null 2>&1; then
    offboardd=(offboardd)
else
    echo "offboardd not found: run \`make demo\` in $repo_dir (it makes .venv) or set OFFBOARDD" >&2
    exit 2
fi
