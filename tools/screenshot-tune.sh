#!/usr/bin/env bash
# Renders DIR/report.html of `magmadnn tune --out DIR` in headless Chromium
# at 1200x900 and checks it against DIR/results.json:
#   tools/screenshot-tune.sh DIR [OUT.png]      (default OUT: DIR/report.png)
#  1. a PNG screenshot of the window's size is written to OUT;
#  2. in the live page: no script error; the trial table has one row per
#     trial; clicking the objective's header sorts the rows by objective
#     (empty ones last), clicking again reverses them, clicking "trial"
#     restores the index order; hovering a row highlights that trial's curve;
#  3. the heat map has a cell per point of its two axes, exactly one marked
#     best, showing the best trial's objective ("%.4g"); the histogram's bars
#     count every completed trial with an objective; the curve chart has a
#     curve per trial with a point, the best one marked as such;
#  4. the page printed to PDF and read back with pdftotext holds the best
#     objective ("%.6g") and "trial N" of the best trial;
#  5. laid out in a 1200 px window, no element reaches past its right edge.
# Needs Debian's `chromium` and `poppler-utils` (installed when missing and
# root, as tools/screenshot-report.sh does). Exits non-zero naming every
# failed check.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 DIR [OUT.png]" >&2
  exit 2
fi
DIR="$(cd "$1" && pwd)"
OUT="${2:-$DIR/report.png}"
PAGE="$DIR/report.html"
RESULTS="$DIR/results.json"
WIDTH=1200
HEIGHT=900
fail() { echo "screenshot-tune: FAILED: $*" >&2; exit 1; }
[[ -f "$PAGE" ]] || fail "no report.html in $DIR"
[[ -f "$RESULTS" ]] || fail "no results.json in $DIR"

source "$(dirname "${BASH_SOURCE[0]}")/headless-chromium.sh"

# 1. The screenshot.
screenshot "$PAGE" "$OUT"

# 4. The printed text.
print_text "$PAGE" "$WORK/page.txt"

# 2, 3 and 5: the page exercised by a script of ours, which writes what it
# found into the DOM that chromium dumps. Script errors are caught from the
# start of <head>, before the page's own script runs.
python3 - "$PAGE" "$WORK/probe.html" <<'PY'
import sys
page = open(sys.argv[1], encoding="utf-8").read()
catch = ('<script>window.__errors = []; addEventListener("error", (e) => __errors.push(String(e.message))); '
         'const __ce = console.error; console.error = (...a) => { __errors.push(a.join(" ")); __ce(...a); };</script>\n')
if "<head>" not in page:
    sys.exit("screenshot-tune: FAILED: the page has no <head>")
open(sys.argv[2], "w", encoding="utf-8").write(page.replace("<head>", "<head>\n" + catch, 1))
PY
cat >>"$WORK/probe.html" <<'JS'
<script>
addEventListener("load", () => {
  const out = {errors: window.__errors};
  try {
    const table = document.getElementById("trials");
    const heads = [...table.tHead.rows[0].cells];
    const column = (name) => heads.findIndex((h) => h.textContent.replace(/[\u25B2\u25BC]/g, "").trim() === name);
    const values = (name) => [...table.tBodies[0].rows].map((r) => r.cells[column(name)].dataset.v);
    out.rows = [...table.tBodies[0].rows].map((r) => r.dataset.trial);
    const obj = heads[column("objective")];
    obj.click();
    out.objective_ascending = values("objective");
    out.aria_ascending = obj.getAttribute("aria-sort");
    obj.click();
    out.objective_descending = values("objective");
    out.aria_descending = obj.getAttribute("aria-sort");
    heads[column("trial")].click();
    out.rows_after = [...table.tBodies[0].rows].map((r) => r.dataset.trial);
    const row = table.tBodies[0].rows[3];
    row.cells[0].dispatchEvent(new MouseEvent("mouseover", {bubbles: true}));
    out.hovered = row.dataset.trial;
    out.highlighted = [...document.querySelectorAll("g.trial-curve.hl")].map((g) => g.dataset.trial);
    out.cells = [...document.querySelectorAll("svg.heat g.cell")].map((g) => ({
      cls: g.getAttribute("class"), text: g.querySelector("text.v").textContent}));
    out.heat_rows = new Set([...document.querySelectorAll("svg.heat g.cell")].map((g) => g.dataset.row)).size;
    out.heat_cols = new Set([...document.querySelectorAll("svg.heat g.cell")].map((g) => g.dataset.col)).size;
    out.bins = [...document.querySelectorAll("rect.bin")].map((r) => Number(r.dataset.count));
    out.curves = [...document.querySelectorAll("g.trial-curve")].map((g) => ({
      trial: g.dataset.trial, cls: g.getAttribute("class")}));
  } catch (e) {
    out.errors.push("probe: " + e);
  }
  const clipped = (e) => {
    for (let a = e.parentElement; a && a !== document.body; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== "visible") return true;
    }
    return false;
  };
  let widest = document.documentElement.scrollWidth;
  for (const e of document.body.querySelectorAll("*")) {
    if (!clipped(e)) widest = Math.max(widest, e.getBoundingClientRect().right);
  }
  out.window = innerWidth;
  out.widest = Math.ceil(widest);
  const pre = document.createElement("pre");
  pre.id = "probed";
  pre.textContent = "PROBED " + JSON.stringify(out) + " END";
  document.body.appendChild(pre);
});
</script>
JS
chrome --dump-dom --virtual-time-budget=3000 "file://$WORK/probe.html" >"$WORK/dom.html" || true

python3 - "$OUT" "$WIDTH" "$HEIGHT" "$RESULTS" "$WORK/dom.html" "$WORK/page.txt" <<'PY'
import html, json, math, re, struct, sys

shot, W, H, results_path, dom_path, text_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), *sys.argv[4:]
failures = []
def check(ok, what):
    print(f"screenshot-tune: {'ok' if ok else 'FAILED'}: {what}")
    if not ok:
        failures.append(what)

data = open(shot, "rb").read()
size = struct.unpack(">II", data[16:24]) if data[:8] == b"\x89PNG\r\n\x1a\n" else None
check(size == (W, H), f"screenshot {shot} is a {W}x{H} PNG (got {size})")

r = json.load(open(results_path))
trials = r["trials"]
best = r.get("best")
dom = open(dom_path, encoding="utf-8").read()
m = re.search(r'<pre id="probed">PROBED (.*?) END</pre>', dom, re.S)
if not m:
    sys.exit("screenshot-tune: FAILED: the probe did not run (nothing in chromium's --dump-dom output)")
p = json.loads(html.unescape(m[1]))

check(not p["errors"], f"no script error ({p['errors']})")
indices = [str(i) for i in sorted(t["index"] for t in trials)]
check(p.get("rows") == indices, f"the table has one row per trial, in index order ({len(p.get('rows', []))} rows)")

def numbers(vs):
    return [float(v) if v != "" else None for v in vs]
def sorted_ok(vs, reverse):
    full = [v for v in vs if v is not None]
    tail = vs[len(full):]
    return full == sorted(full, reverse=reverse) and all(v is None for v in tail)
asc, desc = numbers(p.get("objective_ascending", [])), numbers(p.get("objective_descending", []))
check(len(asc) == len(trials) and sorted_ok(asc, False) and p.get("aria_ascending") == "ascending",
      "a click on \"objective\" sorts the rows by objective, ascending, empty ones last")
check(len(desc) == len(trials) and sorted_ok(desc, True) and p.get("aria_descending") == "descending",
      "a second click sorts them descending, empty ones still last")
check(p.get("rows_after") == indices, "a click on \"trial\" restores the index order")
check(p.get("highlighted") == [p.get("hovered")], f"hovering trial {p.get('hovered')}'s row highlights its curve only "
      f"({p.get('highlighted')})")

cells = p.get("cells", [])
check(len(cells) == p.get("heat_rows", 0) * p.get("heat_cols", 0) and len(cells) > 0,
      f"the heat map has a cell per point ({p.get('heat_rows')} x {p.get('heat_cols')}, {len(cells)} cells)")
best_cells = [c for c in cells if c["cls"].split()[-1] == "best"]
by_index = {t["index"]: t for t in trials}
if best is not None and by_index[best].get("objective") is not None:
    want = "%.4g" % by_index[best]["objective"]
    check(len(best_cells) == 1 and best_cells[0]["text"] == want,
          f"one heat map cell is marked best and shows {want} ({best_cells})")
completed = [t for t in trials if t["status"] == "ok" and t.get("objective") is not None]
check(sum(p.get("bins", [])) == len(completed),
      f"the histogram counts the {len(completed)} completed trials ({p.get('bins')})")
with_points = [str(t["index"]) for t in trials
               if any(pt.get("loss") is not None for pt in t.get("curve", []))]
curves = p.get("curves", [])
check(sorted(c["trial"] for c in curves) == sorted(with_points), f"a curve per trial with a point ({len(curves)})")
if best is not None:
    check([c["trial"] for c in curves if "best" in c["cls"].split()] == [str(best)], f"trial {best}'s curve is the best")

text = " ".join(open(text_path, encoding="utf-8").read().split())
if best is not None and by_index[best].get("objective") is not None:
    for want in ["%.6g" % by_index[best]["objective"], f"trial {best}"]:
        check(want in text, f'the printed page holds "{want}"')
check(p["widest"] <= p["window"], f"nothing wider than the window (widest {p['widest']} px in {p['window']} px)")
sys.exit(1 if failures else 0)
PY
echo "screenshot-tune: OK: $PAGE"
