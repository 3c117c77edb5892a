#!/usr/bin/env bash
# Install the Debian packages of a single-node SLURM cluster (with accounting), when missing.
#
# Usage (as root, Debian 12 / Ubuntu):  scripts/slurm/install.sh
#
# Installs munge, slurmctld, slurmd, slurm-client, slurmdbd and mariadb-server with apt-get,
# without recommends, and only those not yet installed (a second call is a no-op).
# The packages' postinst scripts try to start services; in a container without an init system
# they print "policy-rc.d denied execution of start", which is harmless: scripts/slurm/start.sh
# starts the daemons itself, in a private state directory.
# Exit status: 0 when everything is installed, 1 when it cannot be (not root, no apt-get, no network).
set -euo pipefail

PACKAGES=(munge slurmctld slurmd slurm-client slurmdbd mariadb-server)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
if [[ ${#missing[@]} -eq 0 ]]; then
  echo "install.sh: SLURM packages already installed"
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  echo "install.sh: need root to install: ${missing[*]}" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null; then
  echo "install.sh: apt-get not found; install by hand: ${missing[*]}" >&2
  exit 1
fi

echo "install.sh: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
