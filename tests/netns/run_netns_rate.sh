#!/usr/bin/env bash
# tools/mpi-netns-run.sh --rate shapes the links between hosts: a 1 MiB
# allreduce of 2 ranks sends 1 MiB each way (2(p-1)/p x the buffer), so at
# 20 Mbit/s no round can take less than 0.419 s, whatever the machine's load;
# unshaped, the same allreduce takes a few milliseconds.
#   run_netns_rate.sh MPI_NETNS_RUN MAGMADNN
set -uo pipefail
runner="$1" magmadnn="$2"
out="$(mktemp)"
trap 'rm -f "$out"' EXIT
"$runner" --timeout 60 -n 2 --rate 20mbit -- "$magmadnn" bench allreduce --rounds 1 --bytes 1M >"$out" 2>&1
status=$?
cat "$out"
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the shaped job exited $status"; exit 1; }
grep -q "links shaped to 20mbit" "$out" || { echo "FAIL: the runner did not say it shaped the links"; exit 1; }
raw_us="$(awk '$1 == 1048576 {print $4}' "$out")"
[[ -n $raw_us ]] || { echo "FAIL: no 1 MiB row in the bench's table"; exit 1; }
# 1 MiB x 8 bits / 20 Mbit/s = 0.4194 s; allow 10% for the token bucket's burst.
awk -v us="$raw_us" 'BEGIN { exit !(us >= 377000) }' ||
  { echo "FAIL: a 1 MiB allreduce took $raw_us us through links shaped to 20 Mbit/s (at least 377000 expected)"; exit 1; }
echo "PASS: 1 MiB over 20 Mbit/s links took $raw_us us (at least 419400 us at the rate)"
