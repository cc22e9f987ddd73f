#!/usr/bin/env bash
# Installs Debian's Chromium for the visualizer's end-to-end tests (playwright-core drives it with
# executablePath /usr/bin/chromium; it never downloads a browser of its own). Idempotent: does
# nothing when Chromium is already there. Needs root (CI and the dev machines run as root).
set -euo pipefail
CHROMIUM="${CHROMIUM_PATH:-/usr/bin/chromium}"
if [ -x "$CHROMIUM" ]; then
  echo "chromium: $("$CHROMIUM" --version 2>/dev/null || echo present) at $CHROMIUM"
  exit 0
fi
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
# Another apt run (a teammate's install) holds the lock for a while: wait for it, not fail.
$SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq
$SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends chromium fonts-dejavu-core
echo "chromium: $("$CHROMIUM" --version) at $CHROMIUM"
