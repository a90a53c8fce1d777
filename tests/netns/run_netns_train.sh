#!/usr/bin/env bash
# Trains with `magmadnn train` on RANKS ranks twice: in separate network
# namespaces over TCP (tools/mpi-netns-run.sh), then in one namespace over
# shared memory (--shm), and compares the two runs: the final train loss and
# accuracy, the test loss and accuracy and the sample counts of summary.json
# must be equal (as printed, to the last digit), and so must the trained
# weights (SHA-256 of the tensor section of checkpoint.bin, whose header also
# holds timings that differ between runs; tests/support/compare_runs.py). Every rank of the network run must
# receive at least one model's worth of bytes (parameter_bytes) through its
# veth, which any training across ranks moves.
#   run_netns_train.sh MPI_NETNS_RUN MAGMADNN RANKS [TRAIN FLAGS...]
# The flags default to a small MLP run on the first 2,000 Fashion-MNIST images.
# Exit status 77 (skipped) when the machine cannot create the namespaces or the
# data set is not installed.
set -uo pipefail
runner="$1" magmadnn="$2" ranks="$3"
shift 3
flags=("$@")
if [[ ${#flags[@]} == 0 ]]; then
  flags=(--preset mlp --epochs 2 --limit-train 2000 --limit-test 500 --val-split 0 --threads 1)
  data=/usr/share/datasets/fashion-mnist
  [[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "SKIP: $data is not installed"; exit 77; }
fi
command -v python3 >/dev/null || { echo "SKIP: python3 (to compare the summaries) is not installed"; exit 77; }
# Two jobs, each bounded inside ctest's 120 s, so that the runner's trap (not
# ctest's kill) ends a hung job and removes its namespaces.
limit=(--timeout 50)
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT

"$runner" "${limit[@]}" --shm -n "$ranks" -- "$magmadnn" train "${flags[@]}" --quiet --out "$out/shm"
status=$?
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the shared-memory run exited $status"; exit 1; }
min_rx="$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["memory"]["parameter_bytes"])' "$out/shm/summary.json")"

"$runner" "${limit[@]}" -n "$ranks" --min-rx-bytes "$min_rx" -- "$magmadnn" train "${flags[@]}" --quiet --out "$out/tcp"
status=$?
[[ $status == 77 ]] && exit 77
[[ $status == 0 ]] || { echo "FAIL: the network run exited $status"; exit 1; }

python3 "$(dirname "$0")/../support/compare_runs.py" "$out/tcp" "$out/shm" --names tcp shm \
  --what "magmadnn train across namespaces over TCP equals shared memory"
