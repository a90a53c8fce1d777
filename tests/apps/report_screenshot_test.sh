#!/usr/bin/env bash
# A one-epoch training on part of the real Fashion-MNIST, then its report.html
# rendered by headless Chromium and checked by tools/screenshot-report.sh:
# the headline values of summary.json in the printed page's text, nothing
# wider than a 1200 px window, and a screenshot written to RUN_DIR/report.png.
#   report_screenshot_test.sh MAGMADNN_BINARY SCREENSHOT_SCRIPT RUN_DIR
set -euo pipefail
"$1" train --preset mlp --limit-train 2000 --limit-test 500 --epochs 1 --out "$3" --overwrite
"$2" "$3" "$3/report.png"
