#!/usr/bin/env bash
# Start a private single-node SLURM cluster (with accounting and one fake GPU) on 127.0.0.1.
#
# Usage (as root, after scripts/slurm/install.sh):
#   scripts/slurm/start.sh STATE_DIR        # STATE_DIR is created; must not hold a running cluster
#   source STATE_DIR/env.sh                 # exports SLURM_CONF, PATH (srun wrapper), LOCUS_SLURM_*
#   sinfo; sbatch --wrap hostname; snakemake --profile profiles/slurm ...
#   scripts/slurm/stop.sh STATE_DIR
#
# Daemons: munged (private socket), mariadbd (private datadir, TCP 127.0.0.1), slurmdbd,
# slurmctld, slurmd -- all with config, spool, logs and PID files under STATE_DIR, on free ports,
# so /etc/slurm, /etc/munge's socket and /var/lib/mysql are left alone. Partitions: "cpu"
# (default) and "gpu" (same node; the node has one fake GPU); account "locus" for user root.
# Every wait has a hard limit; on failure the log tails are printed, everything started so
# far is stopped (stop.sh, by PID file; LOCUS_KEEP_ON_FAIL=1 keeps it for debugging) and the
# exit status is 1.
# Optional: LOCUS_TEST_PARTITION / LOCUS_TEST_GPU_PARTITION / LOCUS_TEST_ACCOUNT (names),
# LOCUS_TEST_PORT_BASE (first port tried, default 16817; four consecutive free ports are used).
set -euo pipefail

STATE=${1:?usage: start.sh STATE_DIR}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PARTITION=${LOCUS_TEST_PARTITION:-cpu}
GPU_PARTITION=${LOCUS_TEST_GPU_PARTITION:-gpu}
ACCOUNT=${LOCUS_TEST_ACCOUNT:-locus}

[[ $(id -u) -eq 0 ]] || { echo "start.sh: must run as root" >&2; exit 1; }
for exe in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sbatch sacctmgr; do
  command -v "$exe" >/dev/null || [[ -x /usr/sbin/$exe ]] \
    || { echo "start.sh: $exe missing; run scripts/slurm/install.sh" >&2; exit 1; }
done
export PATH=$PATH:/usr/sbin

mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
if [[ -s $STATE/run/slurmctld.pid ]] && kill -0 "$(cat "$STATE/run/slurmctld.pid")" 2>/dev/null; then
  echo "start.sh: a cluster is already running in $STATE" >&2; exit 1
fi

fail() {
  trap - ERR
  echo "start.sh: $*" >&2
  for log in "$STATE"/log/*.log "$STATE"/mysql/error.log; do
    [[ -s $log ]] && { echo "--- tail of $log" >&2; tail -n 15 "$log" >&2; }
  done
  [[ -n ${LOCUS_KEEP_ON_FAIL:-} ]] || "$HERE/stop.sh" "$STATE" >&2 || true
  exit 1
}
# Any other failing command also stops what was started so far.
trap 'fail "command failed (line $LINENO)"' ERR
# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.1 s, fail after SECONDS.
wait_for() {
  local limit=$1 what=$2; shift 2
  local deadline=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    (( SECONDS < deadline )) || fail "timed out after ${limit}s waiting for $what"
    sleep 0.1
  done
}
port_free() { ! (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# free_port START: first port >= START that nobody listens on (callers chain START = previous + 1).
free_port() {
  local p=$1
  while ! port_free "$p"; do p=$((p + 1)); done
  echo "$p"
}

# The state dir must be traversable by the munge and mysql users (mktemp makes it 0700).
chmod 755 "$STATE"
mkdir -p "$STATE"/{etc,log,run,spool/slurmctld,spool/slurmd,munge,run/munge,run/mysqld,mysql}
chown munge:munge "$STATE/munge" "$STATE/run/munge"
chmod 700 "$STATE/munge"
chmod 755 "$STATE/run/munge"   # munged insists the socket dir is world-executable
chown mysql:mysql "$STATE/mysql" "$STATE/run/mysqld"

CTLD_PORT=$(free_port "${LOCUS_TEST_PORT_BASE:-16817}")
SLURMD_PORT=$(free_port $((CTLD_PORT + 1)))
DBD_PORT=$(free_port $((SLURMD_PORT + 1)))
MYSQL_PORT=$(free_port $((DBD_PORT + 1)))
NCPU=$(nproc)
MEM_MB=$(( $(awk '/MemTotal/{print $2}' /proc/meminfo) / 1024 / 2 ))

render() {
  sed -e "s|@STATE@|$STATE|g" -e "s|@CTLD_PORT@|$CTLD_PORT|g" -e "s|@SLURMD_PORT@|$SLURMD_PORT|g" \
      -e "s|@DBD_PORT@|$DBD_PORT|g" -e "s|@MYSQL_PORT@|$MYSQL_PORT|g" -e "s|@NCPU@|$NCPU|g" \
      -e "s|@MEM_MB@|$MEM_MB|g" -e "s|@PARTITION@|$PARTITION|g" \
      -e "s|@GPU_PARTITION@|$GPU_PARTITION|g" "$HERE/$1.in" > "$STATE/etc/$1"
}
render slurm.conf; render gres.conf; render slurmdbd.conf
chmod 600 "$STATE/etc/slurmdbd.conf"
export SLURM_CONF=$STATE/etc/slurm.conf

# munge: reuse the host key (created by the Debian package), private socket.
install -o munge -g munge -m 600 /etc/munge/munge.key "$STATE/munge/munge.key"
MUNGE_SOCKET=$STATE/run/munge/munge.socket
runuser -u munge -- munged --socket="$MUNGE_SOCKET" --pid-file="$STATE/run/munge/munged.pid" \
  --log-file="$STATE/munge/munged.log" --seed-file="$STATE/munge/seed" \
  --key-file="$STATE/munge/munge.key" || fail "munged did not start"
wait_for 10 munged bash -c "munge -S '$MUNGE_SOCKET' -n | unmunge -S '$MUNGE_SOCKET'"

# MariaDB: private datadir, only on 127.0.0.1:$MYSQL_PORT and a private socket.
MYSQL_SOCKET=$STATE/run/mysqld/mysqld.sock
mariadb-install-db --user=mysql --datadir="$STATE/mysql" --skip-test-db \
  --auth-root-authentication-method=socket > "$STATE/log/mariadb-install.log" 2>&1 \
  || fail "mariadb-install-db failed (see $STATE/log/mariadb-install.log)"
runuser -u mysql -- mariadbd --no-defaults --datadir="$STATE/mysql" --bind-address=127.0.0.1 \
  --port="$MYSQL_PORT" --socket="$MYSQL_SOCKET" --pid-file="$STATE/run/mysqld/mysqld.pid" \
  --log-error="$STATE/mysql/error.log" --skip-log-bin --innodb-buffer-pool-size=64M \
  > /dev/null 2>&1 &
wait_for 30 mariadbd test -S "$MYSQL_SOCKET"
mariadb --socket="$MYSQL_SOCKET" -e "
  CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurmpw';
  GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1'; FLUSH PRIVILEGES;" \
  || fail "could not create the slurm database user"

slurmdbd || fail "slurmdbd did not start"
wait_for 30 slurmdbd sacctmgr -n list cluster
slurmctld -f "$SLURM_CONF" || fail "slurmctld did not start"
slurmd -f "$SLURM_CONF" -N localhost || fail "slurmd did not start"
wait_for 30 "the node to become idle" bash -c "sinfo -h -o %T | grep -qx idle"
sacctmgr -i add account "$ACCOUNT" Description=locus-tests Organization=locus > /dev/null
sacctmgr -i add user root Account="$ACCOUNT" DefaultAccount="$ACCOUNT" > /dev/null
# slurmctld learns about new associations asynchronously; wait until a job may use the account.
wait_for 30 "account $ACCOUNT" bash -c "sacctmgr -n -P list assoc user=root account=$ACCOUNT | grep -q $ACCOUNT"

# The SLURM plugin's job step (snakemake-executor-plugin-slurm-jobstep 0.6) strips every SLURM_*
# variable except the job id before it calls `srun`, SLURM_CONF included, so srun inside a job
# would look for /etc/slurm/slurm.conf. A tiny srun wrapper first on PATH puts it back.
# (Production clusters use /etc/slurm or configless mode and are not affected.)
mkdir -p "$STATE/bin"
cat > "$STATE/bin/srun" <<WRAP
#!/bin/sh
# srun for the test cluster in $STATE (see start.sh): restores SLURM_CONF.
SLURM_CONF=$SLURM_CONF exec $(command -v srun) "\$@"
WRAP
chmod 755 "$STATE/bin/srun"

cat > "$STATE/env.sh" <<ENV
# Source me to talk to the test cluster in $STATE.
export SLURM_CONF=$SLURM_CONF
export PATH=$STATE/bin:\$PATH
export LOCUS_SLURM_PARTITION=$PARTITION
export LOCUS_SLURM_GPU_PARTITION=$GPU_PARTITION
export LOCUS_SLURM_ACCOUNT=$ACCOUNT
ENV
echo "start.sh: cluster up in $STATE (slurmctld port $CTLD_PORT); source $STATE/env.sh"
sinfo
