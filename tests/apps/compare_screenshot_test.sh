#!/usr/bin/env bash
# Two short trainings on part of the real Fashion-MNIST standing in for two
# setups (batch 50 with the test split scored every epoch, batch 200 without),
# their `magmadnn compare` page rendered by headless Chromium and checked by
# tools/screenshot-compare.sh (every run's curve and legend entry in both
# charts and drawn in its colour, the labels and test accuracies in the
# printed text, nothing wider than the window); the screenshot is
# WORK_DIR/compare.png.
#   compare_screenshot_test.sh MAGMADNN_BINARY SCREENSHOT_SCRIPT WORK_DIR
set -euo pipefail
BIN="$1" CHECK="$2" WORK="$3"
common=(--preset mlp --limit-train 2000 --limit-test 500 --epochs 3 --overwrite --quiet)
"$BIN" train "${common[@]}" --batch-size 50 --test-every-epoch --out "$WORK/batch50"
"$BIN" train "${common[@]}" --batch-size 200 --out "$WORK/batch200"
"$BIN" compare "$WORK/batch50" "$WORK/batch200" --out "$WORK/compare.html"
"$CHECK" "$WORK/compare.html" "$WORK/compare.png" "$WORK/batch50" "$WORK/batch200"
