#!/usr/bin/env bash
# Runs an MPI program on N ranks (2 to 4 hosts of 1 to 4 ranks), each host in its own Linux network
# namespace, so that every byte between ranks crosses a real (virtual) network:
# Open MPI's TCP transport only, over veth pairs joined by a bridge.
#
#   tools/mpi-netns-run.sh [-n RANKS] [--ranks-per-host K] [--rate RATE] [--min-rx-bytes BYTES] [--timeout S] -- PROGRAM [ARGS...]
#   tools/mpi-netns-run.sh --shm [-n RANKS] [--timeout S] -- PROGRAM [ARGS...]
#
# Topology (names carry a tag unique to this run, mdnn-<pid>-<random>, so two
# runs never collide; addresses exist inside these namespaces only):
#
#   <tag>-r0 eth0 10.77.0.1/24 ──veth── p0 ┐
#   <tag>-r1 eth0 10.77.0.2/24 ──veth── p1 ├─ br0 in <tag>-br
#   ...                                    ┘
#
# mpirun runs in <tag>-r0 and reads a hostfile that lists the rank addresses
# (no /etc/hosts entry is needed: the host names are the addresses). Open MPI
# starts its daemon (orted) on every other "host" through plm_rsh_agent, here
# a small script that maps the address 10.77.0.(i+1) to
# `ip netns exec <tag>-ri`, where ssh would have logged in. Each namespace also
# gets its own UTS namespace and host name (netns-rank<i>), so
# MPI_Get_processor_name tells the ranks apart. The daemons inherit mpirun's
# environment, the OMPI_ALLOW_RUN_AS_ROOT* variables of tools/env.sh included.
#
# Transport: --mca pml ob1 --mca btl tcp,self (no vader/sm shared memory), and
# both the MPI traffic (btl_tcp_if_include) and Open MPI's own control traffic
# (oob_tcp_if_include) restricted to 10.77.0.0/24. After the run the script
# prints each rank's eth0 byte counters (received/sent during the job) and,
# with --min-rx-bytes, fails unless every rank received at least that many
# bytes through its veth: the proof that the data crossed the network.
#
# --ranks-per-host K (1 or 2, default 1) puts K consecutive ranks in each
# namespace, a "host" of K ranks: the hostfile gives each K slots, Open MPI
# starts one daemon per namespace, so it sees RANKS / K nodes
# (MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) groups the ranks of one
# namespace), and the ranks of one host talk through shared memory (btl
# vader added) while those of different hosts cross the veth pairs. The byte
# counters are then per host.
#
# --rate RATE (tc's units: 1gbit, 10gbit, 500mbit) shapes what each host
# sends through its veth with a token bucket (tc tbf; burst of 1 ms at that
# rate, at least 64 KB): links of that speed between the hosts, for the
# scaling measurements (bench/netns_scaling). Ranks of one host still talk
# through shared memory.
#
# --shm runs the same job for comparison in one fresh namespace, with shared
# memory only (btl self,vader) and no network interface but loopback.
#
# MPIRUN names the launcher (default: mpirun on PATH).
#
# Exit status: the program's (mpirun's), 1 when the byte check fails, 2 on a
# usage error, 77 when this machine cannot do it (not root, no `ip netns`,
# veth or bridge unavailable): tests read 77 as "skipped".
set -euo pipefail

ranks=2
per_host=1
min_rx=0
timeout_s=100
shm=0
rate=""
usage() { sed -n '6,7p' "$0" | sed 's/^# *//' >&2; exit 2; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    -n) ranks="${2:?}"; shift 2 ;;
    --ranks-per-host) per_host="${2:?}"; shift 2 ;;
    --min-rx-bytes) min_rx="${2:?}"; shift 2 ;;
    --rate) rate="${2:?}"; shift 2 ;;
    --timeout) timeout_s="${2:?}"; shift 2 ;;
    --shm) shm=1; shift ;;
    --) shift; break ;;
    -h|--help) usage ;;
    *) echo "mpi-netns-run: unknown option '$1'" >&2; usage ;;
  esac
done
[[ $# -gt 0 ]] || usage
[[ "$per_host" =~ ^[1-4]$ ]] || { echo "mpi-netns-run: --ranks-per-host must be 1 to 4 (got '$per_host')" >&2; exit 2; }
[[ "$ranks" =~ ^[0-9]+$ ]] && ((ranks >= 2 && ranks <= 4 * per_host)) ||
  { echo "mpi-netns-run: -n must be 2 to $((4 * per_host)) (4 hosts of $per_host; got '$ranks')" >&2; exit 2; }
[[ -z $rate || $rate =~ ^[0-9]+(k|m|g)?bit$ ]] || { echo "mpi-netns-run: --rate takes tc's form, e.g. 1gbit (got '$rate')" >&2; exit 2; }
((ranks % per_host == 0 && ranks / per_host >= 2)) ||
  { echo "mpi-netns-run: $ranks ranks do not make 2 or more hosts of $per_host" >&2; exit 2; }
nhosts=$((ranks / per_host))
btl=tcp,self
((per_host > 1)) && btl=tcp,vader,self

say() { echo "mpi-netns-run: $*" >&2; }
skip() { say "SKIP: $*"; exit 77; }

[[ "$(id -u)" == 0 ]] || skip "needs root to create network namespaces (running as uid $(id -u))"
command -v ip >/dev/null || skip "the 'ip' command (iproute2) is not installed"
command -v unshare >/dev/null || skip "the 'unshare' command (util-linux) is not installed"
mpirun="${MPIRUN:-mpirun}"
command -v "$mpirun" >/dev/null || skip "$mpirun (set MPIRUN to choose another) is not on PATH"
[[ "$("$mpirun" --version 2>&1)" =~ Open\ ?MPI|OpenRTE ]] || skip "$mpirun is not Open MPI's (the agent and --mca flags are Open MPI's)"
ip netns list >/dev/null 2>&1 || skip "'ip netns' does not work here"

tag="mdnn-$$-$RANDOM"
subnet=10.77.0.0/24
work="$(mktemp -d "${TMPDIR:-/tmp}/$tag.XXXXXX")"
namespaces=()

# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  local ns pid
  for ns in "${namespaces[@]}"; do
    # Whatever is left in our namespaces (an orted after a timeout) is ours.
    for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    ip netns del "$ns" 2>/dev/null || true
  done
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

add_ns() {
  ip netns add "$1" 2>"$work/err" || skip "cannot create network namespace $1: $(cat "$work/err")"
  namespaces+=("$1")
  # `ip netns add` can succeed where entering the namespace cannot: in a
  # chroot, / is no mount point and `ip netns exec` fails making it a slave.
  ip netns exec "$1" true 2>"$work/err" || skip "cannot enter network namespace $1: $(cat "$work/err")"
  ip -n "$1" link set lo up
}

# A token bucket on the host's egress: 1 ms of traffic at the rate, at least 64 KB.
shape() {
  local bits=${rate%bit} mult=1
  case "$bits" in *k) mult=1000 ;; *m) mult=1000000 ;; *g) mult=1000000000 ;; esac
  bits=$(( ${bits%[kmg]} * mult ))
  local burst=$((bits / 8 / 1000)); ((burst < 65536)) && burst=65536
  tc -n "$1" qdisc add dev eth0 root tbf rate "$rate" burst "$burst" latency 100ms 2>"$work/err" ||
    skip "cannot shape eth0 with tc tbf: $(cat "$work/err")"
}
rx_bytes() { ip netns exec "$1" cat /sys/class/net/eth0/statistics/rx_bytes; }
tx_bytes() { ip netns exec "$1" cat /sys/class/net/eth0/statistics/tx_bytes; }
seconds_since() { local ms=$((($(date +%s%N) - $1) / 1000000)); printf '%d.%03d' $((ms / 1000)) $((ms % 1000)); }

if [[ $shm == 1 ]]; then
  add_ns "$tag-shm"
  say "shared memory: $ranks ranks in namespace $tag-shm (btl self,vader; loopback only)"
  start=$(date +%s%N)
  set +e
  timeout "$timeout_s" ip netns exec "$tag-shm" \
    "$mpirun" -np "$ranks" --oversubscribe --mca pml ob1 --mca btl self,vader "$@"
  status=$?
  set -e
  say "mpirun exited $status after $(seconds_since "$start") s"
  exit $status
fi

add_ns "$tag-br"
ip -n "$tag-br" link add br0 type bridge 2>"$work/err" || skip "cannot create a bridge: $(cat "$work/err")"
ip -n "$tag-br" link set br0 up
hosts=()
for ((i = 0; i < nhosts; i++)); do
  ns="$tag-r$i"
  add_ns "$ns"
  ip -n "$tag-br" link add "p$i" type veth peer name eth0 netns "$ns" 2>"$work/err" ||
    skip "cannot create a veth pair: $(cat "$work/err")"
  ip -n "$tag-br" link set "p$i" master br0 up
  ip -n "$ns" addr add "10.77.0.$((i + 1))/24" dev eth0
  ip -n "$ns" link set eth0 up
  [[ -z $rate ]] || shape "$ns"
  hosts+=("10.77.0.$((i + 1))")
  echo "10.77.0.$((i + 1)) slots=$per_host" >>"$work/hostfile"
done

# The launch agent: Open MPI calls it as `agent <host> <orted command...>` and,
# as with ssh, the command words form one shell command line.
cat >"$work/agent" <<EOF
#!/bin/sh
host="\$1"; shift
case "\$host" in
  10.77.0.[1-4]) i=\$(( \${host##*.} - 1 )) ;;
  *) echo "mpi-netns-run agent: unknown host '\$host'" >&2; exit 1 ;;
esac
exec ip netns exec "$tag-r\$i" unshare --uts /bin/sh -c 'hostname "\$0" && eval "\$1"' "netns-rank\$i" "\$*"
EOF
chmod +x "$work/agent"

declare -a rx0 tx0
for ((i = 0; i < nhosts; i++)); do rx0[i]=$(rx_bytes "$tag-r$i"); tx0[i]=$(tx_bytes "$tag-r$i"); done

# More ranks than cores poll each other's TCP sockets and starve: under
# Open MPI 4 a 4 KiB allreduce across namespaces took 18 ms, and a run did not
# finish in 300 s, until idle ranks yielded (docs/notes/communicators.md,
# "The hierarchical allreduce"). Open MPI 5 has no such parameter and ignores
# the name. A value the caller set is kept.
if (( ranks > $(nproc) )) && [[ -z "${OMPI_MCA_mpi_yield_when_idle:-}" ]]; then
  export OMPI_MCA_mpi_yield_when_idle=1
  say "$ranks ranks on $(nproc) cores: idle ranks yield (OMPI_MCA_mpi_yield_when_idle=1)"
fi
say "network: $ranks ranks ($per_host per host${rate:+, links shaped to $rate}) in namespaces $tag-r0..r$((nhosts - 1)) at ${hosts[*]} (btl $btl over $subnet)"
start=$(date +%s%N)
set +e
# mpirun (and rank 0) run in <tag>-r0 under a host name of their own, like
# the other ranks, so MPI_Get_processor_name tells all ranks apart.
# --bind-to none: every "host" is this machine, and each daemon would bind
# its one rank to the first core, so all ranks would share core 0.
# shellcheck disable=SC2016  # $0 and $@ belong to the inner shell
timeout "$timeout_s" ip netns exec "$tag-r0" \
  unshare --uts /bin/sh -c 'hostname "$0" && exec "$@"' netns-rank0 \
  "$mpirun" -np "$ranks" --hostfile "$work/hostfile" --bind-to none \
    --mca plm_rsh_agent "$work/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca pml ob1 --mca btl "$btl" \
    --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet" \
    "$@"
status=$?
set -e
say "mpirun exited $status after $(seconds_since "$start") s"

short=0
for ((i = 0; i < nhosts; i++)); do
  rx=$(($(rx_bytes "$tag-r$i") - rx0[i]))
  tx=$(($(tx_bytes "$tag-r$i") - tx0[i]))
  what="rank $i"
  ((per_host > 1)) && what="host $i (ranks $((i * per_host))-$((i * per_host + per_host - 1)))"
  say "$what (netns-rank$i, ${hosts[i]}): eth0 received $rx bytes, sent $tx bytes"
  if ((rx < min_rx)); then
    say "FAIL: $what received $rx bytes through its veth, less than the $min_rx the job must exchange"
    short=1
  fi
done
if ((status != 0)); then exit $status; fi
if ((short != 0)); then exit 1; fi
exit 0
