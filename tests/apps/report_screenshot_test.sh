#!/usr/bin/env bash
# A one-epoch training on part of Fashion-MNIST, then its report.html rendered
# by headless Chromium and checked (tools/screenshot-report.sh).
#   report_screenshot_test.sh MAGMADNN_BINARY SCREENSHOT_SCRIPT RUN_DIR
set -euo pipefail
"$1" train --preset mlp --limit-train 2000 --limit-test 500 --epochs 1 --out "$3" --overwrite
"$2" "$3" "$3/report.png"
