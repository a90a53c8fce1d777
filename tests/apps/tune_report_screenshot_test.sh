#!/usr/bin/env bash
# The tune report page of a synthetic 6 x 9 batch size x learning rate grid
# (make_tune_results.py: 54 trials, two failed, three pruned) rendered by
# headless Chromium and checked by tools/screenshot-tune.sh (a row per trial,
# sorting by column, the heat map's cells and best, the histogram's counts,
# the curves, no script error, nothing wider than the window); the
# screenshot is WORK_DIR/tune.png. Exits 77 (skipped) without Chromium or
# pdftotext.
#   tune_report_screenshot_test.sh TUNE_REPORT_PAGE MAKE_RESULTS_PY SCREENSHOT_SCRIPT WORK_DIR
set -euo pipefail
PAGE_TOOL="$1" MAKE="$2" CHECK="$3" WORK="$4"
if ! command -v chromium >/dev/null && ! command -v chromium-browser >/dev/null; then
  echo "tune_report_screenshot_test: skipped: no chromium (Debian package chromium) to render the page"
  exit 77
fi
if ! command -v pdftotext >/dev/null; then
  echo "tune_report_screenshot_test: skipped: no pdftotext (Debian package poppler-utils)"
  exit 77
fi
rm -rf "$WORK"
python3 "$MAKE" "$WORK"
"$PAGE_TOOL" "$WORK"
"$CHECK" "$WORK" "$WORK/tune.png"
