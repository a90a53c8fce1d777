#!/usr/bin/env python3
"""Runs one bench/seeds script (the command after --) and checks what it
wrote into --out: NAME.svg parses, has --charts charts each with at least
--series polylines of at least --points points whose coordinates are
numbers; NAME.md has a table of at least --rows rows whose --numeric
columns (1-based) parse as numbers; NAME.json carries the provenance and
says whether the run was reduced (--reduced expects it to).

  check_seed_outputs.py --out DIR --name NAME --charts 2 --series 2 --points 10 \
      --rows 4 --numeric 3,4 [--reduced] -- bench/seeds/SCRIPT --reduced --out DIR
"""
import argparse
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

SVG = "{http://www.w3.org/2000/svg}"


def fail(msg):
    print(f"check_seed_outputs: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check_svg(path, charts, series, points):
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        fail(f"{path}: not a readable SVG: {e}")
    groups = [g for g in root.iter(f"{SVG}g") if g.get("class") == "chart"]
    if len(groups) < charts:
        fail(f"{path}: {len(groups)} charts, expected {charts}")
    for g in groups:
        lines = [p for p in g.iter(f"{SVG}polyline") if p.get("class") == "series"]
        if len(lines) < series:
            fail(f"{path}: chart '{g.get('data-title')}' has {len(lines)} curves, expected at least {series}")
        for p in lines:
            pts = p.get("points", "").split()
            if len(pts) < points or int(p.get("data-points", "0")) != len(pts):
                fail(f"{path}: curve '{p.get('data-name')}' of '{g.get('data-title')}' has {len(pts)} points, "
                     f"expected at least {points}")
            for xy in pts:
                try:
                    [float(v) for v in xy.split(",")]
                except ValueError:
                    fail(f"{path}: curve '{p.get('data-name')}': point {xy!r} is not two numbers")


def check_table(path, rows, numeric):
    lines = [l for l in Path(path).read_text().splitlines() if l.startswith("|")]
    if len(lines) < 2 + rows:
        fail(f"{path}: {max(0, len(lines) - 2)} table rows, expected at least {rows}")
    for l in lines[2:]:
        cells = [c.strip() for c in l.strip("|").split("|")]
        for col in numeric:
            if col > len(cells):
                fail(f"{path}: row '{cells[0]}' has {len(cells)} columns, no column {col}")
            text = re.sub(r"\s*\(.*\)$", "", cells[col - 1]).rstrip("%")
            try:
                float(text)
            except ValueError:
                fail(f"{path}: column {col} of row '{cells[0]}' is {cells[col - 1]!r}, not a number")


def main():
    argv = sys.argv[1:]
    cmd = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--name", required=True)
    ap.add_argument("--charts", type=int, default=1)
    ap.add_argument("--series", type=int, default=1)
    ap.add_argument("--points", type=int, default=2)
    ap.add_argument("--rows", type=int, default=1)
    ap.add_argument("--numeric", default="")
    ap.add_argument("--reduced", action="store_true")
    a = ap.parse_args(argv)
    out = Path(a.out)
    for ext in ("svg", "md", "json"):
        (out / f"{a.name}.{ext}").unlink(missing_ok=True)
    if cmd:
        p = subprocess.run([sys.executable] + cmd, timeout=1800)
        if p.returncode != 0:
            fail(f"{' '.join(cmd)} exited {p.returncode}")
    for ext in ("svg", "md", "json"):
        if not (out / f"{a.name}.{ext}").exists():
            fail(f"{out / (a.name + '.' + ext)} was not written")
    check_svg(out / f"{a.name}.svg", a.charts, a.series, a.points)
    check_table(out / f"{a.name}.md", a.rows, [int(c) for c in a.numeric.split(",") if c])
    rec = json.loads((out / f"{a.name}.json").read_text())
    for key in ("date", "commit", "machine"):
        if not rec.get("provenance", {}).get(key):
            fail(f"{a.name}.json: provenance has no {key}")
    if rec.get("reduced") != a.reduced:
        fail(f"{a.name}.json: reduced is {rec.get('reduced')}, expected {a.reduced}")
    print(f"check_seed_outputs: {a.name}: ok")


if __name__ == "__main__":
    main()
