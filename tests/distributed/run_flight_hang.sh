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
# than that to run their handler. Open MPI 4 reads this.
export OMPI_MCA_odls_base_sigkill_timeout=10
trap 'rm -rf "$dir"' EXIT
# Open MPI 5.0.7's prterun (PRRTE 3.0, which has no such timeout: prte_info
# lists none) may kill rank 1 before or while its SIGTERM handler writes: in the Debian
# 13 root 3 of 17 single runs left no record from rank 1, or an empty one
# (the jobs over in 4.4-4.6 s), and a fresh root's full run 3 of 3. A job
# whose only fault is rank 1's record is run again, up to 3 times, saying
# so; any other fault fails at once. Lost 3 times where the launcher's
# sigkill timeout cannot be set (MAGMADNN_MPI_SIGKILL_TIMEOUT=0, from
# tests/CMakeLists.txt: Open MPI 5), the test is skipped (77) naming why;
# elsewhere (Open MPI 4, whose timeout is set above) it fails.
for attempt in 1 2 3; do
  rm -f "$dir"/flight.rank*.json "$dir"/flight.rank*.json.part
  MAGMADNN_FLIGHT_DIR="$dir" timeout 120 "$@" "$program" hang 3000 >"$dir/job.out" 2>&1
  status=$?
  (( status != 0 )) || { cat "$dir/job.out"; echo "FAIL: the job exited 0 with a hanging rank"; exit 1; }
  (( status != 124 )) || { cat "$dir/job.out"; echo "FAIL: the job hung past 120 s"; exit 1; }
  "$magmadnn" flight "$dir" >"$dir/flight.out" 2>&1
  code=$?
  cat "$dir/flight.out"
  if grep -qF "no record from ranks 1 of $ranks:" "$dir/flight.out"; then
    if (( attempt < 3 )); then
      echo "rank 1's record is missing or cut short: the launcher killed it in its SIGTERM handler; once more"
      continue
    fi
    # A fresh Debian 13 root lost it 3 times running: there the test cannot
    # check the report, and says so (exit 77: skipped) rather than pass.
    if [[ "${MAGMADNN_MPI_SIGKILL_TIMEOUT:-1}" == 0 ]]; then
      echo "SKIP: Open MPI 5's launcher killed rank 1 before it wrote its record in 3 runs of 3"
      exit 77
    fi
  fi
  (( code == 1 )) || { cat "$dir/job.out"; echo "FAIL: magmadnn flight did not report a divergence (exit 1)"; exit 1; }
  break
done
want=("$ranks of $ranks ranks wrote a record"
      "rank 1 (" "SIGTERM"
      "rank 1 is behind on communicator 0: its last collective was #"
      "allreduce (4096 bytes, step 6), finished; ranks 0, 2,"
      "allreduce (4096 bytes, step 7)")
for w in "${want[@]}"; do
  grep -qF "$w" "$dir/flight.out" || { cat "$dir/job.out"; echo "FAIL: the report lacks: $w"; exit 1; }
done
echo "PASS: rank 1 of $ranks named with its last collective"
