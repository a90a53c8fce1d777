#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with a few Clang compiles (the
# 29 files below) instead of a Clang build of the whole library (about 220):
# only the readers' own sources (the list below) and the fuzz entries are
# compiled with Clang and instrumented (libFuzzer coverage, ASan, UBSan with
# -fno-sanitize-recover); everything else comes uninstrumented from an
# ordinary build: BUILD_DIR's libmagmadnn.so and libmagmadnn_cli.a. The
# executable's definitions take precedence over the shared library's, so the
# readers run instrumented wherever they are called from (ELF interposition;
# templates and headers such as nlohmann::json are instrumented where these
# sources instantiate them). Bugs inside uninstrumented code (the tensor
# kernels, the training loop) are not seen: fuzzing with the whole library
# instrumented is -DMAGMADNN_FUZZ=ON (CMakeLists.txt), which takes a full
# Clang build.
#
# Usage: tests/fuzz/build_reader_fuzzers.sh BUILD_DIR OUT_DIR
#   BUILD_DIR: a configured and built tree (targets magmadnn, magmadnn_cli)
#   OUT_DIR:   gets obj/ and fuzz_<target> for every target of tests/fuzz
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
build="$(cd "$1" && pwd)"
out="$(mkdir -p "$2" && cd "$2" && pwd)"
mkdir -p "$out/obj"

readers=(
  magmadnn/io/byte_reader.cpp magmadnn/io/cifar.cpp magmadnn/data/cifar.cpp
  magmadnn/run/spec.cpp magmadnn/run/layer_kinds.cpp magmadnn/run/presets.cpp magmadnn/run/parallel_plan.cpp
  magmadnn/tune/tune_config.cpp magmadnn/tune/space.cpp magmadnn/tune/searcher.cpp
  magmadnn/tune/grid_searcher.cpp magmadnn/tune/random_searcher.cpp magmadnn/tune/asha_searcher.cpp
  magmadnn/tune/objective.cpp magmadnn/tune/settings.cpp magmadnn/tune/trial.cpp
  magmadnn/tune/journal.cpp magmadnn/tune/master.cpp magmadnn/tune/inline_channel.cpp
  magmadnn/tune/worker.cpp magmadnn/tune/results.cpp
  apps/magmadnn/compare.cpp apps/magmadnn/run_folder.cpp apps/magmadnn/csv_rows.cpp
  apps/magmadnn/test_curve.cpp apps/magmadnn/tune_results.cpp
  tests/fuzz/fuzz_entries.cpp tests/fuzz/fuzz_entries_tune.cpp tests/fuzz/fuzz_entries_cli.cpp
)
cxx=(clang++)
command -v ccache >/dev/null && cxx=(ccache clang++)
flags=(-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer
       -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined
       -DMAGMADNN_FUZZ_HAVE_CLI=1
       -I"$src" -I"$src/include" -I"$build/generated" -I"$src/apps/magmadnn" -I"$src/tests/fuzz")
for inc in $(mpicxx --showme:incdirs 2>/dev/null); do flags+=(-isystem "$inc"); done

objs=()
pids=()
for f in "${readers[@]}"; do
  o="$out/obj/$(echo "$f" | tr / _).o"
  objs+=("$o")
  if [[ ! -f "$o" || "$src/$f" -nt "$o" ]] || [[ -n "${FUZZ_REBUILD:-}" ]]; then
    "${cxx[@]}" "${flags[@]}" -c "$src/$f" -o "$o" &
    pids+=($!)
    if (( ${#pids[@]} >= ${FUZZ_JOBS:-2} )); then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
  fi
done
for p in "${pids[@]}"; do wait "$p"; done

targets=(idx gzip csv cifar checkpoint config tune_config journal results compare)
libs=("$build/apps/libmagmadnn_cli.a" -L"$build/magmadnn" -lmagmadnn -Wl,-rpath,"$build/magmadnn" -lz)
for inc in $(mpicxx --showme:libdirs 2>/dev/null); do libs+=(-L"$inc"); done
libs+=(-lmpi)
for t in "${targets[@]}"; do
  "${cxx[@]}" "${flags[@]}" -c "$src/tests/fuzz/fuzz_$t.cpp" -o "$out/obj/fuzz_$t.o"
  clang++ -fsanitize=fuzzer,address,undefined "$out/obj/fuzz_$t.o" "${objs[@]}" "${libs[@]}" \
    -o "$out/fuzz_$t"
done
echo "built: ${targets[*]/#/$out/fuzz_}"
