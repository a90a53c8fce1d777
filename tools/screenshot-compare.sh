#!/usr/bin/env bash
# Renders a `magmadnn compare` page in headless Chromium at 1200x900 and
# checks what a reader would see:
#   tools/screenshot-compare.sh PAGE.html OUT.png RUN_DIR...
#  1. a PNG screenshot of the window's size is written to OUT, and it is not
#     blank (many colours);
#  2. in each chart, every run has a series and a legend entry (its label,
#     "N rank(s)[, strategy]: NAME", NAME the run folder's name), and in the
#     screenshot each series' box holds pixels of its own colour, so every
#     curve is drawn where the page says it is;
#  3. the page printed to PDF and read back with pdftotext holds every run's
#     label and its test accuracy from summary.json ("%.2f%%");
#  4. laid out in a 1200 px window, no element reaches past its right edge.
# Needs Debian's `chromium` and `poppler-utils` (installed when missing and
# root; see tools/screenshot-report.sh). Exits non-zero naming every failed check.
set -euo pipefail
if [[ $# -lt 3 ]]; then
  echo "usage: $0 PAGE.html OUT.png RUN_DIR..." >&2
  exit 2
fi
PAGE="$(cd "$(dirname "$1")" && pwd)/$(basename "$1")"
OUT="$2"
shift 2
RUNS=("$@")
WIDTH=1200
HEIGHT=900
fail() { echo "screenshot-compare: FAILED: $*" >&2; exit 1; }
[[ -f "$PAGE" ]] || fail "no page $PAGE"
for r in "${RUNS[@]}"; do [[ -f "$r/summary.json" ]] || fail "no summary.json in $r"; done

source "$(dirname "${BASH_SOURCE[0]}")/headless-chromium.sh"

# The screenshot, the printed text, and the page's own measurements (series
# and legend boxes, the widest element) written into its DOM and dumped.
screenshot "$PAGE" "$OUT"
print_text "$PAGE" "$WORK/page.txt"
cp "$PAGE" "$WORK/measure.html"
cat >>"$WORK/measure.html" <<'JS'
<script>
addEventListener("load", () => {
  const box = (e) => { const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const charts = [];
  for (const svg of document.querySelectorAll("svg.chart")) {
    const series = [...svg.querySelectorAll("g.series")].map((g) => ({
      label: g.getAttribute("data-series"),
      color: g.querySelector("polyline").getAttribute("stroke"),
      box: box(g),
    }));
    const legend = [...svg.querySelectorAll("g.legend text")].map((t) => t.textContent);
    charts.push({title: svg.getAttribute("aria-label"), series, legend});
  }
  let widest = document.documentElement.scrollWidth;
  for (const e of document.body.querySelectorAll("*")) {
    let clipped = false;
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") clipped = true;
    }
    if (!clipped) widest = Math.max(widest, e.getBoundingClientRect().right);
  }
  const out = document.createElement("pre");
  out.id = "measured";
  out.textContent = "MEASURED " + JSON.stringify({window: innerWidth, widest: Math.ceil(widest), charts}) + " END";
  document.body.appendChild(out);
});
</script>
JS
chrome --dump-dom --virtual-time-budget=3000 "file://$WORK/measure.html" >"$WORK/dom.html" || true

python3 - "$OUT" "$WIDTH" "$HEIGHT" "$WORK/dom.html" "$WORK/page.txt" "${RUNS[@]}" <<'PY'
import html, json, os, re, struct, sys, zlib

shot, W, H, dom_path, text_path, runs = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], sys.argv[6:]
failures = []

def read_png(path):
    """RGB(A) 8-bit non-interlaced PNG -> (width, height, channels, rows of bytes)."""
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit(f"screenshot-compare: FAILED: {path} is not a PNG")
    pos, idat, ihdr = 8, b"", None
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR": ihdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT": idat += body
        pos += 12 + n
    w, h, depth, ctype, _, _, interlace = ihdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        sys.exit(f"screenshot-compare: FAILED: {path}: unexpected PNG format (depth {depth}, colour type {ctype})")
    ch = 3 if ctype == 2 else 4
    raw, stride, rows, prev = zlib.decompress(idat), w * ch, [], bytearray(w * ch)
    for y in range(h):
        f, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - ch] if i >= ch else 0
            b, c = prev[i], prev[i - ch] if i >= ch else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, ch, rows

# 1. The screenshot: its size, and not blank.
w, h, ch, rows = read_png(shot)
if (w, h) != (W, H):
    failures.append(f"{shot} is {w}x{h}, not {W}x{H}")
colours = set()
for y in range(0, h, 3):
    r = rows[y]
    for x in range(0, w, 3):
        colours.add(bytes(r[x * ch:x * ch + 3]))
print(f"screenshot-compare: screenshot {shot} ({w}x{h}, {len(colours)} colours sampled)")
if len(colours) < 50:
    failures.append(f"the screenshot looks blank ({len(colours)} colours)")

# 2. Series and legend entries per run, and their colours where the page drew them.
dom = open(dom_path, encoding="utf-8").read()
m = re.search(r"<pre id=\"measured\">MEASURED (.*?) END</pre>", dom, re.S)
if not m:
    sys.exit("screenshot-compare: FAILED: the measuring script did not run (nothing in --dump-dom's output)")
measured = json.loads(html.unescape(m[1]))
summaries = {r: json.load(open(os.path.join(r, "summary.json"))) for r in runs}
def label(run):
    s = summaries[run]
    n = int(s.get("ranks", 1))
    return f"{n} rank{'' if n == 1 else 's'}" + (f", {s['strategy']}" if s.get("strategy") else "") + \
        ": " + os.path.basename(os.path.normpath(run))
labels = [label(r) for r in runs]
if len(measured["charts"]) != 2:
    failures.append(f"expected 2 charts, found {len(measured['charts'])}")
for c in measured["charts"]:
    for want in labels:
        series = [s for s in c["series"] if s["label"] == want or s["label"].startswith(want + " (")]
        if not series:
            failures.append(f'chart "{c["title"]}" has no series for "{want}"')
            continue
        if not any(t == series[0]["label"] for t in c["legend"]):
            failures.append(f'chart "{c["title"]}" has no legend entry "{series[0]["label"]}"')
        s = series[0]
        rgb = bytes(int(s["color"][i:i + 2], 16) for i in (1, 3, 5))
        x0, y0, x1, y1 = (int(v) for v in s["box"])
        hits = 0
        for y in range(max(0, y0), min(h, y1 + 1)):
            r = rows[y]
            for x in range(max(0, x0), min(w, x1 + 1)):
                if r[x * ch:x * ch + 3] == rgb:
                    hits += 1
        print(f'screenshot-compare: "{c["title"]}": "{s["label"]}" {s["color"]}: {hits} pixels in its box {s["box"]}')
        if hits < 20:
            failures.append(f'chart "{c["title"]}": the series "{s["label"]}" shows {hits} pixels of {s["color"]}')

# 3. The printed text: every label and every test accuracy.
text = " ".join(open(text_path, encoding="utf-8").read().split())
for run, want in zip(runs, labels):
    acc = summaries[run].get("test_accuracy")
    for what in [want] + (["%.2f%%" % (100 * acc)] if acc is not None else []):
        found = what in text
        print(f'screenshot-compare: printed text: "{what}" {"found" if found else "missing"}')
        if not found:
            failures.append(f'the printed page lacks "{what}"')

# 4. Nothing wider than the window.
print(f"screenshot-compare: layout: widest {measured['widest']} px in a {measured['window']} px window")
if measured["widest"] > measured["window"]:
    failures.append(f"the page is wider than its window ({measured['widest']} > {measured['window']} px)")

for f in failures:
    print("screenshot-compare: FAILED: " + f, file=sys.stderr)
sys.exit(1 if failures else 0)
PY
echo "screenshot-compare: OK: $PAGE"
