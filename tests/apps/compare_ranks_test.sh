#!/usr/bin/env bash
# The same training on 1 rank (a plain process) and on 2 ranks under mpiexec
# (part of the real Fashion-MNIST, the test split scored every epoch), then
# their `magmadnn compare` page rendered by headless Chromium and checked by
# tools/screenshot-compare.sh: both runs' curves and legend entries, labelled
# from their summary.json ("1 rank: np1", "2 ranks, allreduce: np2"), drawn
# in their colours; the screenshot is WORK_DIR/compare.png.
#   compare_ranks_test.sh MAGMADNN_BINARY MPIEXEC SCREENSHOT_SCRIPT WORK_DIR
set -euo pipefail
BIN="$1" MPIEXEC="$2" CHECK="$3" WORK="$4"
# Open MPI refuses root (build containers) without both variables.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
common=(--preset mlp --limit-train 2000 --limit-test 500 --epochs 3 --batch-size 100 --test-every-epoch
        --overwrite --quiet)
"$BIN" train "${common[@]}" --out "$WORK/np1"
"$MPIEXEC" -np 2 --oversubscribe "$BIN" train "${common[@]}" --out "$WORK/np2"
"$BIN" compare "$WORK/np1" "$WORK/np2" --out "$WORK/compare.html"
grep -q '2 ranks, allreduce: np2' "$WORK/compare.html" || { echo "compare_ranks_test: no 2-rank label" >&2; exit 1; }
"$CHECK" "$WORK/compare.html" "$WORK/compare.png" "$WORK/np1" "$WORK/np2"
