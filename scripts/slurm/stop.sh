#!/usr/bin/env bash
# Stop the test cluster started by scripts/slurm/start.sh STATE_DIR.
#
# Usage: scripts/slurm/stop.sh STATE_DIR
#
# Cancels the cluster's remaining jobs, then stops each daemon by the PID file in STATE_DIR/run
# (never by process name): SIGTERM, wait up to 10 s, then SIGKILL. A PID is only signalled when
# /proc/PID/exe is the expected daemon, so a stale PID file cannot hit an unrelated process.
# Safe to call twice and on a half-started cluster. The state dir itself is left in place.
set -uo pipefail
STATE=${1:?usage: stop.sh STATE_DIR}
export PATH=$PATH:/usr/sbin

if [[ -f $STATE/etc/slurm.conf && -s $STATE/run/slurmctld.pid ]]; then
  export SLURM_CONF=$STATE/etc/slurm.conf
  timeout 10 scancel --quiet --user=root 2>/dev/null || true
fi

stop_pidfile() {   # stop_pidfile FILE EXE_NAME
  local pf=$1 name=$2 pid exe
  [[ -s $pf ]] || return 0
  pid=$(cat "$pf")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  exe=$(readlink "/proc/$pid/exe" 2>/dev/null) || { rm -f "$pf"; return 0; }
  # Debian installs slurmd/slurmctld as slurmd-wlm/slurmctld-wlm (alternatives), hence the prefix match.
  [[ $(basename "$exe") == "$name"* ]] || { echo "stop.sh: $pf points at $exe, not $name; skipped" >&2; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || { rm -f "$pf"; return 0; }; sleep 0.1; done
  echo "stop.sh: $name (pid $pid) ignored SIGTERM for 10 s; sending SIGKILL" >&2
  kill -KILL "$pid" 2>/dev/null || true
  rm -f "$pf"
}
stop_pidfile "$STATE/run/slurmd.pid" slurmd
stop_pidfile "$STATE/run/slurmctld.pid" slurmctld
stop_pidfile "$STATE/run/slurmdbd.pid" slurmdbd
stop_pidfile "$STATE/run/mysqld/mysqld.pid" mariadbd
stop_pidfile "$STATE/run/munge/munged.pid" munged
exit 0
