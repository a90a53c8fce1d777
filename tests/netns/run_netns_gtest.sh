#!/usr/bin/env bash
# Runs a GoogleTest program of MPI tests on RANKS ranks in separate network
# namespaces over TCP (tools/mpi-netns-run.sh): every test must pass with
# the ranks talking through veth pairs only, and every rank must receive at
# least MIN_RX bytes through its veth (so the job provably crossed the
# network rather than finishing without exchanging data).
#   run_netns_gtest.sh MPI_NETNS_RUN PROGRAM RANKS MIN_RX [gtest args...]
# Exit status 77 (skipped) when the machine cannot create the namespaces.
set -uo pipefail
runner="$1" program="$2" ranks="$3" min_rx="$4"
shift 4
# Bounded well inside ctest's timeout, so that the runner's trap (not
# ctest's kill) ends a hung job and removes its namespaces.
"$runner" --timeout 240 -n "$ranks" --min-rx-bytes "$min_rx" -- env OMP_NUM_THREADS=1 "$program" "$@"
status=$?
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the job across namespaces exited $status"; exit 1; }
echo "PASS: $(basename "$program") on $ranks ranks across namespaces over TCP"
