#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for the tests: Debian's slurmctld
# and slurmd (slurm-wlm) authenticated by a munged of its own, all of it
# under DIR (key, socket, config, state, logs), on free ports. Nothing of
# the system's Slurm or munge (/etc/slurm, /run/munge) is read or changed.
#
#   tools/slurm-local.sh start DIR [CPUS]   starts it; CPUS (default 8) may
#       exceed the machine's cores (SlurmdParameters=config_overrides), so an
#       `srun -n 4` fits on 2 cores as `mpirun --oversubscribe` does. Writes
#       DIR/env, to be sourced: SLURM_CONF (every Slurm command reads it).
#   tools/slurm-local.sh stop DIR           stops the daemons it started.
#
# Needs root (the daemons run as root: SlurmUser=root) and the packages
# slurm-wlm and munge (tools/install-deps.sh --tests installs them).
# Exit status 77 when either is missing, or (Slurm before 23.11) when
# /sys/fs/cgroup is not mounted, so a test can report a skip.
set -euo pipefail
cmd="${1:-}" dir="${2:-}"
[[ ($cmd == start || $cmd == stop) && -n $dir ]] || { echo "usage: $0 start|stop DIR [CPUS]" >&2; exit 2; }
dir="$(mkdir -p "$dir" && cd "$dir" && pwd)"

stop() {
  for pid in slurmd slurmctld munged; do
    [[ -f $dir/$pid.pid ]] && kill "$(cat "$dir/$pid.pid")" 2>/dev/null || true
  done
  sleep 1
  for pid in slurmd slurmctld munged; do
    [[ -f $dir/$pid.pid ]] && kill -9 "$(cat "$dir/$pid.pid")" 2>/dev/null || true
    rm -f "$dir/$pid.pid"
  done
}
if [[ $cmd == stop ]]; then stop; exit 0; fi

cpus="${3:-8}"
[[ $(id -u) == 0 ]] || { echo "SKIP: a local Slurm runs its daemons as root"; exit 77; }
for tool in slurmctld slurmd srun sbatch munged mungekey; do
  command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
    { echo "SKIP: $tool is not installed (tools/install-deps.sh --tests)"; exit 77; }
done
export PATH="/usr/sbin:$PATH"

# munge: a key and a socket of our own (munged --force: it runs as root).
mkdir -p "$dir/munge" "$dir/state" "$dir/spool"
chmod 700 "$dir/munge"
mungekey --create --keyfile="$dir/munge/munge.key" --force >/dev/null
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.sock" \
  --pid-file="$dir/munged.pid" --log-file="$dir/munge/munged.log" --seed-file="$dir/munge/munged.seed"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
node="$(hostname -s)"
mem=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 / 2 ))
cat >"$dir/slurm.conf" <<EOF
ClusterName=magmadnn-test
SlurmctldHost=$node(127.0.0.1)
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
# No cgroups: processes are tracked through /proc, tasks are not bound.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
MpiDefault=none
ReturnToService=2
KillWait=5
# The node declares CPUS processors whatever the machine has.
SlurmdParameters=config_overrides
NodeName=$node NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=test Nodes=$node Default=YES MaxTime=INFINITE State=UP
EOF
# slurmd loads a cgroup plugin whatever the other plugins are, and fails
# where /sys/fs/cgroup is not mounted (a chroot, some containers). Slurm
# 23.11 and later (Debian 13 has 24.11) accept "disabled"; Slurm 22.05
# (Debian 12) does not, so there a machine without cgroups is a skip.
version="$(slurmd -V | sed -n 's/^slurm[^ ]* \([0-9]*\)\.\([0-9]*\).*/\1 \2/p')"
read -r major minor <<<"${version:-0 0}"
if ((10#$major > 23 || (10#$major == 23 && 10#$minor >= 11))); then
  echo "CgroupPlugin=disabled" >"$dir/cgroup.conf"
elif ! grep -q " /sys/fs/cgroup[ /]" /proc/mounts; then
  stop
  echo "SKIP: Slurm $major.$minor's slurmd needs the control groups mounted under /sys/fs/cgroup (a chroot or container without them)"
  exit 77
fi
echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"
export SLURM_CONF="$dir/slurm.conf"

failed() {
  echo "slurm-local: $1 did not start; its log:" >&2
  tail -n 20 "$2" >&2 || true
  stop
  exit 1
}
slurmctld -i -f "$SLURM_CONF" || failed slurmctld "$dir/slurmctld.log"
# Slurm 22.05's slurmd initialises a cgroup plugin even with the plugins
# above, so it needs /sys/fs/cgroup mounted, as every booted Debian has it
# (a chroot must mount it: tools/check-fresh-machine.sh does).
slurmd -f "$SLURM_CONF" -N "$node" || failed slurmd "$dir/slurmd.log"
# Ready when the node is idle (ReturnToService=2 brings it up on its own).
for _ in $(seq 60); do
  state="$(sinfo -h -N -o %T 2>/dev/null || true)"
  [[ $state == idle ]] && { echo "slurm-local: node $node idle with $cpus CPUs ($SLURM_CONF)"; exit 0; }
  sleep 0.5
done
echo "slurm-local: the node did not come up (state '${state:-none}'); logs:" >&2
tail -n 20 "$dir/slurmctld.log" "$dir/slurmd.log" "$dir/munge/munged.log" >&2 || true
stop
exit 1
