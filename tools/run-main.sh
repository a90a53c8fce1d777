#!/usr/bin/env bash
# Installs what is missing, builds magmadnn and runs the main job.
# Until the training command lands (issue 4) the main job is the slides' demos.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/tools/install-deps.sh"
source "$ROOT/tools/env.sh"
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DMAGMADNN_CUDA=$MAGMADNN_WITH_CUDA >/dev/null
cmake --build "$ROOT/build" -j "${JOBS:-$(nproc)}" --target example_slides_tensor example_slides_graph
"$ROOT/build/examples/slides_tensor"
"$ROOT/build/examples/slides_graph"
