#!/usr/bin/env bash
# A job of RANKS ranks in which rank 1 hangs before its second allreduce
# (mpi_fault_program hang): the others' watchdog ends the job, every rank
# writes its flight record (the waiting ranks through abort_job, rank 1 on
# the launcher's SIGTERM), and `magmadnn flight` must name rank 1 and its
# last collective, and the collective the others waited in.
#   run_flight_hang.sh MAGMADNN PROGRAM RANKS LAUNCHER... (the launcher with its -np RANKS)
set -uo pipefail
magmadnn="$1" program="$2" ranks="$3"
shift 3
dir="$(mktemp -d)"
# The launcher sends SIGTERM to the ranks of a failed job and SIGKILL a
# second later (Open MPI's default); 16 ranks on 2 busy cores may need more
# than that to run their handler. Open MPI 4 reads the first name, 5 the second.
export OMPI_MCA_odls_base_sigkill_timeout=10 PRTE_MCA_odls_base_sigkill_timeout=10
trap 'rm -rf "$dir"' EXIT
MAGMADNN_FLIGHT_DIR="$dir" timeout 120 "$@" "$program" hang 3000 >"$dir/job.out" 2>&1
status=$?
(( status != 0 )) || { cat "$dir/job.out"; echo "FAIL: the job exited 0 with a hanging rank"; exit 1; }
(( status != 124 )) || { cat "$dir/job.out"; echo "FAIL: the job hung past 120 s"; exit 1; }
"$magmadnn" flight "$dir" | tee "$dir/flight.out"
[[ ${PIPESTATUS[0]} == 1 ]] || { cat "$dir/job.out"; echo "FAIL: magmadnn flight did not report a divergence (exit 1)"; exit 1; }
want=("$ranks of $ranks ranks wrote a record"
      "rank 1 (" "SIGTERM"
      "rank 1 is behind on communicator 0: its last collective was #"
      "allreduce (4096 bytes, step 6), finished; ranks 0, 2,"
      "allreduce (4096 bytes, step 7)")
for w in "${want[@]}"; do
  grep -qF "$w" "$dir/flight.out" || { cat "$dir/job.out"; echo "FAIL: the report lacks: $w"; exit 1; }
done
echo "PASS: rank 1 of $ranks named with its last collective"
