#!/usr/bin/env bash
# Renders RUN_DIR/report.html in headless Chromium and checks the picture:
#   tools/screenshot-report.sh RUN_DIR [OUT.png]      (default OUT: RUN_DIR/report.png)
# Installs Debian's `chromium` when it is missing (needs root and apt-get).
# Fails unless the PNG exists, is a valid PNG of the asked size, and is not
# blank: it must hold several colours, including the curves' blue and orange.
set -euo pipefail
if [[ $# -lt 1 || $# -gt 2 ]]; then
  echo "usage: $0 RUN_DIR [OUT.png]" >&2
  exit 2
fi
RUN_DIR="$(cd "$1" && pwd)"
OUT="${2:-$RUN_DIR/report.png}"
REPORT="$RUN_DIR/report.html"
[[ -f "$REPORT" ]] || { echo "screenshot-report: no report.html in $RUN_DIR" >&2; exit 1; }

CHROMIUM="$(command -v chromium || command -v chromium-browser || true)"
if [[ -z "$CHROMIUM" ]]; then
  echo "screenshot-report: installing chromium (Debian package)" >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends chromium >/dev/null
  CHROMIUM="$(command -v chromium)"
fi

rm -f "$OUT"
# A private profile so parallel runs do not share (or lock) one; no network is needed.
PROFILE="$(mktemp -d)"
trap 'rm -rf "$PROFILE"' EXIT
timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars \
  --user-data-dir="$PROFILE" --screenshot="$OUT" --window-size=1200,900 "file://$REPORT" >/dev/null 2>&1 || true
[[ -s "$OUT" ]] || { echo "screenshot-report: chromium wrote no screenshot to $OUT" >&2; exit 1; }

python3 - "$OUT" <<'PY'
import struct, sys, zlib

path = sys.argv[1]
data = open(path, "rb").read()
if data[:8] != b"\x89PNG\r\n\x1a\n":
    sys.exit(f"screenshot-report: {path} is not a PNG")
pos, idat, ihdr = 8, b"", None
while pos < len(data):
    length, kind = struct.unpack(">I4s", data[pos:pos + 8])
    body = data[pos + 8:pos + 8 + length]
    if kind == b"IHDR":
        ihdr = struct.unpack(">IIBBBBB", body)
    elif kind == b"IDAT":
        idat += body
    pos += 12 + length
width, height, depth, ctype = ihdr[0], ihdr[1], ihdr[2], ihdr[3]
if depth != 8 or ctype not in (2, 6):
    sys.exit(f"screenshot-report: unexpected PNG format (depth {depth}, colour type {ctype})")
bpp = 3 if ctype == 2 else 4
raw = zlib.decompress(idat)
stride = width * bpp
prev = bytearray(stride)
colours = {}
i = 0
for _ in range(height):  # undo the per-row PNG filters
    f, row = raw[i], bytearray(raw[i + 1:i + 1 + stride])
    i += 1 + stride
    for x in range(stride):
        a = row[x - bpp] if x >= bpp else 0
        b = prev[x]
        c = prev[x - bpp] if x >= bpp else 0
        if f == 1: row[x] = (row[x] + a) & 255
        elif f == 2: row[x] = (row[x] + b) & 255
        elif f == 3: row[x] = (row[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            row[x] = (row[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(row[x:x + 3])
        colours[px] = colours.get(px, 0) + 1
    prev = row

def near(rgb, target, tol=40):
    return all(abs(p - q) <= tol for p, q in zip(rgb, target))

blue = sum(n for c, n in colours.items() if near(c, (0x1f, 0x77, 0xb4)))
orange = sum(n for c, n in colours.items() if near(c, (0xe6, 0x55, 0x0d)))
print(f"screenshot-report: {path}: {width}x{height}, {len(colours)} colours, "
      f"{blue} train-curve (blue) and {orange} validation-curve (orange) pixels")
if len(colours) < 3:
    sys.exit("screenshot-report: the screenshot is blank")
if blue < 50 or orange < 50:
    sys.exit("screenshot-report: the curves are not visible in the screenshot")
PY
