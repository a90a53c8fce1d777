#!/usr/bin/env bash
# `magmadnn train` on 4 ranks with the hierarchical allreduce forced
# (--allreduce hierarchical, hosts named 2 x 2 through MAGMADNN_HOST: ranks
# 0-1 and 2-3) against the same run with the flat one (--allreduce flat):
# the summaries must say which was used ("hierarchical: 2 hosts (2 + 2
# ranks)", "flat") and the per-epoch test scores agree within 1e-4 (part of
# the real Fashion-MNIST, the MLP preset).
#   hierarchical_train_test.sh MAGMADNN_BINARY WORK_DIR LAUNCH...
# (LAUNCH: the launcher and its flags for 4 ranks)
set -euo pipefail
BIN="$1" WORK="$2"
shift 2
common=(--preset mlp --limit-train 2000 --limit-test 500 --epochs 2 --batch-size 100 --test-every-epoch
        --overwrite --quiet)
# Each rank names its host from its rank (Open MPI's variable, else PMI's).
"$@" "$BIN" train "${common[@]}" --allreduce flat --out "$WORK/flat"
"$@" sh -c 'MAGMADNN_HOST=h$(( ${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}} / 2 )) exec "$0" "$@"' \
  "$BIN" train "${common[@]}" --allreduce hierarchical --out "$WORK/hier"
python3 - "$WORK/flat" "$WORK/hier" <<'PY'
import json, sys
flat, hier = sys.argv[1:3]
def summary(d): return json.load(open(f"{d}/summary.json"))
for d, want in ((flat, "flat"), (hier, "hierarchical: 2 hosts (2 + 2 ranks)")):
    got = summary(d).get("allreduce")
    if got != want:
        sys.exit(f"hierarchical_train_test: FAILED: {d}/summary.json says allreduce {got!r}, expected {want!r}")
PY
"$(dirname "$0")/../support/compare_runs.py" "$WORK/flat" "$WORK/hier" --test-curves 1e-4 --names flat hierarchical \
  --what "flat and hierarchical agree in every epoch's test scores"
