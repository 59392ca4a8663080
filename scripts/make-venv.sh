#!/usr/bin/env bash
# Creates the virtual environment at $2 with the interpreter $1. Debian's Python needs the
# pythonX.Y-venv package for that; as root this installs it, otherwise it says what to install.
set -euo pipefail
python=$1
venv=$2
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' || {
  echo "invokit needs Python >= 3.11 (found: $("$python" --version 2>&1))" >&2
  exit 1
}
[ -x "$venv/bin/python" ] && "$venv/bin/python" -m pip --version >/dev/null 2>&1 && exit 0
rm -rf "$venv"
if "$python" -m venv "$venv" 2>/dev/null; then
  exit 0
fi
rm -rf "$venv"
package="python$("$python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')-venv"
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian package $package (needed to create a virtual environment)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "$package" >/dev/null || \
    apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
  "$python" -m venv "$venv"
else
  echo "error: $python cannot create a virtual environment." >&2
  echo "  install it with: sudo apt-get install $package   (or python3-venv)" >&2
  exit 1
fi
