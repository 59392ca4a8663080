#!/usr/bin/env bash
# Installs the Debian packages invokit's tests and sandbox use, when they are missing.
# As root it runs apt-get; otherwise it says exactly what to install and continues, since
# the tests that need a package skip with that reason.
set -euo pipefail
missing=()
for pkg in "$@"; do
  case "$pkg" in
    bubblewrap) cmd=bwrap ;;
    ripgrep) cmd=rg ;;
    chromium) cmd=chromium ;;  # the inbox's browser tests drive it with Playwright
    *) cmd=$pkg ;;
  esac
  if [ "$pkg" = libseccomp2 ]; then
    # A library, not a command: the CPython compose runtime's seccomp filters load it.
    ldconfig -p 2>/dev/null | grep -q 'libseccomp\.so\.2' || missing+=("$pkg")
    continue
  fi
  if [ "$pkg" = postgresql ]; then
    # The server binaries are not on PATH: Debian keeps them in /usr/lib/postgresql/<ver>/bin.
    compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=("$pkg")
    continue
  fi
  command -v "$cmd" >/dev/null 2>&1 || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "warning: missing Debian packages: ${missing[*]}" >&2
  echo "  install them with: sudo apt-get install ${missing[*]}" >&2
  echo "  (tests that need them will be skipped with this reason)" >&2
fi
