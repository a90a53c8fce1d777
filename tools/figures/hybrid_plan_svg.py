#!/usr/bin/env python3
"""Draws docs/figures/hybrid_lenet5_auto.svg: LeNet-5 under "parallel": "auto"
on 2 ranks (run/parallel_plan.h), one column per rank, each layer a box
coloured by its placement, the transitions and their collectives between
them. The placements are those ParallelPlan.LeNet5UnderAuto asserts.

    python3 tools/figures/hybrid_plan_svg.py > docs/figures/hybrid_lenet5_auto.svg
"""

B = "B"  # the global batch
COLOURS = {
    "data": ("#dbe9f6", "#3b6ea5"),
    "column": ("#fde5c8", "#c0711b"),
    "row": ("#fde5c8", "#c0711b"),
    "replicated": ("#e8e8e8", "#707070"),
}
# (layer, placement, rank 0's part, rank 1's part)
LAYERS = [
    ("input {B,1,28,28}", "replicated", "whole batch (every rank loads it)", "whole batch (every rank loads it)"),
    ("scatter_batch", None, "rows 0..B/2   (no communication)", "rows B/2..B   (no communication)"),
    ("conv2d 6, 5x5, relu", "data", "rows 0..B/2, all 6 filters", "rows B/2..B, all 6 filters"),
    ("pool 2x2", "data", "rows 0..B/2", "rows B/2..B"),
    ("conv2d 16, 5x5, relu", "data", "rows 0..B/2, all 16 filters", "rows B/2..B, all 16 filters"),
    ("pool 2x2, flatten", "data", "rows 0..B/2 -> {B/2, 400}", "rows B/2..B -> {B/2, 400}"),
    ("gather_batch", None, "allgather {B, 400}; bwd: own rows", "allgather {B, 400}; bwd: own rows"),
    ("dense 120, relu (column)", "column", "W rows 0..60 -> {B, 60}; bwd: allreduce dx {B, 400}",
     "W rows 60..120 -> {B, 60}; bwd: allreduce dx {B, 400}"),
    ("dense 84, relu (row)", "row", "W cols 0..60; fwd: allreduce {B, 84}", "W cols 60..120; fwd: allreduce {B, 84}"),
    ("dense 10, softmax", "replicated", "whole W, whole batch", "whole W, whole batch"),
    ("loss on the whole batch", "replicated", "the same on both ranks", "the same on both ranks"),
]
LEGEND = [
    ("data", "data-parallel: weights replicated, gradients summed (allreduce)"),
    ("column", "model-parallel: weight split, 1/P per rank"),
    ("replicated", "replicated on the whole batch: no exchange"),
]

W, ROW, BOX_H = 1060, 46, 34
X_NAME, X0, X1, COL_W = 20, 220, 640, 420
top = 70
height = top + ROW * len(LAYERS) + 40 + 24 * len(LEGEND) + 20


def esc(s):
    return s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


out = []
out.append(f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{height}" '
           f'viewBox="0 0 {W} {height}" font-family="Helvetica, Arial, sans-serif" font-size="13">')
out.append(f'<rect width="{W}" height="{height}" fill="white"/>')
out.append('<text x="20" y="26" font-size="16" font-weight="bold">'
           'LeNet-5 under "parallel": "auto" on 2 ranks (global batch B)</text>')
out.append(f'<text x="{X0 + COL_W / 2}" y="56" text-anchor="middle" font-weight="bold">rank 0</text>')
out.append(f'<text x="{X1 + COL_W / 2}" y="56" text-anchor="middle" font-weight="bold">rank 1</text>')
for i, (name, placement, r0, r1) in enumerate(LAYERS):
    y = top + i * ROW
    if placement is None:  # a transition: an arrow band across both ranks
        out.append(f'<text x="{X_NAME}" y="{y + 22}" font-style="italic" fill="#8a1c1c">{esc(name)}</text>')
        for x, text in ((X0, r0), (X1, r1)):
            out.append(f'<line x1="{x + 10}" y1="{y + 4}" x2="{x + 10}" y2="{y + BOX_H}" stroke="#8a1c1c" '
                       'stroke-width="2" marker-end="url(#arrow)"/>')
            out.append(f'<text x="{x + 22}" y="{y + 22}" fill="#8a1c1c">{esc(text)}</text>')
        if name == "gather_batch":
            out.append(f'<line x1="{X0 + COL_W - 90}" y1="{y + 18}" x2="{X1 - 10}" y2="{y + 18}" stroke="#8a1c1c" '
                       'stroke-dasharray="5,3" marker-end="url(#arrow)" marker-start="url(#arrow)"/>')
        continue
    fill, stroke = COLOURS[placement]
    out.append(f'<text x="{X_NAME}" y="{y + 22}">{esc(name)}</text>')
    for x, text in ((X0, r0), (X1, r1)):
        out.append(f'<rect x="{x}" y="{y}" width="{COL_W - 20}" height="{BOX_H}" rx="5" fill="{fill}" '
                   f'stroke="{stroke}" stroke-width="1.5"/>')
        out.append(f'<text x="{x + 10}" y="{y + 22}">{esc(text)}</text>')
    if placement == "row":
        out.append(f'<line x1="{X0 + COL_W - 20}" y1="{y + 17}" x2="{X1}" y2="{y + 17}" stroke="#c0711b" '
                   'stroke-dasharray="5,3" marker-end="url(#arrow)" marker-start="url(#arrow)"/>')
out.insert(2, '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
              'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#8a1c1c"/></marker></defs>')
y = top + ROW * len(LAYERS) + 16
for i, (placement, text) in enumerate(LEGEND):
    fill, stroke = COLOURS[placement]
    out.append(f'<rect x="20" y="{y + 24 * i}" width="28" height="16" rx="3" fill="{fill}" stroke="{stroke}"/>')
    out.append(f'<text x="58" y="{y + 24 * i + 13}">{esc(text)}</text>')
out.append(f'<text x="{W - 20}" y="{y + 13}" text-anchor="end" fill="#8a1c1c">red: transitions and their '
           'collectives (forward; backward)</text>')
out.append('</svg>')
print("\n".join(out))
