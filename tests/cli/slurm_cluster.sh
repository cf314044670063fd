# A real single-node SLURM for the tests, sourced by them: Debian's munged, slurmctld and slurmd on
# localhost, in the foreground (no init system), with proctrack/linuxproc and task/none (no cgroups
# to manage inside a container), everything under one temporary directory. After
# `start_slurm DIR`, sbatch/squeue/scontrol reach it through SLURM_CONF; `stop_slurm` ends it.
# start_slurm returns 77 (the tests' skip status) with the reason on stderr where it cannot start.
# Addresses are given as 127.0.0.1: a minimal root may have no /etc/hosts to resolve localhost.

slurm_skip() { echo "SKIP: $*" >&2; return 77; }

start_slurm() {
  SLURM_DIR=$1
  local tool
  for tool in munged mungekey slurmctld slurmd sbatch squeue scontrol; do
    command -v "$tool" >/dev/null 2>&1 || { slurm_skip "$tool is not installed (Debian: munge slurmctld slurmd slurm-client)"; return; }
  done
  mkdir -p "$SLURM_DIR"/{state,spool,run}
  chmod 700 "$SLURM_DIR/run"
  mungekey -c -k "$SLURM_DIR/munge.key" >/dev/null 2>&1 || dd if=/dev/urandom of="$SLURM_DIR/munge.key" bs=1024 count=1 status=none
  chmod 400 "$SLURM_DIR/munge.key"
  munged -F -f --key-file="$SLURM_DIR/munge.key" --socket="$SLURM_DIR/run/munge.sock" \
    --pid-file="$SLURM_DIR/run/munged.pid" --log-file="$SLURM_DIR/munged.log" --seed-file="$SLURM_DIR/munge.seed" \
    >"$SLURM_DIR/munged.out" 2>&1 &
  SLURM_PIDS=($!)
  # Ports away from the defaults (6817/6818) and from another checkout's run of this test.
  local base=$((20000 + ($$ % 500) * 4))
  local cpus
  cpus=$(nproc)
  cat >"$SLURM_DIR/slurm.conf" <<CONF
ClusterName=tachtest
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=$(id -un)
AuthType=auth/munge
AuthInfo=socket=$SLURM_DIR/run/munge.sock
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
SlurmctldPort=$base
SlurmdPort=$((base + 1))
StateSaveLocation=$SLURM_DIR/state
SlurmdSpoolDir=$SLURM_DIR/spool
SlurmctldPidFile=$SLURM_DIR/run/slurmctld.pid
SlurmdPidFile=$SLURM_DIR/run/slurmd.pid
SlurmctldLogFile=$SLURM_DIR/slurmctld.log
SlurmdLogFile=$SLURM_DIR/slurmd.log
ReturnToService=2
MinJobAge=300
NodeName=localhost NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
CONF
  export SLURM_CONF="$SLURM_DIR/slurm.conf"
  local i
  for i in $(seq 50); do [ -S "$SLURM_DIR/run/munge.sock" ] && break; sleep 0.1; done
  [ -S "$SLURM_DIR/run/munge.sock" ] || { slurm_skip "munged did not start: $(tail -3 "$SLURM_DIR/munged.out" "$SLURM_DIR/munged.log" 2>/dev/null | tr '\n' ' ')"; return; }
  slurmctld -D -i -f "$SLURM_CONF" >"$SLURM_DIR/slurmctld.out" 2>&1 &
  SLURM_PIDS+=($!)
  slurmd -D -N localhost -f "$SLURM_CONF" >"$SLURM_DIR/slurmd.out" 2>&1 &
  SLURM_PIDS+=($!)
  # Up when the node answers idle.
  for i in $(seq 150); do
    if scontrol show node localhost 2>/dev/null | grep -Eq "State=IDLE"; then return 0; fi
    sleep 0.2
  done
  slurm_skip "slurmctld/slurmd did not bring the node up within 30 s: $(tail -2 "$SLURM_DIR/slurmctld.log" "$SLURM_DIR/slurmd.log" 2>/dev/null | tr '\n' ' ')"
}

# Stops the daemons: TERM, then KILL for any still there after 20 s. A job step's slurmstepd that
# outlives its slurmd (seen on a loaded machine) is killed too, found by the log it holds open in
# this cluster's directory, so that no daemon of this test outlives it (ctest would wait for it).
stop_slurm() {
  local p i alive
  for p in "${SLURM_PIDS[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  for i in $(seq 40); do
    alive=0
    for p in "${SLURM_PIDS[@]:-}"; do [ -n "$p" ] && kill -0 "$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break
    sleep 0.5
  done
  for p in "${SLURM_PIDS[@]:-}"; do [ -n "$p" ] && kill -9 "$p" 2>/dev/null || true; done
  for p in $(pgrep -f '^slurmstepd' 2>/dev/null || true); do
    if ls -l "/proc/$p/fd" 2>/dev/null | grep -qF "$SLURM_DIR"; then kill -9 "$p" 2>/dev/null || true; fi
  done
  for p in "${SLURM_PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
}

# Waits until squeue lists nothing of job $1 (up to $2 s); 1 when it is still there.
wait_for_job() {
  local i
  for i in $(seq "$2"); do
    [ -z "$(squeue -h -j "$1" 2>/dev/null)" ] && return 0
    sleep 1
  done
  return 1
}
