#!/usr/bin/env bash
# The same training as one plain process and on the ranks of LAUNCH (part of
# the real Fashion-MNIST, the test split scored every epoch), then their
# `magmadnn compare` page rendered by headless Chromium and checked by
# tools/screenshot-compare.sh: both runs' curves and legend entries, labelled
# from their summary.json ("1 rank: np1", "2 ranks, allreduce: npN"), drawn
# in their colours; the screenshot is WORK_DIR/compare.png. With the default
# strategy (allreduce, gradients averaged) the per-epoch test scores of the
# two runs must agree (within 1e-4).
#   compare_ranks_test.sh MAGMADNN_BINARY SCREENSHOT_SCRIPT WORK_DIR LAUNCH...
# (LAUNCH: the launcher and its flags, e.g. mpiexec -n 2 --oversubscribe)
set -euo pipefail
BIN="$1" CHECK="$2" WORK="$3"
shift 3
common=(--preset mlp --limit-train 2000 --limit-test 500 --epochs 3 --batch-size 100 --test-every-epoch
        --overwrite --quiet)
"$BIN" train "${common[@]}" --out "$WORK/np1"
"$@" "$BIN" train "${common[@]}" --out "$WORK/npN"
"$BIN" compare "$WORK/np1" "$WORK/npN" --out "$WORK/compare.html"
ranks=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("ranks", 1))' "$WORK/npN/summary.json")
if [[ "$ranks" -lt 2 ]]; then
  echo "compare_ranks_test: FAILED: $WORK/npN/summary.json records $ranks rank(s) under: $*" >&2
  exit 1
fi
grep -q "$ranks ranks, allreduce: npN" "$WORK/compare.html" ||
  { echo "compare_ranks_test: FAILED: no \"$ranks ranks, allreduce: npN\" on the page" >&2; exit 1; }
"$(dirname "$0")/../support/compare_runs.py" "$WORK/np1" "$WORK/npN" --test-curves 1e-4 --names "1-rank" multi-rank \
  --what "the per-epoch test scores of 1 rank and of the ranks agree"
"$CHECK" "$WORK/compare.html" "$WORK/compare.png" "$WORK/np1" "$WORK/npN"
