#!/usr/bin/env bash
# Builds magmadnn with CUDA on a lent H100/H200 and runs the GPU tests.
#
# That machine has CUDA 13 (nvcc), CMake and ninja, but not our Debian
# packages (oneDNN, OpenBLAS, GoogleTest). Bring them as .deb files, fetched
# here with `apt-get download`:
#   libdnnl2 libdnnl-dev libopenblas0-pthread libopenblas-pthread-dev
#   libgfortran5 libgtest-dev libgmock-dev
# and point DEPS_PREFIX at them: either a folder of .deb files (unpacked here
# with dpkg -x, or ar + tar where dpkg is missing) or a folder where they were
# already unpacked (it holds usr/). MPI (unless MAGMADNN_MPI=ON) and FFTW are switched off; cuDNN and
# NCCL are taken from the machine's Python `nvidia-*` packages when present.
#
# Environment:
#   DEPS_PREFIX   the dependencies as above (required unless installed system-wide)
#   OUT           where logs go (OUT/gpu_check/*.log); stdout only when unset
#   BUILD_DIR     build folder (default: build-gpu in the repository)
#   LABELS        ctest label regex (default: cuda)
#   TARGETS       ninja targets (default: everything; -k 0 keeps going past a
#                 broken target so the other tests still run)
#   CUDA_ARCH     CMAKE_CUDA_ARCHITECTURES (default: 90, Hopper)
#   CTEST_JOBS    tests run at once (default: 8)
#   MAGMADNN_MPI  ON to build with MPI (default OFF). The NCCL communicator
#                 and its tests (nccl_communicator_*) need it: carry Open MPI
#                 in DEPS_PREFIX too (openmpi-bin, libopenmpi-dev and the
#                 libraries they depend on) and set OPAL_PREFIX to its usr/
#                 so that mpirun finds its components (docs/notes/gpu-runs.md)
#
# Exit status: non-zero when configuring, building or any test failed.
set -uo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
BUILD_DIR="${BUILD_DIR:-$ROOT/build-gpu}"
LABELS="${LABELS:-cuda}"
CUDA_ARCH="${CUDA_ARCH:-90}"
JOBS="${JOBS:-$(nproc)}"
LOG_DIR=""
if [[ -n "${OUT:-}" ]]; then
  LOG_DIR="$OUT/gpu_check"
  mkdir -p "$LOG_DIR"
fi

# Runs a step, teeing its output to LOG_DIR/<name>.log when OUT is set.
step() {
  local name="$1"
  shift
  echo "== $name: $*"
  if [[ -n "$LOG_DIR" ]]; then
    "$@" 2>&1 | tee "$LOG_DIR/$name.log"
    return "${PIPESTATUS[0]}"
  fi
  "$@"
}

# -- the machine -------------------------------------------------------------------
if ! command -v nvcc >/dev/null && [[ -x /usr/local/cuda/bin/nvcc ]]; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
device_info() {
  echo "commit: $(git -C "$ROOT" rev-parse HEAD 2>/dev/null || echo unknown)" \
       "$(git -C "$ROOT" status --porcelain 2>/dev/null | grep -q . && echo '(with uncommitted changes)')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv 2>&1 || true
  nvcc --version 2>&1 | tail -2
  cmake --version | head -1
  echo "cores: $(nproc)"
}
step device device_info

# -- dependencies ------------------------------------------------------------------
PREFIX_PATHS=()
LIB_PATHS=()
EXTRA_CMAKE=()
if [[ -n "${DEPS_PREFIX:-}" ]]; then
  DEPS_PREFIX="$(cd "$DEPS_PREFIX" && pwd)"
  ROOTFS="$DEPS_PREFIX"
  if compgen -G "$DEPS_PREFIX/*.deb" >/dev/null; then
    ROOTFS="$BUILD_DIR/_deps_root"
    rm -rf "$ROOTFS"
    mkdir -p "$ROOTFS"
    for deb in "$DEPS_PREFIX"/*.deb; do
      if command -v dpkg >/dev/null; then
        dpkg -x "$deb" "$ROOTFS"
      else
        tmp="$(mktemp -d)"
        (cd "$tmp" && ar x "$deb" && tar -xf data.tar.* -C "$ROOTFS")
        rm -rf "$tmp"
      fi
    done
    echo "unpacked $(ls "$DEPS_PREFIX"/*.deb | wc -l) .deb files into $ROOTFS"
  fi
  MULTIARCH="$ROOTFS/usr/lib/x86_64-linux-gnu"
  PREFIX_PATHS+=("$ROOTFS/usr")
  LIB_PATHS+=("$MULTIARCH" "$MULTIARCH/openblas-pthread")
  # Debian reaches libopenblas.so through an alternatives link that dpkg -x
  # does not create: name the real files.
  if [[ -f "$ROOTFS/usr/include/x86_64-linux-gnu/openblas-pthread/cblas.h" ]]; then
    EXTRA_CMAKE+=("-DOPENBLAS_INCLUDE_DIR=$ROOTFS/usr/include/x86_64-linux-gnu/openblas-pthread")
  fi
  for lib in "$MULTIARCH/openblas-pthread/libopenblas.so" "$MULTIARCH/openblas-pthread/libopenblas.so.0"; do
    if [[ -e "$lib" ]]; then
      EXTRA_CMAKE+=("-DOPENBLAS_LIBRARY=$lib")
      break
    fi
  done
fi

# cuDNN and NCCL from PyTorch's wheels (their libraries carry only versioned names).
if command -v python3 >/dev/null; then
  pydir() { python3 -c "import $1, os; print(os.path.dirname($1.__file__))" 2>/dev/null; }
  CUDNN_DIR="$(pydir nvidia.cudnn)"
  if [[ -n "$CUDNN_DIR" && -f "$CUDNN_DIR/include/cudnn.h" ]]; then
    lib="$(ls "$CUDNN_DIR"/lib/libcudnn.so* 2>/dev/null | head -1)"
    [[ -n "$lib" ]] && EXTRA_CMAKE+=("-DCUDNN_INCLUDE_DIR=$CUDNN_DIR/include" "-DCUDNN_LIBRARY=$lib") &&
      LIB_PATHS+=("$CUDNN_DIR/lib")
  fi
  NCCL_DIR="$(pydir nvidia.nccl)"
  if [[ -n "$NCCL_DIR" && -f "$NCCL_DIR/include/nccl.h" ]]; then
    lib="$(ls "$NCCL_DIR"/lib/libnccl.so* 2>/dev/null | head -1)"
    [[ -n "$lib" ]] && EXTRA_CMAKE+=("-DNCCL_INCLUDE_DIR=$NCCL_DIR/include" "-DNCCL_LIBRARY=$lib") &&
      LIB_PATHS+=("$NCCL_DIR/lib")
  fi
fi

join() { local IFS="$1"; shift; echo "$*"; }
if ((${#PREFIX_PATHS[@]})); then
  export CMAKE_PREFIX_PATH="$(join ';' "${PREFIX_PATHS[@]}")${CMAKE_PREFIX_PATH:+;$CMAKE_PREFIX_PATH}"
fi
if ((${#LIB_PATHS[@]})); then
  export LD_LIBRARY_PATH="$(join ':' "${LIB_PATHS[@]}")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  # The linker needs them too, for the libraries' own dependencies (libgfortran).
  export LIBRARY_PATH="$(join ':' "${LIB_PATHS[@]}")${LIBRARY_PATH:+:$LIBRARY_PATH}"
fi

# -- configure, build, test -------------------------------------------------------------
status=0
# CMake before 3.26 has no C++20 flag for nvcc; naming it is harmless on newer ones.
step configure cmake -S "$ROOT" -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DMAGMADNN_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$CUDA_ARCH" \
  -DCMAKE_CUDA20_STANDARD_COMPILE_OPTION=-std=c++20 -DCMAKE_CUDA20_EXTENSION_COMPILE_OPTION=-std=c++20 \
  -DMAGMADNN_MPI="${MAGMADNN_MPI:-OFF}" -DMAGMADNN_FFTW=OFF -DMAGMADNN_BUILD_EXAMPLES=OFF -DMAGMADNN_BUILD_TESTS=ON \
  -DCMAKE_BUILD_RPATH="$(join ';' "${LIB_PATHS[@]:-}")" "${EXTRA_CMAKE[@]}" || exit 1

# shellcheck disable=SC2086
step build ninja -C "$BUILD_DIR" -j "$JOBS" -k 0 ${TARGETS:-} || status=1

# Each gtest case is its own process (CUDA start-up each time), and they are
# small: several at once share the GPU well.
step ctest ctest --test-dir "$BUILD_DIR" -L "$LABELS" -j "${CTEST_JOBS:-8}" --output-on-failure --timeout 600 || status=1

if [[ -n "$LOG_DIR" ]]; then
  # The one-line-per-test table, for docs/gpu.md.
  grep -E "Test +#|tests passed|tests failed" "$LOG_DIR/ctest.log" >"$LOG_DIR/summary.txt" || true
  echo "logs in $LOG_DIR"
fi
echo "== gpu_check: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
exit $status
