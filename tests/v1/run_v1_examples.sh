#!/usr/bin/env bash
# Runs the MagmaDNN v1-style programs of examples/v1 on a small slice of the
# real Fashion-MNIST (2000 training and 500 test samples under MNIST's file
# names) and checks that each one trains and finishes cleanly.
#   usage: run_v1_examples.sh BIN_DIR [gpu]
# With "gpu" (a CUDA build: the programs then ask for DEVICE memory) it skips
# when the machine has no GPU.
set -euo pipefail
BIN_DIR="$(cd "$1" && pwd)"
if [[ "${2:-}" == gpu ]] && ! nvidia-smi -L >/dev/null 2>&1; then
  echo "SKIP: built with CUDA (the v1 programs then use DEVICE memory) and no GPU is present"; exit 77
fi
HERE="$(cd "$(dirname "$0")" && pwd)"
if [[ ! -f /usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz ]]; then
  echo "SKIP: the dataset-fashion-mnist package is not installed"; exit 77
fi
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 "$HERE/make_small_mnist.py" "$WORK" 2000 500
cd "$WORK"

echo "== tensor_math"
out="$("$BIN_DIR/tensor_math")"; echo "$out"
# A is 5x4 of 3s, x is 4x1 of 2s, b is ones: every entry is 3*2*4 + 1 = 25.
[[ "$out" == *"Ax+b = {25.0, 25.0, 25.0, 25.0, 25.0}"* ]] || { echo "FAIL: wrong Ax+b"; exit 1; }

echo "== simple_network"
out="$("$BIN_DIR/simple_network" 3 2>&1)"; echo "$out" | tail -5
acc="$(echo "$out" | sed -n 's/^training accuracy \([0-9.]*\).*/\1/p')"
python3 -c "import sys; a=float('$acc'); sys.exit(0 if a > 0.6 else 1)" || { echo "FAIL: training accuracy $acc"; exit 1; }

echo "== lenet5"
out="$("$BIN_DIR/lenet5" 2>&1)"; echo "$out" | tail -3
acc="$(echo "$out" | sed -n 's/^Model accuracy on testset: \([0-9.]*\).*/\1/p')"
python3 -c "import sys; a=float('$acc'); sys.exit(0 if a > 0.35 else 1)" || { echo "FAIL: test accuracy $acc"; exit 1; }
echo "v1 examples: OK"
