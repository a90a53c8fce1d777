#!/usr/bin/env bash
# Runs a bundle from tools/gpu_bundle.sh on the lent GPU machine: the CUDA
# tests, the rest of the suite with the GPU present, and the GPU benchmarks,
# with no compiling there. Logs go to $OUT (at most 8 files come back).
#
# Usage (on the device, from the repository root, with .gpu carried):
#   tools/gpu_run.sh [setup] [cuda] [rest] [bench] [floors] [FILTER=regex]
# Sections run in the order given; `setup` is implied. Each is bounded in
# time so that one call of the device tool (10 minutes) holds them.
set -uo pipefail

R="$(cd "$(dirname "$0")/.." && pwd)"
OUT="${OUT:-/tmp/gpu_out}"
mkdir -p "$OUT"
SECTIONS=("$@")
((${#SECTIONS[@]})) || SECTIONS=(cuda rest bench)
status=0
note() { echo "== $*"; }

# -- setup: libraries at their Debian paths (never replacing the machine's own),
# the build tree where ctest's files expect it, the data set -----------------------
setup() {
  [[ -f "$R/.gpu/build.tar.xz" ]] || { echo "no bundle: carry .gpu (tools/gpu_bundle.sh)" >&2; exit 2; }
  local stage=/tmp/gpu_root
  rm -rf "$stage" && mkdir -p "$stage"
  tar -xJf "$R/.gpu/root.tar.xz" -C "$stage"
  cp -rn "$stage"/. /
  tar -xJf "$R/.gpu/build.tar.xz" -C "$R"
  if [[ "$R" != /work/main ]]; then
    mkdir -p /work && rm -rf /work/main && ln -s "$R" /work/main
  fi
  mkdir -p /usr/share/datasets
  if [[ -f "$R/.gpu/fashion-mnist.tar.xz" ]]; then
    tar -xJf "$R/.gpu/fashion-mnist.tar.xz" -C /usr/share/datasets
    # The package's names too: the peers' loaders and the v1 programs' test
    # read only the .gz files.
    for f in /usr/share/datasets/fashion-mnist/*-ubyte; do gzip -1 -kf "$f"; done
  else
    cp -rn "$R/.gpu/fashion-mnist" /usr/share/datasets/
  fi
  ldconfig 2>/dev/null || true
  # Some tests run `cmake -P` scripts by the path this machine's CMake had.
  [[ -x /usr/bin/cmake ]] || ln -sf "$(command -v cmake)" /usr/bin/cmake

  local paths=()
  for d in /usr/local/cuda/lib64 /usr/local/cuda/lib; do [[ -d "$d" ]] && paths+=("$d"); done
  # cuDNN and NCCL (and any CUDA library the toolkit lacks) from PyTorch's wheels.
  while read -r d; do [[ -d "$d" ]] && paths+=("$d"); done < <(python3 - <<'EOF' 2>/dev/null
import glob, nvidia
for p in nvidia.__path__:
    for d in sorted(glob.glob(p + "/*/lib")):
        print(d)
EOF
  )
  local IFS=:
  export LD_LIBRARY_PATH="${paths[*]}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  unset IFS
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  # Only the shared-memory and self transports: the machine has no network, and
  # the carried components for InfiniBand, UCX and OFI would only print warnings.
  export OMPI_MCA_btl=self,vader OMPI_MCA_pml=ob1 OMPI_MCA_mtl='^ofi,psm,psm2' OMPI_MCA_osc='^ucx'
  export NCCL_MULTI_RANK_GPU_ENABLE=1

  note "device"
  echo "commit: $(git -C "$R" rev-parse HEAD 2>/dev/null) $(git -C "$R" status --porcelain 2>/dev/null | grep -q . && echo '(with uncommitted changes)')"
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.max.sm --format=csv
  nvcc --version 2>/dev/null | tail -1
  python3 - <<'EOF'
import torch
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "nccl", ".".join(map(str, torch.cuda.nccl.version())))
EOF
  echo "cores: $(nproc)"
  local missing
  missing="$(ldd "$R/build/tests/cuda/test_parity" "$R/build/apps/magmadnn" | grep "not found" | sort -u)"
  [[ -z "$missing" ]] || { echo "missing libraries:"; echo "$missing"; status=1; }
}

# -- the tests ---------------------------------------------------------------------------
run_ctest() {  # name seconds ctest-args...
  local name="$1" secs="$2"
  shift 2
  note "$name: ctest $*"
  timeout "$secs" ctest --test-dir "$R/build" --timeout 180 --output-on-failure "$@" >"$OUT/$name.log" 2>&1
  local rc=$?
  grep -E "tests passed|tests failed|Total Test time" "$OUT/$name.log"
  # The failures, and the skipped tests with their reasons' first lines.
  grep -E "^\s+[0-9]+ - .*\((Failed|Timeout|Subprocess|SEGFAULT|Exception|Child)" "$OUT/$name.log" | head -60
  echo "skipped: $(grep -c "Skipped" "$OUT/$name.log")"
  ((rc == 124)) && echo "$name: stopped after ${secs} s"
  ((rc == 0)) || status=1
}

cuda_tests() { run_ctest cuda "${CUDA_SECONDS:-280}" -L cuda -j 8 ${FILTER:+-R "$FILTER"}; }
# Left out: what needs this machine's network or packages it lacks (Chromium
# for the rendered pages, a compiler for install_consumer and the Clang check).
# With the bundle's cut data set (fewer than the 60,000 training images), the
# tests that count the real set's images are left out too.
rest_tests() {
  local cut=""
  local images=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte
  if [[ -f "$images" && $(stat -c %s "$images") -lt 47040016 ]]; then
    cut="|Mnist.RealFashionMnist|Samples.FashionMnistTrainingSetIs47MB|DataLoader.FashionMnistEpochTiming"
  fi
  run_ctest rest "${REST_SECONDS:-200}" -L "cpu|mpi" -LE "cuda|slow|netns" \
    -E "install_consumer|_rendered|model_api_forms_clang$cut${REST_EXCLUDE:+|$REST_EXCLUDE}" -j 16 ${FILTER:+-R "$FILTER"}
}

# -- the benchmarks: magmadnn against this machine's PyTorch, one run ------------------
bench() {
  local app="$R/build/apps/magmadnn" log="$OUT/bench.jsonl"
  : >"$log"
  mm() {  # label args...
    local label="$1" dir
    shift
    dir="$(mktemp -d)"
    if timeout 120 "$app" train --quiet --val-split 0 --out "$dir/run" "$@" >"$dir/stdout" 2>&1; then
      python3 - "$label" "$dir/run/summary.json" <<'EOF' | tee -a "$log"
import json, sys
s = json.load(open(sys.argv[2]))
keep = {k: s.get(k) for k in ("device", "precision", "train_seconds", "test_accuracy", "peak_rss_bytes")}
print(json.dumps({"framework": "magmadnn", "case": sys.argv[1], **keep}))
EOF
    else
      echo "{\"framework\": \"magmadnn\", \"case\": \"$label\", \"failed\": true}" | tee -a "$log"
      tail -5 "$dir/stdout"
    fi
  }
  pt() {  # label script args...
    local label="$1" script="$2"
    shift 2
    local rec
    rec="$(timeout 240 python3 "$R/bench/peers/$script" --device cuda --threads 8 "$@" 2>"$OUT/torch_err.txt" | tail -1)"
    [[ -n "$rec" ]] || { rec='{"failed": true}'; tail -3 "$OUT/torch_err.txt"; }
    echo "{\"case\": \"$label\", \"torch\": $rec}" | tee -a "$log"
  }
  # BENCH_EPOCHS: the MLP's epochs (the paper's 5 by default).
  local e="${BENCH_EPOCHS:-5}"
  note "bench (magmadnn on the GPU, then PyTorch eager and compiled)"
  if [[ -n "${BENCH_PROFILE:-}" ]]; then
    timeout 120 "$app" train --val-split 0 --preset mlp --layers 4 --epochs 1 --limit-train 20000 --profile \
      --out /tmp/prof_mlp >"$OUT/profile.txt" 2>&1
    timeout 120 "$app" train --val-split 0 --preset lenet5 --epochs 1 --limit-train 10000 --profile \
      --out /tmp/prof_lenet >>"$OUT/profile.txt" 2>&1
    timeout 120 "$app" train --val-split 0 --preset resnet --epochs 1 --limit-train 10000 --profile \
      --out /tmp/prof_resnet >>"$OUT/profile.txt" 2>&1
  fi
  # BENCH_CASES: which of the cases below to run (all by default).
  local cases="${BENCH_CASES:-mlp4_fp32 mlp4_tf32 mlp4_bf16 mlp4_fp16 lenet5_fp32 lenet5_bf16 resnet_fp32 mlp4_eager mlp4_compiled lenet5_eager resnet_eager}"
  for c in $cases; do
    case "$c" in
      mlp4_fp32) mm "$c" --preset mlp --layers 4 --epochs "$e" ;;
      mlp4_tf32 | mlp4_bf16 | mlp4_fp16) mm "$c" --preset mlp --layers 4 --epochs "$e" --precision "${c#mlp4_}" ;;
      lenet5_fp32) mm "$c" --preset lenet5 --epochs 1 ;;
      lenet5_bf16) mm "$c" --preset lenet5 --epochs 1 --precision bf16 ;;
      resnet_fp32) mm "$c" --preset resnet --epochs 1 ;;
      mlp4_eager) pt "$c" pytorch_mlp.py --layers 4 --epochs "$e" ;;
      mlp4_compiled) pt "$c" pytorch_mlp.py --layers 4 --epochs "$e" --compile ;;
      lenet5_eager) pt "$c" pytorch_lenet5.py --epochs 1 ;;
      resnet_eager) pt "$c" pytorch_resnet.py --epochs 1 ;;
      *) echo "unknown bench case $c" >&2; status=1 ;;
    esac
  done
}

# -- the floors: cuBLAS and cuDNN alone on the same products and convolutions -------
floors() {
  local log="$OUT/floors.txt"
  note "floors (cuBLAS and cuDNN alone)"
  : >"$log"
  timeout 120 "$R/build/bench/bench_gemm_floor_cuda" --verbose >>"$log" 2>&1 || status=1
  timeout 60 "$R/build/bench/bench_gemm_floor_cuda" --tf32 --layers 4 >>"$log" 2>&1 || status=1
  timeout 180 "$R/build/apps/magmadnn" bench conv --gpu-only --batch 64 --repeats 9 \
    --layers lenet_conv1,lenet_conv2,lenet_pool1,lenet_pool2 >>"$log" 2>&1 || status=1
  timeout 180 "$R/build/apps/magmadnn" bench conv --gpu-only --batch 128 --repeats 9 \
    --layers resnet_stem,resnet_16_28x28,resnet_16to32_s2,resnet_32_14x14,resnet_proj32_s2,resnet_32to64_s2,resnet_64_7x7,resnet_proj64_s2 \
    >>"$log" 2>&1 || status=1
  cat "$log"
}

setup
for s in "${SECTIONS[@]}"; do
  case "$s" in
    setup) ;;
    cuda) cuda_tests ;;
    rest) rest_tests ;;
    bench) bench ;;
    floors) floors ;;
    FILTER=*) export FILTER="${s#FILTER=}" ;;
    *) echo "unknown section $s" >&2; exit 2 ;;
  esac
done
note "gpu_run: $([[ $status == 0 ]] && echo PASS || echo FAIL)"
exit $status
