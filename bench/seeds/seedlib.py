"""What every script of bench/seeds shares: SVG charts without dependencies,
Markdown tables, the run's provenance (date, commit, machine, load) and the
layout of an experiment's outputs.

An experiment NAME writes into its output folder (default docs/seeds/):
  NAME.svg   the figure: one or more charts side by side; every curve is a
             <polyline class="series" data-name="..."> (what the checks read)
  NAME.md    the table, Markdown, with a line of provenance under it
  NAME.json  {"experiment", "reduced", "provenance", "settings", "rows", "series"}
Only the Python 3 standard library is used.
"""
import datetime
import json
import math
import os
import platform
import subprocess
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[2]
PALETTE = ["#d62728", "#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]


# --------------------------------------------------------------------- provenance

def _run(cmd):
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30, cwd=ROOT).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def load_average():
    try:
        return os.getloadavg()[0]
    except OSError:
        return None


def machine():
    """The CPU in words: model name, family, vCPUs, widest vector extension."""
    info = {}
    for line in _run(["lscpu"]).splitlines():
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    flags = info.get("Flags", "")
    vec = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "no AVX2"
    fam = info.get("CPU family", "?")
    zen = {"23": "Zen 2", "25": "Zen 3", "26": "Zen 5"}.get(fam, "") if "AMD" in info.get("Vendor ID", "") else ""
    name = info.get("Model name", platform.processor() or "unknown CPU")
    return (f"{name}{' (' + zen + ')' if zen else ''}, CPU family {fam}, "
            f"{info.get('CPU(s)', os.cpu_count())} vCPUs, {vec}")


def provenance(load_before=None):
    commit = _run(["git", "rev-parse", "--short=8", "HEAD"]) or "unknown"
    if _run(["git", "status", "--porcelain", "--untracked-files=no"]):
        commit += "+uncommitted"
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": commit,
        "machine": machine(),
        "load_before": load_before,
        "load_after": load_average(),
    }


def provenance_line(p):
    lb, la = p.get("load_before"), p.get("load_after")
    load = ""
    if lb is not None and la is not None:
        load = f"; 1-minute load {lb:.2f} before, {la:.2f} after"
    return f"Run {p['date']} at commit `{p['commit']}` on {p['machine']}{load}."


# --------------------------------------------------------------------- files

def find_program(explicit, *relative):
    """`explicit` if given, else the first build*/REL that exists (build/ first)."""
    if explicit:
        return Path(explicit)
    builds = [ROOT / "build"] + sorted(p for p in ROOT.glob("build*") if p.name != "build")
    for b in builds:
        for rel in relative:
            if (b / rel).exists():
                return b / rel
    raise SystemExit(f"cannot find {' or '.join(relative)} under {ROOT}/build*; build it or pass its path")


def markdown_table(headers, rows):
    def cell(v):
        if isinstance(v, float):
            return f"{v:.4g}"
        return str(v)
    out = ["| " + " | ".join(headers) + " |", "|" + "---|" * len(headers)]
    out += ["| " + " | ".join(cell(v) for v in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def write_outputs(out_dir, name, svg, headers, rows, prov, settings, reduced, series=None, notes=""):
    """Writes NAME.svg, NAME.md and NAME.json into out_dir; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.svg").write_text(svg)
    md = markdown_table(headers, rows) + "\n" + provenance_line(prov) + ("\n" + notes if notes else "") + "\n"
    if reduced:
        md += "Reduced form (fewer points and steps): a check that the script runs, not a result.\n"
    (out / f"{name}.md").write_text(md)
    record = {"experiment": name, "reduced": reduced, "provenance": prov, "settings": settings,
              "headers": headers, "rows": rows, "series": series or {}}
    (out / f"{name}.json").write_text(json.dumps(record, indent=1) + "\n")
    return [out / f"{name}.{e}" for e in ("svg", "md", "json")]


# --------------------------------------------------------------------- SVG

def _nice_step(span, target=5):
    raw = span / max(1, target)
    if raw <= 0:
        return 1.0
    mag = 10 ** math.floor(math.log10(raw))
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def _fmt(v):
    if v == 0:
        return "0"
    if abs(v) >= 1e6 or abs(v) < 1e-3:
        return f"{v:.0e}".replace("e-0", "e-").replace("e+0", "e")
    return f"{v:g}"


def _log_axis(lo, hi):
    """(lo, hi, ticks) of a logarithmic axis over [lo, hi], both > 0: whole
    decades, with 2 and 5 between them when there are at most two."""
    lo_e, hi_e = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    if hi_e == lo_e:
        hi_e += 1
    ticks = [10.0 ** e for e in range(lo_e, hi_e + 1)]
    if hi_e - lo_e <= 2:
        ticks = sorted({m * 10.0 ** e for e in range(lo_e, hi_e) for m in (1, 2, 5)} | {10.0 ** hi_e})
    return 10.0 ** lo_e, 10.0 ** hi_e, ticks


class Chart:
    """One panel: named series of (x, y) points.

    log_y: a logarithmic y axis (points with y <= 0 are dropped); log_x the same for x.
    styles: name -> {"dash": "6 3", "markers": True, "line": False (markers only), "colour": "#..."}.
    y_range: (lo, hi) to fix the axis instead of fitting the data.
    """

    def __init__(self, title, xlabel, ylabel, log_y=False, y_range=None, width=560, height=380, log_x=False):
        self.title, self.xlabel, self.ylabel = title, xlabel, ylabel
        self.log_y, self.y_range, self.log_x = log_y, y_range, log_x
        self.width, self.height = width, height
        self.series = {}
        self.styles = {}

    def add(self, name, points, **style):
        pts = [(float(x), float(y)) for x, y in points if y is not None and math.isfinite(y)]
        if self.log_y:
            pts = [(x, y) for x, y in pts if y > 0]
        if self.log_x:
            pts = [(x, y) for x, y in pts if x > 0]
        self.series[name] = sorted(pts)
        self.styles[name] = style
        return self

    def _y_axis(self, ys):
        if self.y_range:
            lo, hi = self.y_range
        else:
            lo, hi = min(ys), max(ys)
        if self.log_y:
            return _log_axis(lo, hi)
        lo = min(lo, 0.0) if lo >= 0 and not self.y_range else lo
        step = _nice_step(hi - lo if hi > lo else abs(hi) or 1.0)
        lo_t = step * math.floor(lo / step)
        hi_t = step * math.ceil(hi / step)
        if hi_t <= lo_t:
            hi_t = lo_t + step
        n = int(round((hi_t - lo_t) / step))
        return lo_t, hi_t, [lo_t + i * step for i in range(n + 1)]

    def render(self, ox=0, oy=0):
        pts = [p for s in self.series.values() for p in s]
        if not pts:
            raise ValueError(f"chart '{self.title}': no data points in any series")
        xs = [p[0] for p in pts]
        x_lo, x_hi = min(xs), max(xs)
        if x_hi == x_lo:
            x_hi = x_lo + 1
        if self.log_x:
            x_lo, x_hi, xticks = _log_axis(x_lo, x_hi)
        else:
            xstep = _nice_step(x_hi - x_lo)
            xticks = [xstep * k for k in range(math.ceil(x_lo / xstep), math.floor(x_hi / xstep + 1e-9) + 1)]
        y_lo, y_hi, yticks = self._y_axis([p[1] for p in pts])
        left, right = 62, 14
        longest = max(len(n) for n in self.series)
        cols = 2 if longest * 6.2 + 32 < (self.width - left - right) / 2 else 1  # legend columns that fit
        top, bottom = 34, 48 + 18 * ((len(self.series) + cols - 1) // cols)
        pw, ph = self.width - left - right, self.height - top - bottom

        def sx(x):
            if self.log_x:
                return ox + left + (math.log10(x) - math.log10(x_lo)) / (math.log10(x_hi) - math.log10(x_lo)) * pw
            return ox + left + (x - x_lo) / (x_hi - x_lo) * pw

        def sy(y):
            if self.log_y:
                f = (math.log10(y) - math.log10(y_lo)) / (math.log10(y_hi) - math.log10(y_lo))
            else:
                f = (y - y_lo) / (y_hi - y_lo)
            return oy + top + ph - max(0.0, min(1.0, f)) * ph

        o = [f'<g class="chart" data-title="{escape(self.title)}">',
             f'<text x="{ox + left + pw / 2:.1f}" y="{oy + 20}" text-anchor="middle" font-size="13">'
             f'{escape(self.title)}</text>']
        for t in yticks:
            o.append(f'<line x1="{ox + left}" y1="{sy(t):.1f}" x2="{ox + left + pw}" y2="{sy(t):.1f}" stroke="#e4e4e4"/>')
            o.append(f'<text x="{ox + left - 5}" y="{sy(t) + 4:.1f}" text-anchor="end">{_fmt(t)}</text>')
        for t in xticks:
            o.append(f'<line x1="{sx(t):.1f}" y1="{oy + top + ph}" x2="{sx(t):.1f}" y2="{oy + top + ph + 4}" stroke="black"/>')
            o.append(f'<text x="{sx(t):.1f}" y="{oy + top + ph + 16}" text-anchor="middle">{_fmt(t)}</text>')
        o.append(f'<rect x="{ox + left}" y="{oy + top}" width="{pw}" height="{ph}" fill="none" stroke="black"/>')
        o.append(f'<text x="{ox + left + pw / 2:.1f}" y="{oy + top + ph + 32}" text-anchor="middle">'
                 f'{escape(self.xlabel)}</text>')
        o.append(f'<text transform="translate({ox + 14} {oy + top + ph / 2:.1f}) rotate(-90)" '
                 f'text-anchor="middle">{escape(self.ylabel)}</text>')
        for i, (name, s) in enumerate(self.series.items()):
            st = self.styles.get(name, {})
            colour = st.get("colour", PALETTE[i % len(PALETTE)])
            dash = f' stroke-dasharray="{st["dash"]}"' if st.get("dash") else ""
            width = st.get("width", 1.6)
            path = " ".join(f"{sx(x):.1f},{sy(y):.1f}" for x, y in s)
            stroke = colour if st.get("line", True) else "none"  # line=False: markers only (a scatter)
            o.append(f'<polyline class="series" data-name="{escape(name)}" data-points="{len(s)}" '
                     f'points="{path}" fill="none" stroke="{stroke}" stroke-width="{width}"{dash}/>')
            if st.get("markers"):
                for x, y in s:
                    o.append(f'<circle cx="{sx(x):.1f}" cy="{sy(y):.1f}" r="3" fill="{colour}">'
                             f'<title>{escape(name)}: {y:.4g} at {x:g}</title></circle>')
            lx = ox + left + (i % cols) * pw / 2
            ly = oy + top + ph + 46 + 18 * (i // cols)
            o.append(f'<line x1="{lx:.1f}" y1="{ly - 4}" x2="{lx + 22:.1f}" y2="{ly - 4}" stroke="{colour}" '
                     f'stroke-width="2"{dash}/>')
            o.append(f'<text x="{lx + 27:.1f}" y="{ly}">{escape(name)}</text>')
        o.append("</g>")
        return "\n".join(o)


def figure(charts, columns=2, caption=""):
    """The SVG text of `charts` laid out in a grid of `columns`."""
    columns = max(1, min(columns, len(charts)))
    rows = (len(charts) + columns - 1) // columns
    cw = max(c.width for c in charts)
    ch = max(c.height for c in charts)
    cap_h = 22 if caption else 0
    width, height = cw * columns, ch * rows + cap_h
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>']
    for i, c in enumerate(charts):
        out.append(c.render((i % columns) * cw, (i // columns) * ch))
    if caption:
        out.append(f'<text x="8" y="{height - 7}" font-size="10" fill="#555">{escape(caption)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def decimate(points, at_most):
    """Every k-th point so that at most `at_most` remain (the last one kept)."""
    if len(points) <= at_most:
        return list(points)
    k = math.ceil(len(points) / at_most)
    out = list(points[::k])
    if out[-1] != points[-1]:
        out.append(points[-1])
    return out
