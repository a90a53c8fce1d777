#!/usr/bin/env bash
# The hierarchical allreduce across hosts: 2 network namespaces ("hosts")
# of 2 ranks each (tools/mpi-netns-run.sh --ranks-per-host 2: shared memory
# inside a namespace, TCP over veth between them). test_mpi_hierarchical
# must find, with no host names given, the 2 hosts of 2 ranks through
# MPI_Comm_split_type (MAGMADNN_TEST_EXPECT_HOSTS=2), choose the
# hierarchical allreduce automatically, and equal the flat allreduce in
# every case; each host must receive at least MIN_RX bytes through its veth.
#   run_netns_hierarchical.sh MPI_NETNS_RUN PROGRAM MIN_RX
# Exit status 77 (skipped) when the machine cannot create the namespaces.
set -uo pipefail
runner="$1" program="$2" min_rx="$3"
"$runner" --timeout 100 -n 4 --ranks-per-host 2 --min-rx-bytes "$min_rx" -- \
  env OMP_NUM_THREADS=1 MAGMADNN_TEST_EXPECT_HOSTS=2 "$program"
status=$?
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the 2 x 2 job across namespaces exited $status"; exit 1; }
echo "PASS: $(basename "$program") on 2 hosts x 2 ranks across namespaces"
