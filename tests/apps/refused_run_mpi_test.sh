#!/usr/bin/env bash
# A run refused at its start under the launcher (a global batch smaller than
# the rank count, found when the ranks start training) writes nothing into
# its --out: the corrected command is accepted. (The refused run left
# config.json behind, so the corrected one was refused as "already holds a run".)
#   refused_run_mpi_test.sh MAGMADNN_BINARY WORK_DIR LAUNCH...
# (LAUNCH: the launcher and its flags for 2 ranks, e.g. mpiexec -n 2 --oversubscribe)
set -uo pipefail
BIN="$1" WORK="$2"
shift 2
rm -rf "$WORK" && mkdir -p "$WORK"
common=(--preset mlp --limit-train 300 --limit-test 100 --epochs 1 --quiet --out "$WORK/run")
"$@" "$BIN" train "${common[@]}" --batch-size 1 > "$WORK/refused.log" 2>&1
rc=$?
if [[ $rc -eq 0 ]]; then echo "refused_run_mpi_test: FAILED: batch 1 on 2 ranks was accepted" >&2; exit 1; fi
for f in config.json metrics.csv summary.json checkpoint.bin report.html; do
  if [[ -e "$WORK/run/$f" ]]; then
    echo "refused_run_mpi_test: FAILED: the refused run (exit $rc) left $WORK/run/$f" >&2; exit 1
  fi
done
"$@" "$BIN" train "${common[@]}" --batch-size 4 > "$WORK/corrected.log" 2>&1 ||
  { echo "refused_run_mpi_test: FAILED: the corrected command failed:" >&2; cat "$WORK/corrected.log" >&2; exit 1; }
[[ -f "$WORK/run/summary.json" ]] || { echo "refused_run_mpi_test: FAILED: no summary.json" >&2; exit 1; }
echo "refused_run_mpi_test: the refused run (exit $rc) left no file; the corrected one trained"
