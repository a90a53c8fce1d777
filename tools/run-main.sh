#!/usr/bin/env bash
# Installs what is missing, builds magmadnn and runs the main job: train the
# default network (the paper's MLP, 784 -> 528 sigmoid -> 10, 5 epochs) on
# Fashion-MNIST from the Debian package and print its test accuracy. The run
# folder (metrics.csv, summary.json, checkpoint, report.html) is build/main-run.
# Extra arguments go to `magmadnn train`, e.g. --preset lenet5 --epochs 3.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/tools/install-deps.sh"
source "$ROOT/tools/env.sh"
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DMAGMADNN_CUDA=$MAGMADNN_WITH_CUDA >/dev/null
cmake --build "$ROOT/build" -j "${JOBS:-$(nproc)}" --target magmadnn_app
"$ROOT/build/apps/magmadnn" train --out "$ROOT/build/main-run" --overwrite "$@"
