#!/usr/bin/env bash
# The presets trained for an epoch, exported, and run by ONNX Runtime: the
# same class for every test image and probabilities within 1e-5 of
# `magmadnn predict`'s. ONNX Runtime comes from PyPI into a virtual
# environment made here (kept in the build tree for the next run); exit 77
# (skipped) only when it cannot be installed (no network to PyPI).
#   ort_round_trip.sh MAGMADNN_BINARY WORK_DIR VENV_DIR [PRESETS...]
set -euo pipefail
bin=$1 work=$2 venv=$3
shift 3
presets=("${@:-mlp lenet5 resnet}")
here=$(cd "$(dirname "$0")" && pwd)
data=/usr/share/datasets/fashion-mnist
[[ -f $data/t10k-images-idx3-ubyte.gz ]] || { echo "SKIP: $data has no Fashion-MNIST (dataset-fashion-mnist)"; exit 77; }
if ! "$venv/bin/python" -c "import onnxruntime, numpy" 2>/dev/null; then
  python3 -m venv "$venv" || { echo "SKIP: python3 -m venv failed (python3-venv)"; exit 77; }
  "$venv/bin/pip" install -q onnxruntime numpy || { echo "SKIP: onnxruntime could not be installed from PyPI"; exit 77; }
fi
rm -rf "$work" && mkdir -p "$work"
"$venv/bin/python" "$here/ort_compare.py" cut "$data/t10k-images-idx3-ubyte.gz" 500 "$work/test-images.idx"
for p in ${presets[*]}; do
  "$bin" train --preset "$p" --epochs 1 --limit-train 2000 --limit-test 100 --out "$work/$p" --quiet
  "$bin" export "$work/$p" --onnx "$work/$p.onnx"
  "$bin" predict --checkpoint "$work/$p/checkpoint.bin" --input "$work/test-images.idx" --output "$work/$p.csv"
  "$venv/bin/python" "$here/ort_compare.py" check "$work/$p.onnx" "$work/test-images.idx" "$work/$p.csv"
done
