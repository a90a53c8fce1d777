#!/usr/bin/env bash
# `magmadnn train` of an MLP as a 2-stage pipeline (1F1B, 4 micro-batches)
# on 2 ranks against the same config on one process: the per-epoch test
# scores agree within 1e-4, also after both resume for a third epoch from
# their checkpoint.bin; summary.json holds the plan; one rank is refused
# before training, naming the stages and ranks, with nothing written into
# its --out (part of the real Fashion-MNIST, 2000 images). An MLP, not
# LeNet-5: over 100 steps LeNet-5's run follows another trajectory when
# its convolutions change kernels (micro-batches of 8 rows against batches
# of 32, or another algorithm in one process), docs/notes/pipeline.md; the
# step-for-step tests of LeNet-5 are tests/distributed/pipeline/.
#   pipeline_train_test.sh MAGMADNN_BINARY WORK_DIR STAGES REPLICAS LAUNCH...
# (LAUNCH: the launcher and its flags for STAGES x REPLICAS ranks)
set -euo pipefail
BIN="$1" WORK="$2" STAGES="$3" REPLICAS="$4"
shift 4
mkdir -p "$WORK"
cat > "$WORK/one.json" <<'JSON'
{ "layers": [ {"type": "flatten"},
              {"type": "dense", "units": 128, "activation": "relu"},
              {"type": "dense", "units": 64, "activation": "relu"},
              {"type": "dense", "units": 10, "activation": "softmax"} ],
  "batch_size": 32, "epochs": 2, "test_every_epoch": true, "deterministic": true,
  "data": {"limit_train": 2000, "limit_test": 500, "val_split": 0.2},
  "optimizer": {"type": "sgd", "learning_rate": 0.05, "momentum": 0.9} }
JSON
python3 - "$WORK" "$STAGES" "$REPLICAS" <<'PY'
import json, sys
c = json.load(open(f"{sys.argv[1]}/one.json"))
c["parallel"] = {"pipeline": {"stages": int(sys.argv[2]), "replicas": int(sys.argv[3]), "micro_batches": 4,
                              "schedule": "1f1b"}}
json.dump(c, open(f"{sys.argv[1]}/pipe.json", "w"))
PY
"$BIN" train --config "$WORK/one.json" --out "$WORK/one" --overwrite --quiet
"$@" "$BIN" train --config "$WORK/pipe.json" --out "$WORK/pipe" --overwrite --quiet
python3 - "$WORK/pipe" "$STAGES" "$REPLICAS" <<'PY'
import json, sys
p = json.load(open(f"{sys.argv[1]}/summary.json"))["pipeline"]
stages, replicas = int(sys.argv[2]), int(sys.argv[3])
ok = (p["stages"] == stages and p["replicas"] == replicas and p["micro_batches"] == 4
      and len(p["per_stage"]) == stages and p["cuts"][0] == 0)
if not ok:
    sys.exit(f"pipeline_train_test: FAILED: summary.json's pipeline is {json.dumps(p)}")
PY
"$(dirname "$0")/../support/compare_runs.py" "$WORK/one" "$WORK/pipe" --test-curves 1e-4 --names one-process pipeline \
  --what "the pipelined run and one process agree in every epoch's test scores"
# Both resume from their checkpoint for a third epoch.
"$BIN" train --out "$WORK/one" --resume --epochs 3 --quiet
"$@" "$BIN" train --out "$WORK/pipe" --resume --epochs 3 --quiet
"$(dirname "$0")/../support/compare_runs.py" "$WORK/one" "$WORK/pipe" --test-curves 1e-4 --names one-process pipeline \
  --what "resumed for a third epoch, they still agree"
# One rank: refused before training, the folder left empty.
rm -rf "$WORK/refused"
if "$BIN" train --config "$WORK/pipe.json" --out "$WORK/refused" --quiet > "$WORK/refused.log" 2>&1; then
  echo "pipeline_train_test: FAILED: $STAGES x $REPLICAS ranks' pipeline accepted on 1 rank"; exit 1
fi
grep -qE "parallel.pipeline.(stages|replicas): $STAGES stages (x $REPLICAS replicas )?need $((STAGES * REPLICAS)) ranks.*, the run has 1" "$WORK/refused.log" || {
  echo "pipeline_train_test: FAILED: the refusal does not give the reason:"; cat "$WORK/refused.log"; exit 1; }
if [ -d "$WORK/refused" ] && [ -n "$(ls -A "$WORK/refused")" ]; then
  echo "pipeline_train_test: FAILED: the refused run wrote $(ls "$WORK/refused")"; exit 1
fi
echo "pipeline_train_test: passed"
