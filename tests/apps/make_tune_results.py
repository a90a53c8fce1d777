#!/usr/bin/env python3
"""Writes a synthetic results.json of a batch size x learning rate grid
search (6 x 9 = 54 trials, 5 epochs each) for the tune report page's
rendering check: loss curves that fall faster for larger learning rates and
smaller batches, two failed trials (one with an error message full of HTML),
three pruned after two epochs, and the best trial by least loss-curve area;
the trials are written in a shuffled order, as several workers finish them.
  make_tune_results.py OUT_DIR"""
import json, math, os, random, sys

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = random.Random(7)
batches = [16, 32, 64, 128, 256, 512]
rates = [round(0.1 * k, 1) for k in range(1, 10)]
failed = {(16, 0.9): "diverged: loss is NaN at epoch 2 <script>alert(\"x\")</script> & more",
          (32, 0.9): "worker 3 died (signal 9); retried once, died again"}
pruned = {(512, 0.1), (512, 0.2), (256, 0.1)}
trials = []
for i, (b, lr) in enumerate((b, lr) for b in batches for lr in rates):
    speed = lr * 8 / math.sqrt(b) * (1.4 - 0.35 * lr)
    floor = 0.25 + 0.04 * math.log2(b / 16) + 0.15 * max(0, lr - 0.6)
    curve, t = [], 0.0
    epochs = 2 if (b, lr) in pruned else 5
    if (b, lr) in failed:
        epochs = 1 if b == 16 else 0
    for e in range(1, epochs + 1):
        loss = floor + (2.3 - floor) * math.exp(-speed * e) + rng.uniform(0, 0.02)
        acc = max(0.1, min(0.95, 1.0 - loss / 2.5))
        secs = 1.5 * 64 / b + 0.8 + rng.uniform(0, 0.1)
        t += secs
        curve.append({"epoch": e, "loss": round(loss, 5), "accuracy": round(acc, 5), "seconds": round(t, 4)})
    trial = {"index": i, "params": {"batch_size": b, "optimizer.learning_rate": lr},
             "status": "failed" if (b, lr) in failed else "pruned" if (b, lr) in pruned else "ok",
             "attempts": 2 if (b, lr) in failed else 1, "worker": 1 + i % 3, "seconds": round(t + 0.05, 4),
             "curve": curve}
    if trial["status"] == "failed":
        trial["objective"] = None
        trial["error"] = failed[(b, lr)]
    else:
        trial["objective"] = round(sum(p["loss"] for p in curve), 5)
        last = curve[-1]
        trial["final"] = {"loss": last["loss"], "accuracy": last["accuracy"],
                          "test_accuracy": round(last["accuracy"] - 0.01, 5) if trial["status"] == "ok" else None}
    trials.append(trial)
ok = [t for t in trials if t["status"] == "ok"]
best = min(ok, key=lambda t: t["objective"])["index"]
rng.shuffle(trials)  # as an engine with several workers writes them: in the order they finished
doc = {"objective": {"kind": "loss_area", "loss_threshold": 0.5}, "searcher": "grid", "seed": 42, "best": best,
       "dimensions": [{"path": "batch_size", "kind": "list", "values": batches},
                      {"path": "optimizer.learning_rate", "kind": "range", "start": 0.1, "stop": 0.9, "step": 0.1}],
       "trials": trials}
with open(os.path.join(out, "results.json"), "w") as f:
    json.dump(doc, f, indent=1)
print(f"make_tune_results: {len(trials)} trials, best {best}, in {out}/results.json")
