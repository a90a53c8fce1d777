#!/usr/bin/env python3
"""Checks docs/seeds.md against the files it shows:
 - its status table lists every item of issue 42, each "done", "partly" or
   "not yet", and an item that is done or partly names a script of
   bench/seeds that exists;
 - every figure it shows (seeds/NAME.svg) exists, and its NAME.json says it
   is a full run (not the reduced CI form) with a date, commit and machine;
 - every table it shows after `<!-- table: seeds/NAME.md -->` is the table
   of that file, row for row (so the page cannot drift from the runs).
Usage: check_seeds_page.py REPO_ROOT
"""
import json
import re
import sys
from pathlib import Path

ITEMS = ["paper-fig3", "paper-4.1", "paper-4.3", "shm-fig2.1", "shm-5", "shm-6", "shm-4",
         "dmath-table1", "dmath-2.1", "dmath-4.2", "poster-fig4"]
STATUSES = {"done", "partly", "not yet"}


def fail(msg):
    print(f"check_seeds_page: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def table_lines(text):
    return [l.strip() for l in text.splitlines() if l.startswith("|")]


def main():
    root = Path(sys.argv[1])
    page = (root / "docs" / "seeds.md").read_text()
    seen = {}
    for line in page.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells and cells[0].strip("`") in ITEMS:
            item = cells[0].strip("`")
            m = re.match(r"\**(done|partly|not yet)\b", cells[-1])
            status = m.group(1) if m else cells[-1]
            if status not in STATUSES:
                fail(f"item {item}: status {cells[-1]!r} is none of {sorted(STATUSES)}")
            if status != "not yet":
                scripts = re.findall(r"`(bench/seeds/[^`\s]+)", line)
                if not scripts:
                    fail(f"item {item} is {status} but names no bench/seeds script")
                for s in scripts:
                    if not (root / s).exists():
                        fail(f"item {item}: {s} does not exist")
            seen[item] = status
    missing = [i for i in ITEMS if i not in seen]
    if missing:
        fail(f"the status table lacks {', '.join(missing)}")

    for svg in re.findall(r"\]\((seeds/[^)]+\.svg)\)", page):
        path = root / "docs" / svg
        if not path.exists():
            fail(f"the page shows {svg}, which does not exist")
        rec_path = path.with_suffix(".json")
        if rec_path.exists():
            rec = json.loads(rec_path.read_text())
            if rec.get("reduced"):
                fail(f"{svg} is the reduced CI form, not a full run")
            for key in ("date", "commit", "machine"):
                if not rec.get("provenance", {}).get(key):
                    fail(f"{rec_path.name}: no {key} in its provenance")

    blocks = re.findall(r"<!-- table: (seeds/[^ ]+\.md) -->\n((?:\|.*\n)+)", page)
    for name, block in blocks:
        path = root / "docs" / name
        if not path.exists():
            fail(f"the page shows the table of {name}, which does not exist")
        if table_lines(block) != table_lines(path.read_text()):
            fail(f"the table after <!-- table: {name} --> differs from {name}: copy it again")
    print(f"check_seeds_page: {len(seen)} items, {len(blocks)} tables: ok")


if __name__ == "__main__":
    main()
