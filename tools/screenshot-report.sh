#!/usr/bin/env bash
# Renders RUN_DIR/report.html in headless Chromium at 1200x900 and checks what
# a reader would see:
#   tools/screenshot-report.sh RUN_DIR [OUT.png]      (default OUT: RUN_DIR/report.png)
#  1. a PNG screenshot is written to OUT (a valid PNG of the window's size);
#  2. the page printed to PDF and read back with pdftotext holds, in its
#     headline (the text before "Training curves"), the values of
#     RUN_DIR/summary.json formatted as the page formats them (apps/magmadnn/
#     report.h): test accuracy, test loss, training time, samples/s, peak
#     memory and what training needs in MiB, device and threads;
#  3. laid out in a 1200 px wide window with every <details> opened, no
#     element reaches past the window's right edge (elements inside a box
#     that scrolls or clips are measured by that box).
# Installs Debian's `chromium` and `poppler-utils` when they are missing
# (needs root and apt-get). Exits non-zero naming every check that failed.
# REPORT_WIDTH and REPORT_HEIGHT change the window (e.g. REPORT_HEIGHT=2250
# for a screenshot of the whole page; the checks then use that width).
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 RUN_DIR [OUT.png]" >&2
  exit 2
fi
RUN_DIR="$(cd "$1" && pwd)"
OUT="${2:-$RUN_DIR/report.png}"
REPORT="$RUN_DIR/report.html"
SUMMARY="$RUN_DIR/summary.json"
WIDTH="${REPORT_WIDTH:-1200}"
HEIGHT="${REPORT_HEIGHT:-900}"
fail() { echo "screenshot-report: FAILED: $*" >&2; exit 1; }
FAILED=()  # checks 2 and 3 both run, so one report names everything wrong
[[ -f "$REPORT" ]] || fail "no report.html in $RUN_DIR"
[[ -f "$SUMMARY" ]] || fail "no summary.json in $RUN_DIR (the run has not finished)"

source "$(dirname "${BASH_SOURCE[0]}")/headless-chromium.sh"

# 1. The screenshot.
screenshot "$REPORT" "$OUT"
python3 - "$OUT" "$WIDTH" "$HEIGHT" <<'PY' || exit 1
import struct, sys
path, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
    sys.exit(f"screenshot-report: FAILED: {path} is not a PNG")
width, height = struct.unpack(">II", data[16:24])
if (width, height) != (w, h):
    sys.exit(f"screenshot-report: FAILED: {path} is {width}x{height}, not {w}x{h}")
print(f"screenshot-report: screenshot {path} ({width}x{height})")
PY

# 2. The headline values in the printed text.
print_text "$REPORT" "$WORK/report.txt"
python3 - "$SUMMARY" "$WORK/report.txt" <<'PY' || FAILED+=("headline values")
import json, re, sys

summary = json.load(open(sys.argv[1]))
text = " ".join(open(sys.argv[2], encoding="utf-8").read().split())
marker = "Training curves"
failures = []
if marker in text:
    headline = text[: text.index(marker)]
else:
    failures.append(f'the printed page has no "{marker}" heading (values looked for in all its text)')
    headline = text

def mib(b):
    return "%.1f MiB" % (b / 1048576.0)

# The formats of apps/magmadnn/report.h.
mem = summary.get("memory", {})
need = sum(mem.get(k, 0) for k in ("dataset_bytes", "parameter_bytes", "gradient_bytes", "optimizer_state_bytes"))
threads = summary["threads"]
expected = {
    "test accuracy": "%.2f%%" % (100 * summary["test_accuracy"]),
    "test loss": "%.4f" % summary["test_loss"],
    "training time": "%.2f s" % summary["train_seconds"],
    "samples/s": "{:,.0f}".format(summary["samples_per_second"]),
    "peak memory": mib(mem["peak_rss_bytes"]) if "peak_rss_bytes" in mem else None,
    "memory training needs": mib(need),
    "device": summary["device"],
    "threads": "%d %s" % (threads, "thread" if threads == 1 else "threads"),
}
missing = [f'{what} "{value}"' for what, value in expected.items() if value is None or value not in headline]
for what, value in expected.items():
    print(f'screenshot-report: headline {what}: "{value}" {"missing" if value is None or value not in headline else "found"}')
if missing:
    failures.append("the printed headline lacks " + ", ".join(missing))
for f in failures:
    print("screenshot-report: FAILED: " + f, file=sys.stderr)
if failures:
    sys.exit(f"screenshot-report: the printed headline's text: {headline[:600]!r}")
PY

# 3. Nothing wider than the window: the page measures itself and writes the
# result into its DOM, which chromium dumps.
cp "$REPORT" "$WORK/layout.html"
cat >>"$WORK/layout.html" <<'JS'
<script>
addEventListener("load", () => {
  for (const d of document.querySelectorAll("details")) d.open = true;
  // Inside a box that scrolls or clips, only the box itself can widen the page.
  const clipped = (e) => {
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") return true;
    }
    return false;
  };
  const name = (e) => e.tagName.toLowerCase() + (e.id ? "#" + e.id : "") +
      (typeof e.className === "string" && e.className ? "." + e.className.trim().split(/\s+/).join(".") : "") +
      ' "' + (e.textContent || "").trim().slice(0, 60).replace(/\s+/g, " ") + '"';
  let widest = document.documentElement.scrollWidth, what = "the document (scrollWidth)";
  const scrolling = [];
  for (const e of document.body.querySelectorAll("*")) {
    if (clipped(e)) continue;
    const right = e.getBoundingClientRect().right;
    if (right > widest) { widest = right; what = name(e); }
    const s = getComputedStyle(e).overflowX;
    if ((s === "auto" || s === "scroll") && e.scrollWidth > e.clientWidth + 1) scrolling.push(name(e));
  }
  const out = document.createElement("pre");
  out.id = "layout-check";
  out.textContent = "LAYOUT window=" + window.innerWidth + " widest=" + Math.ceil(widest) + " element=" + what +
      "\nSCROLLS " + (scrolling.join(" | ") || "none");
  document.body.appendChild(out);
});
</script>
JS
chrome --dump-dom --virtual-time-budget=3000 "file://$WORK/layout.html" >"$WORK/dom.html" || true
python3 - "$WORK/dom.html" <<'PY' || FAILED+=("width")
import html, re, sys

dom = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r"LAYOUT window=(\d+) widest=(-?\d+) element=(.*)\nSCROLLS (.*?)</pre>", dom, re.S)
if not m:
    sys.exit("screenshot-report: FAILED: the layout check did not run (no result in chromium's --dump-dom output)")
window, widest, element, scrolls = int(m[1]), int(m[2]), html.unescape(m[3]), html.unescape(m[4])
print(f"screenshot-report: layout: widest {widest} px in a {window} px window ({element})")
if scrolls != "none":
    print(f"screenshot-report: note: scrolls inside its own box: {scrolls}")
if widest > window:
    sys.exit(f"screenshot-report: FAILED: the page is wider than its window: {element} reaches {widest} px, "
             f"the window is {window} px")
PY
if [[ ${#FAILED[@]} -gt 0 ]]; then
  echo "screenshot-report: FAILED checks of $REPORT: ${FAILED[*]}" >&2
  exit 1
fi
echo "screenshot-report: OK: $REPORT"
