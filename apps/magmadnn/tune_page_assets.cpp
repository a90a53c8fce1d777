#include "tune_page_assets.h"

namespace magmadnn::cli {

const char* const kTunePageStyle =
    "*{box-sizing:border-box}\n"
    "body{margin:0;font:14px/1.4 sans-serif;color:#222;background:#f3f4f6}\n"
    "main{max-width:1160px;margin:0 auto;padding:20px 24px 40px}\n"
    "h1{font-size:22px;margin:0 0 4px;overflow-wrap:anywhere}h2{font-size:18px;margin:28px 0 10px}"
    "h3{font-size:15px;margin:4px 0 8px}\n"
    ".sub{color:#555;margin:0 0 16px;overflow-wrap:anywhere}.note{color:#555;font-size:12px}\n"
    ".cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(160px,1fr));gap:12px}\n"
    ".card{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:10px 14px;min-width:0;"
    "overflow-wrap:anywhere}\n"
    ".card.accent{border-top:4px solid #e6550d}\n"
    ".card .label{font-size:12px;color:#666;text-transform:uppercase;letter-spacing:.04em}\n"
    ".card .value{font-size:26px;font-weight:600;margin:2px 0}.card .note{font-size:12px;color:#555}\n"
    ".grid2{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:14px}\n"
    ".best-box{display:grid;grid-template-columns:minmax(240px,300px) 1fr;gap:14px;align-items:start}\n"
    "@media (max-width:900px){.best-box{grid-template-columns:1fr}}\n"
    ".best-curves{grid-template-columns:repeat(auto-fit,minmax(340px,1fr))}\n"
    ".panel{background:#fff;border:1px solid #d8dbe0;border-radius:8px;padding:6px;min-width:0}\n"
    ".params{padding:10px}.params .kv{width:100%;font-size:13px}.params .kv th{overflow-wrap:anywhere}"
    ".params .kv td{text-align:right;white-space:nowrap}\n"
    "svg.chart{display:block;width:100%;height:auto}\n"
    "svg.heat{max-width:900px;margin:0 auto}\n"
    ".chart text{font-size:12px;fill:#222}.chart .title{font-size:14px;font-weight:bold}\n"
    ".chart .label{font-size:13px}.chart .grid{stroke:#e4e4e4}.chart .clipped{font-size:11px;fill:#777}\n"
    ".chart g.cell text.v{font-size:12px}\n"
    ".curves.dim g.trial-curve{opacity:.2}.curves g.trial-curve.hl{opacity:1}\n"
    ".curves g.trial-curve.hl polyline{stroke-width:3.5;stroke-opacity:1}\n"
    ".scroll{overflow:auto;max-width:100%}.table-box{max-height:560px}\n"
    "table{border-collapse:collapse;background:#fff}\n"
    "td,th{border:1px solid #d0d0d0;padding:3px 8px;text-align:right}th{background:#eef0f3}\n"
    ".trials{width:100%;font-size:12px}.trials td,.trials th{padding:2px 6px;white-space:nowrap}\n"
    ".trials thead th{position:sticky;top:0;cursor:pointer;user-select:none}\n"
    ".trials thead th[aria-sort=ascending]::after{content:\" \\25B2\"}"
    ".trials thead th[aria-sort=descending]::after{content:\" \\25BC\"}\n"
    ".trials th:last-child{text-align:left}\n"
    ".trials td.error{text-align:left;white-space:normal;min-width:160px;max-width:360px;overflow-wrap:anywhere;"
    "color:#b71c1c}\n"
    ".trials tr.failed td{background:#fdecec}.trials tr.pruned td{color:#777;font-style:italic;background:#f6f6f6}\n"
    ".trials tr.best td{background:#fff1e6;font-weight:600}.trials tr.best td:first-child{box-shadow:inset 4px 0 "
    "#e6550d}\n"
    ".trials tbody tr:hover td{background:#e8f0fa}\n"
    ".kv th{text-align:left}.kv td{text-align:left;overflow-wrap:anywhere}\n"
    ".space{width:100%}.space code{font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}\n"
    "@media print{body{background:#fff}.scroll{overflow:visible;max-height:none}.card,.panel{break-inside:avoid}"
    ".trials thead th{position:static}}\n";

const char* const kTunePageScript = R"JS((() => {
  const table = document.getElementById("trials");
  if (!table) return;
  const body = table.tBodies[0];
  const heads = [...table.tHead.rows[0].cells];
  const sortBy = (th) => {
    const col = heads.indexOf(th);
    const ascending = th.getAttribute("aria-sort") !== "ascending";
    const numeric = th.dataset.type === "num";
    const key = (row) => {
      const v = row.cells[col].dataset.v ?? "";
      return numeric ? (v === "" ? NaN : Number(v)) : v;
    };
    const rows = [...body.rows];
    rows.sort((a, b) => {
      const x = key(a), y = key(b);
      const xe = numeric ? Number.isNaN(x) : x === "", ye = numeric ? Number.isNaN(y) : y === "";
      if (xe || ye) return xe - ye;  // empty values last, whichever way
      const d = numeric ? x - y : x.localeCompare(y, undefined, {numeric: true});
      return ascending ? d : -d;
    });
    for (const h of heads) h.setAttribute("aria-sort", "none");
    th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
    body.append(...rows);
  };
  for (const th of heads) {
    th.tabIndex = 0;
    th.addEventListener("click", () => sortBy(th));
    th.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") { e.preventDefault(); sortBy(th); }
    });
  }
  const curves = document.querySelector(".curves");
  const highlight = (trial) => {
    if (!curves) return;
    curves.classList.toggle("dim", trial !== null);
    for (const g of curves.querySelectorAll("g.trial-curve")) {
      g.classList.toggle("hl", g.dataset.trial === trial);
    }
  };
  body.addEventListener("mouseover", (e) => {
    const row = e.target.closest("tr");
    highlight(row ? row.dataset.trial : null);
  });
  body.addEventListener("mouseleave", () => highlight(null));
})();
)JS";

}  // namespace magmadnn::cli
