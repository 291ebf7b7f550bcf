#!/usr/bin/env bash
# A single-node SLURM on localhost for the executor tests.
#
# Usage: scripts/slurm_local.sh up|down|status|clean
#   up      install slurm and munge if missing, write the config, start the
#           daemons, wait until the node takes jobs (does nothing if already up)
#   down    stop slurmd, slurmctld, slurmdbd, the accounting database, munged
#   status  print sinfo and squeue; exit 0 if the cluster is up and usable
#   clean   down, then delete job state, accounting data and logs
#           (job ids start again at 1)
#
# Needs root and apt-get (Debian 12: slurm 22.05). No systemd needed: the
# daemons are started directly; slurm's daemons run as root.
#
# Settings (environment):
#   SLURM_LOCAL_ACCOUNTING=1   1: run slurmdbd on a private MariaDB, so that
#                              `sacct` reports job states; 0: no accounting
#                              (plain `sacct` then fails; `sacct -c` lists
#                              finished jobs from the job completion file)
#   SLURM_LOCAL_REQUEUE_DELAY=10  seconds before a requeued job may start
#                              again (slurm's credential lifetime: default 120,
#                              minimum 5)
#   SLURM_LOCAL_DIR=/var/spool/slurm-local   state, logs, pid files, database
#   SLURM_LOCAL_TIMEOUT=60     seconds to wait for the node to come up
set -euo pipefail

CONF=/etc/slurm/slurm.conf          # slurm's default paths, so every client finds them
DBD_CONF=/etc/slurm/slurmdbd.conf
DIR=${SLURM_LOCAL_DIR:-/var/spool/slurm-local}
LOG=$DIR/log
DB=$DIR/db                          # MariaDB data; also holds its socket and pid file
DB_PORT=6820
TIMEOUT=${SLURM_LOCAL_TIMEOUT:-60}
REQUEUE_DELAY=${SLURM_LOCAL_REQUEUE_DELAY:-10}
ACCOUNTING=${SLURM_LOCAL_ACCOUNTING:-1}
NODE=$(hostname -s)
MARK="# written by scripts/slurm_local.sh"
APT_LOG=/tmp/slurm_local_apt.log
# slurm ignores a credential lifetime under 5 s (and falls back to 120 s)
[ "$REQUEUE_DELAY" -ge 5 ] 2>/dev/null || REQUEUE_DELAY=5

say() { echo "slurm_local: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# true if the pid in this pid file is a live process of that name (X.pid -> X)
alive() {
    local p
    p=$(cat "$1" 2>/dev/null) && [ -n "$p" ] || return 1
    [ "$(cat "/proc/$p/comm" 2>/dev/null)" = "$(basename "$1" .pid)" ] \
        && ! grep -q '^State:.*zombie' "/proc/$p/status" 2>/dev/null
}

# stop the processes named by these pid files, in order, each before the next
stop_pids() {
    local f p
    for f in "$@"; do
        alive "$f" || continue
        p=$(cat "$f")
        kill "$p" 2>/dev/null || true
        for _ in $(seq 60); do alive "$f" || break; sleep 0.25; done
        if alive "$f"; then kill -9 "$p" 2>/dev/null || true; fi
        rm -f "$f"
    done
}

# apt-get install; on failure refresh the package lists and try once more
apt_install() {
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -q --no-install-recommends "$@" >>"$APT_LOG" 2>&1 && return 0
    apt-get update -q >>"$APT_LOG" 2>&1 || true
    apt-get install -y -q --no-install-recommends "$@" >>"$APT_LOG" 2>&1
}

install_packages() {
    local c missing=0
    for c in sbatch slurmctld slurmd munged; do command -v "$c" >/dev/null || missing=1; done
    if [ "$missing" = 1 ]; then
        say "installing slurm-wlm and munge"
        apt_install slurm-wlm munge || { tail -n 20 "$APT_LOG" >&2; die "apt-get install failed"; }
    fi
    [ "$ACCOUNTING" = 1 ] || return 0
    missing=0
    for c in slurmdbd mariadbd mariadb-install-db; do command -v "$c" >/dev/null || missing=1; done
    [ "$missing" = 0 ] && return 0
    say "installing slurmdbd and mariadb-server (for sacct)"
    if ! apt_install slurmdbd mariadb-server; then
        tail -n 20 "$APT_LOG" >&2
        say "WARNING: could not install them: running without accounting (sacct will not work)"
        ACCOUNTING=0
    fi
}

# --- munge: authentication between the slurm commands and daemons

munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }

start_munge() {
    munge_ok && return 0
    local key=/etc/munge/munge.key user=munge
    id munge >/dev/null 2>&1 || user=root
    mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
    if [ ! -s "$key" ]; then
        say "creating a munge key"
        mungekey --create --keyfile="$key" 2>/dev/null \
            || dd if=/dev/urandom of="$key" bs=1024 count=1 status=none
    fi
    chown "$user:$user" /etc/munge "$key" /var/lib/munge /var/log/munge /run/munge
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0400 "$key"
    chmod 0755 /run/munge
    rm -f /run/munge/munged.pid      # left by an unclean stop
    if [ "$user" = munge ]; then runuser -u munge -- munged || true; else munged --force || true; fi
    for _ in $(seq 40); do munge_ok && return 0; sleep 0.25; done
    die "munged did not start (see /var/log/munge/munged.log)"
}

# --- accounting: a private MariaDB on 127.0.0.1:$DB_PORT, and slurmdbd on it

db_ok() { mariadb-admin --socket="$DB/mysqld.sock" ping >/dev/null 2>&1; }

start_db() {
    alive "$DB/mariadbd.pid" && db_ok && return 0
    cat >"$DIR/db.cnf" <<EOF
[mariadbd]
user=mysql
datadir=$DB
socket=$DB/mysqld.sock
pid-file=$DB/mariadbd.pid
log-error=$LOG/mariadb.log
bind-address=127.0.0.1
port=$DB_PORT
skip-name-resolve
innodb_log_file_size=64M
innodb_lock_wait_timeout=900
# (slurmdbd logs that it would like a bigger innodb_buffer_pool_size: not needed here)
EOF
    mkdir -p "$DB"
    touch "$LOG/mariadb.log"
    chown mysql:mysql "$DB" "$LOG/mariadb.log"
    if [ ! -d "$DB/mysql" ]; then
        mariadb-install-db --defaults-file="$DIR/db.cnf" --auth-root-authentication-method=socket \
            --skip-test-db >"$LOG/mariadb-install.log" 2>&1 \
            || { tail -n 20 "$LOG/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
    fi
    setsid mariadbd --defaults-file="$DIR/db.cnf" </dev/null >/dev/null 2>&1 &
    for _ in $(seq 120); do db_ok && break; sleep 0.25; done
    db_ok || { tail -n 20 "$LOG/mariadb.log" >&2; die "MariaDB did not start"; }
    # root logs in through the socket; slurmdbd uses its own user over TCP
    mariadb --socket="$DB/mysqld.sock" -e "
        CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm';
        GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"
}

write_dbd_conf() {
    cat <<EOF
$MARK; edits are overwritten by its next 'up'
AuthType=auth/munge
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=6819
SlurmUser=root
LogFile=$LOG/slurmdbd.log
PidFile=$DIR/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
}

# --- slurm.conf: one node, one partition

write_conf() {
    local cpus mem
    cpus=$(nproc)
    # RealMemory: 80% of the machine's memory in MiB, so slurmd never finds less
    mem=$(awk '/MemTotal/ {printf "%d", $2 / 1024 * 0.8}' /proc/meminfo)
    cat <<EOF
$MARK; edits are overwritten by its next 'up'
ClusterName=local
SlurmctldHost=$NODE(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
# a requeued job may start again once the old run's credential expires
AuthInfo=cred_expire=$REQUEUE_DELAY
StateSaveLocation=$DIR/ctld
SlurmdSpoolDir=$DIR/d
SlurmctldPidFile=$DIR/slurmctld.pid
SlurmdPidFile=$DIR/slurmd.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmctldPort=6817
SlurmdPort=6818
# no cgroups in a container: track processes through /proc; no CPU binding
# and no memory limits
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
EOF
    if [ "$ACCOUNTING" = 1 ]; then
        cat <<EOF
# job records go to slurmdbd, which is what sacct reads
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
EOF
    else
        echo "AccountingStorageType=accounting_storage/none"
    fi
    cat <<EOF
# finished jobs are also appended to a text file (read by sacct -c)
JobCompType=jobcomp/filetxt
JobCompLoc=$LOG/jobcomp.txt
# CPUs are the consumable resource; memory is not, so a job without --mem
# does not take the whole node
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
# schedule every 2 s (slurm's defaults: 60 s main loop, 30 s backfill), so a
# job whose begin time has passed (e.g. after a requeue) starts promptly
SchedulerType=sched/backfill
SchedulerParameters=sched_interval=2,bf_interval=2
# reject at submission what the node can never run (e.g. more CPUs than it has)
EnforcePartLimits=ALL
JobRequeue=1
ReturnToService=2
MessageTimeout=10
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=300
Waittime=0
NodeName=$NODE NodeAddr=127.0.0.1 NodeHostname=$NODE CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$NODE Default=YES MaxTime=INFINITE State=UP
EOF
}

node_state() { sinfo -h -n "$NODE" -o %t 2>/dev/null | head -n 1; }

# controller answers, node takes jobs, and (with accounting) slurmdbd knows the cluster
usable() {
    scontrol ping >/dev/null 2>&1 || return 1
    case "$(node_state)" in idle | mix | alloc | comp) ;; *) return 1 ;; esac
    if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$CONF" 2>/dev/null; then
        sacctmgr -n -P show cluster format=cluster 2>/dev/null | grep -qx local || return 1
    fi
}

all_alive() {
    alive "$DIR/slurmctld.pid" && alive "$DIR/slurmd.pid" && munge_ok || return 1
    if [ "$ACCOUNTING" = 1 ]; then alive "$DIR/slurmdbd.pid" && db_ok; fi
}

# replace a file by stdin if they differ (return 0 if it changed)
update_file() {
    local f=$1 mode=$2 new
    new=$(cat)
    [ -f "$f" ] && [ "$new" = "$(cat "$f")" ] && return 1
    if [ -f "$f" ] && ! grep -qF "$MARK" "$f"; then
        say "keeping the existing $f as $f.orig"
        cp -p "$f" "$f.orig"
    fi
    printf '%s\n' "$new" >"$f"
    chmod "$mode" "$f"
}

cmd_up() {
    [ "$(id -u)" = 0 ] || die "'up' needs root"
    install_packages
    mkdir -p "$DIR/ctld" "$DIR/d" "$LOG" /etc/slurm
    local changed=0
    write_conf | update_file "$CONF" 0644 && changed=1
    if [ "$ACCOUNTING" = 1 ]; then
        write_dbd_conf | update_file "$DBD_CONF" 0600 && changed=1
    fi
    if [ "$changed" = 0 ] && all_alive && usable; then
        say "already up"; sinfo; return 0
    fi
    start_munge
    # (re)start slurm's daemons on the current config; queued jobs are kept
    stop_pids "$DIR/slurmd.pid" "$DIR/slurmctld.pid" "$DIR/slurmdbd.pid"
    if [ "$ACCOUNTING" = 1 ]; then
        start_db
        slurmdbd || fail "slurmdbd did not start"
        # slurmctld registers the cluster with slurmdbd when it connects
        for _ in $(seq 40); do sacctmgr -n show cluster >/dev/null 2>&1 && break; sleep 0.25; done
    else
        stop_pids "$DB/mariadbd.pid"
    fi
    slurmctld || fail "slurmctld did not start"
    slurmd || fail "slurmd did not start"
    local t0=$SECONDS
    while [ $((SECONDS - t0)) -lt "$TIMEOUT" ]; do
        if usable; then say "up"; sinfo; return 0; fi
        # a node left down or drained by an earlier run: put it back in service
        case "$(node_state)" in down* | drain* | drng* | fail*)
            scontrol update NodeName="$NODE" State=RESUME >/dev/null 2>&1 || true ;;
        esac
        sleep 1
    done
    fail "the cluster did not become usable within $TIMEOUT s"
}

# report what is wrong, with the ends of the daemons' logs, and exit 1
fail() {
    say "ERROR: $*"
    {
        cmd_status || true
        scontrol show node "$NODE" 2>&1 | grep -iE 'state|reason' || true
        local f
        for f in slurmctld slurmd slurmdbd; do
            [ -s "$LOG/$f.log" ] || continue
            echo "--- tail $LOG/$f.log"; tail -n 20 "$LOG/$f.log"
        done
    } >&2
    exit 1
}

cmd_down() {
    stop_pids "$DIR/slurmd.pid" "$DIR/slurmctld.pid" "$DIR/slurmdbd.pid" "$DB/mariadbd.pid" \
        /run/munge/munged.pid
    say "down"
}

cmd_status() {
    command -v sinfo >/dev/null || { echo "slurm is not installed"; return 1; }
    if usable; then
        sinfo
        squeue
        if grep -q '^AccountingStorageType=accounting_storage/slurmdbd' "$CONF"; then
            echo "accounting: slurmdbd (sacct works)"
        else
            echo "accounting: none (sacct fails; sacct -c lists finished jobs)"
        fi
        return 0
    fi
    local d
    for d in slurmctld slurmd slurmdbd; do
        printf '%s: %s\n' "$d" "$(alive "$DIR/$d.pid" && echo running || echo stopped)"
    done
    printf 'mariadb: %s\n' "$(alive "$DB/mariadbd.pid" && echo running || echo stopped)"
    printf 'munged: %s\n' "$(munge_ok && echo running || echo stopped)"
    echo "not usable"
    return 1
}

cmd_clean() {
    cmd_down
    rm -rf "${DIR:?}/ctld" "${DIR:?}/d" "${DB:?}" "${LOG:?}" "$DIR/db.cnf"
    say "job state, accounting data and logs removed"
}

case "${1:-}" in
    up) cmd_up ;;
    down) cmd_down ;;
    status) cmd_status ;;
    clean) cmd_clean ;;
    *) echo "usage: $0 up|down|status|clean" >&2; exit 2 ;;
esac
