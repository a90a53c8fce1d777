#!/usr/bin/env bash
# Installs what is missing, builds magmadnn (with CUDA when nvcc is present:
# GPU tests then skip themselves with a message on a machine without a GPU),
# runs every test, then builds the library once more without CUDA and checks
# that it carries no CUDA symbol.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/tools/install-deps.sh" --tests
source "$ROOT/tools/env.sh"
JOBS="${JOBS:-$(nproc)}"

echo "== build (CUDA=$MAGMADNN_WITH_CUDA)"
# The Python package (python/) is built for the interpreter of the build
# environment install-deps.sh made; its pytest suite is the ctest python_pytest.
cmake -S "$ROOT" -B "$ROOT/build" -G Ninja -DMAGMADNN_CUDA=$MAGMADNN_WITH_CUDA \
  -DPython_EXECUTABLE="$MAGMADNN_PYENV/bin/python" >/dev/null
cmake --build "$ROOT/build" -j "$JOBS"

# Every label but `slow`; CI (.ci/run) narrows this on its CUDA host, whose
# mpi tests the bare Debian roots run again (MAGMADNN_TEST_EXCLUDE).
echo "== tests"
(cd "$ROOT/build" && ctest -j "$JOBS" --output-on-failure --timeout 600 -L "cpu|mpi|cuda" \
  -LE "${MAGMADNN_TEST_EXCLUDE:-slow}")

echo "== CPU-only library"
cmake -S "$ROOT" -B "$ROOT/build-nocuda" -G Ninja -DMAGMADNN_CUDA=OFF \
  -DMAGMADNN_BUILD_TESTS=OFF -DMAGMADNN_BUILD_APPS=OFF -DMAGMADNN_PYTHON=OFF >/dev/null
# The base library (core to model) builds from its own sources alone: no
# object or library of comm/, dmath/, parallel/, run/ or tune/ is among the
# inputs ninja needs for it (docs/design.md, layering).
cmake --build "$ROOT/build-nocuda" -j "$JOBS" --target magmadnn_core
if ninja -C "$ROOT/build-nocuda" -t inputs magmadnn_core | grep -E '/(comm|dmath|parallel|run|tune)/|libmagmadnn_(comm|dmath|parallel)|libmagmadnn\.so'; then
  echo "run-tests: the base library needs the files above from a higher layer" >&2; exit 1
fi
cmake --build "$ROOT/build-nocuda" -j "$JOBS" --target magmadnn example_v1_tensor_math \
  example_v1_simple_network example_v1_lenet5
for lib in "$ROOT"/build-nocuda/magmadnn/libmagmadnn*.so; do "$ROOT/tools/check-no-cuda.sh" "$lib"; done

# MagmaDNN v1 programs choose DEVICE memory in a CUDA build, so without a GPU
# they run here, from the CPU-only build.
echo "== MagmaDNN v1 programs (CPU-only build)"
"$ROOT/tests/v1/run_v1_examples.sh" "$ROOT/build-nocuda/examples/v1" cpu
