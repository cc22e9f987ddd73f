#!/usr/bin/env bash
# Makes this machine look like the OpenStack controller cyborg's api and conductor are deployed on:
# Debian's keystone, placement-api and nova-api packages installed, their units in
# /lib/systemd/system, their services NOT started (issue 45: the suite must pass there, not only on a
# bare machine). Idempotent: does nothing when the three are installed. Needs root.
#
# Installing them must not disturb what already runs here: the Keystone (15001) and Placement (8778)
# peers of ../shared/peers, and the tests of whoever shares the machine. So:
# - /usr/sbin/policy-rc.d answers 101 during the install: invoke-rc.d and deb-systemd-invoke start
#   nothing (no keystone on 5000, no placement-api taking 8778 from the peer, no nova-api on 8774);
# - debconf is told not to configure a database (dbconfig-common), bootstrap an admin or register
#   endpoints: the postinsts touch no PostgreSQL, MariaDB or Keystone of ours;
# - the peers read only their own state directories (OS_KEYSTONE_CONFIG_FILES, OS_PLACEMENT_CONFIG_DIR),
#   not the /etc/keystone, /etc/placement, /etc/nova these packages write.
set -euo pipefail
PKGS=(keystone placement-api nova-api)
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q 'install ok installed'; }
MISSING=()
for p in "${PKGS[@]}"; do installed "$p" || MISSING+=("$p"); done
if [ "${#MISSING[@]}" -eq 0 ]; then
  echo "controller packages: ${PKGS[*]} installed"
  exit 0
fi
[ "$(id -u)" = 0 ] || { echo "install-controller-packages.sh: must run as root (apt-get install)" >&2; exit 1; }

POLICY=/usr/sbin/policy-rc.d
SAVED=""
if [ -e "$POLICY" ]; then
  SAVED="$(mktemp)"
  cp -p "$POLICY" "$SAVED"
fi
restore() {
  if [ -n "$SAVED" ]; then cp -p "$SAVED" "$POLICY" && rm -f "$SAVED"; else rm -f "$POLICY"; fi
}
trap restore EXIT
printf '#!/bin/sh\n# install-controller-packages.sh: start no service while it installs\nexit 101\n' >"$POLICY"
chmod 755 "$POLICY"

debconf-set-selections <<'EOF'
keystone keystone/configure_db boolean false
keystone keystone/create-admin-tenant boolean false
keystone keystone/register-endpoint boolean false
placement-common placement/configure_db boolean false
placement-common placement/configure_ksat boolean false
placement-api placement/configure_api-endpoint boolean false
nova-common nova/configure_db boolean false
nova-common nova/configure_rabbit boolean false
nova-common nova/configure_placement boolean false
nova-common nova/configure_neutron boolean false
nova-common nova/configure_ksat boolean false
nova-api novaapi/configure_db boolean false
nova-api nova/configure_api-endpoint boolean false
EOF

export DEBIAN_FRONTEND=noninteractive
# Another apt run (a teammate's install) holds the lock for a while: wait for it, not fail.
APT=(apt-get -o DPkg::Lock::Timeout=600 -y -q --no-install-recommends -o Dpkg::Options::=--force-confold)
LOG=/tmp/cyborg-controller-packages.log
if ! "${APT[@]}" install "${MISSING[@]}" >"$LOG" 2>&1; then
  apt-get -o DPkg::Lock::Timeout=600 -q update >>"$LOG" 2>&1 || true
  "${APT[@]}" install "${MISSING[@]}" >>"$LOG" 2>&1 || { echo "apt-get install ${MISSING[*]} failed; see $LOG" >&2; exit 1; }
fi
for p in "${PKGS[@]}"; do installed "$p" || { echo "$p did not install; see $LOG" >&2; exit 1; }; done
echo "controller packages: ${PKGS[*]} installed (services not started; log in $LOG)"
