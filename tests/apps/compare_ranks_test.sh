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
python3 - "$WORK/np1/test_per_epoch.csv" "$WORK/npN/test_per_epoch.csv" <<'PY'
import csv, sys
one, many = ([r for r in csv.DictReader(open(p))] for p in sys.argv[1:3])
if len(one) != len(many) or not one:
    sys.exit(f"compare_ranks_test: FAILED: {len(one)} and {len(many)} epochs of test scores")
for a, b in zip(one, many):
    for k in ("test_loss", "test_accuracy"):
        if abs(float(a[k]) - float(b[k])) > 1e-4:
            sys.exit(f"compare_ranks_test: FAILED: epoch {a['epoch']}: {k} {a[k]} on 1 rank, {b[k]} across ranks")
print(f"compare_ranks_test: the per-epoch test scores of 1 rank and of the ranks agree over {len(one)} epochs")
PY
"$CHECK" "$WORK/compare.html" "$WORK/compare.png" "$WORK/np1" "$WORK/npN"
