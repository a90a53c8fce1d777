#!/usr/bin/env bash
# Builds the CPU tests with AddressSanitizer + LeakSanitizer (+ UBSan) and runs
# them: the library must be free of leaks and memory errors.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
"$ROOT/tools/install-deps.sh" --tests
source "$ROOT/tools/env.sh"
cmake -S "$ROOT" -B "$ROOT/build-asan" -G Ninja -DMAGMADNN_CUDA=OFF -DMAGMADNN_SANITIZE=ON \
  -DMAGMADNN_BUILD_EXAMPLES=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$ROOT/build-asan" -j "${JOBS:-$(nproc)}"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Every host allocation a fresh one, so ASan sees use-after-free and overflows
# that the caching pool would otherwise hide inside a reused block.
export MAGMADNN_NO_MEMORY_CACHING=1
(cd "$ROOT/build-asan" && ctest -j "${JOBS:-$(nproc)}" --output-on-failure --timeout 900 -L cpu -LE slow -E install_consumer)
