#!/usr/bin/env bash
# Runs netns_allreduce on RANKS ranks twice: in separate network namespaces
# over TCP (tools/mpi-netns-run.sh), then in one namespace over shared memory
# (--shm). Passes when both runs succeed, every rank of the network run sat
# in its own namespace with its own 10.77.0.x address and host name, every
# rank received at least the allreduce payload through its veth, and both
# runs print the same result hash.
#   run_netns_allreduce.sh MPI_NETNS_RUN PROGRAM RANKS
# Exit status 77 (skipped) when the machine cannot create the namespaces.
set -uo pipefail
runner="$1" program="$2" ranks="$3"
count=$((1 << 20)) rounds=4
# Each rank must receive the other ranks' contribution to every element, at
# least 8 bytes per double per round, whatever the allreduce algorithm.
min_rx=$((count * 8 * rounds))
# Three jobs, each bounded well inside ctest's 120 s, so that the runner's
# trap (not ctest's kill) ends a hung job and removes its namespaces.
limit=(--timeout 35)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$runner" "${limit[@]}" -n "$ranks" --min-rx-bytes "$min_rx" -- "$program" 1 1 >"$out/tiny" 2>&1
status=$?
[[ $status == 77 ]] && { cat "$out/tiny"; exit 77; }
if [[ $status != 1 ]]; then
  cat "$out/tiny"
  echo "FAIL: the byte check did not fail a job that exchanged one double (status $status)"
  exit 1
fi
echo "the byte check fails a job that exchanges one double: $(grep -c 'FAIL: rank' "$out/tiny") of $ranks ranks short"

"$runner" "${limit[@]}" -n "$ranks" --min-rx-bytes "$min_rx" -- "$program" "$count" "$rounds" | tee "$out/tcp"
status=${PIPESTATUS[0]}
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the network run exited $status"; exit 1; }

"$runner" "${limit[@]}" --shm -n "$ranks" -- "$program" "$count" "$rounds" | tee "$out/shm"
status=${PIPESTATUS[0]}
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the shared-memory run exited $status"; exit 1; }

fail=0
for ((i = 0; i < ranks; i++)); do
  want="rank $i of $ranks: processor netns-rank$i, addresses eth0=10.77.0.$((i + 1))"
  grep -qxF "$want" "$out/tcp" || { echo "FAIL: the network run lacks the line '$want'"; fail=1; }
done
tcp_hash="$(grep -o 'result hash [0-9a-f]*' "$out/tcp")"
shm_hash="$(grep -o 'result hash [0-9a-f]*' "$out/shm")"
if [[ -z "$tcp_hash" || "$tcp_hash" != "$shm_hash" ]]; then
  echo "FAIL: network run '$tcp_hash' differs from shared-memory run '$shm_hash'"
  fail=1
fi
((fail == 0)) && echo "PASS: $ranks ranks across namespaces over TCP equal shared memory ($tcp_hash)"
exit $fail
