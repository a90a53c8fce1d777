"""A dependency-free SVG line chart for the benchmark harness.

line_chart({"magmadnn": [(1, 3.2), (2, 5.0)], ...}, ...) returns the SVG text
of seconds (y) against hidden layers (x), one coloured polyline with markers
per series, axes with ticks, and a legend. Only the standard library is used,
so the harness runs on any Python 3.
"""
import math
from xml.sax.saxutils import escape

PALETTE = ["#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2"]


def _nice_step(span, target_ticks=6):
    raw = span / max(1, target_ticks)
    mag = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1
    for m in (1, 2, 2.5, 5, 10):
        if raw <= m * mag:
            return m * mag
    return 10 * mag


def line_chart(series, title, xlabel, ylabel, width=640, height=420):
    points = [p for pts in series.values() for p in pts]
    if not points:
        raise ValueError("line_chart: no data points in any series")
    xs = sorted({p[0] for p in points})
    y_max = max(p[1] for p in points)
    y_step = _nice_step(y_max * 1.05 if y_max > 0 else 1.0)
    y_top = y_step * math.ceil(y_max * 1.05 / y_step) if y_max > 0 else y_step
    left, right, top, bottom = 70, 160, 40, 55
    pw, ph = width - left - right, height - top - bottom
    x_lo, x_hi = xs[0], xs[-1]
    x_span = (x_hi - x_lo) or 1

    def sx(x):
        return left + (x - x_lo) / x_span * pw if len(xs) > 1 else left + pw / 2

    def sy(y):
        return top + ph - y / y_top * ph

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{left + pw / 2}" y="22" text-anchor="middle" font-size="14">{escape(title)}</text>']
    y = 0.0
    while y <= y_top + 1e-9:
        out.append(f'<line x1="{left}" y1="{sy(y):.1f}" x2="{left + pw}" y2="{sy(y):.1f}" stroke="#ddd"/>')
        out.append(f'<text x="{left - 6}" y="{sy(y) + 4:.1f}" text-anchor="end">{y:g}</text>')
        y += y_step
    for x in xs:
        out.append(f'<line x1="{sx(x):.1f}" y1="{top + ph}" x2="{sx(x):.1f}" y2="{top + ph + 5}" stroke="black"/>')
        out.append(f'<text x="{sx(x):.1f}" y="{top + ph + 18}" text-anchor="middle">{x:g}</text>')
    out.append(f'<line x1="{left}" y1="{top + ph}" x2="{left + pw}" y2="{top + ph}" stroke="black"/>')
    out.append(f'<line x1="{left}" y1="{top}" x2="{left}" y2="{top + ph}" stroke="black"/>')
    out.append(f'<text x="{left + pw / 2}" y="{height - 12}" text-anchor="middle">{escape(xlabel)}</text>')
    out.append(f'<text transform="translate(18 {top + ph / 2}) rotate(-90)" text-anchor="middle">'
               f'{escape(ylabel)}</text>')
    for i, (name, pts) in enumerate(series.items()):
        colour = PALETTE[i % len(PALETTE)]
        pts = sorted(pts)
        if len(pts) > 1:
            path = " ".join(f"{sx(px):.1f},{sy(py):.1f}" for px, py in pts)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        for px, py in pts:
            out.append(f'<circle cx="{sx(px):.1f}" cy="{sy(py):.1f}" r="3.5" fill="{colour}">'
                       f'<title>{escape(name)}: {py:.2f} s at {px:g}</title></circle>')
        ly = top + 10 + 20 * i
        out.append(f'<line x1="{left + pw + 15}" y1="{ly}" x2="{left + pw + 40}" y2="{ly}" '
                   f'stroke="{colour}" stroke-width="2"/>')
        out.append(f'<text x="{left + pw + 46}" y="{ly + 4}">{escape(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
