#!/usr/bin/env python3
"""Compares two `magmadnn train` run folders: the results of summary.json (as
printed, to the last digit) and the trained weights (SHA-256 of the tensor
section of checkpoint.bin, whose header also holds timings that differ between
runs; docs/checkpoint_format.md).

    compare_runs.py RUN_A RUN_B [--names A B] [--what TEXT]
    compare_runs.py RUN_A RUN_B --test-curves TOL [--names A B] [--what TEXT]

Prints each key for both runs and exits 1 naming the keys that differ, 0 when
all agree. With --test-curves it compares instead the per-epoch test scores
(test_per_epoch.csv: the same epochs, test_loss and test_accuracy within
TOL). Shared by the network-namespace, Slurm and rank-count tests."""
import argparse
import csv
import hashlib
import json
import struct
import sys

KEYS = ["final_train_loss", "final_train_accuracy", "test_loss", "test_accuracy",
        "train_samples", "test_samples", "epochs", "weights_sha256"]


def weights_sha256(path):
    """SHA-256 of the tensors of a version-1 checkpoint (names, shapes, values)."""
    data = open(path, "rb").read()
    (payload,) = struct.unpack_from("<Q", data, 12)
    offset = 20
    (entries,) = struct.unpack_from("<I", data, offset)
    offset += 4
    for _ in range(2 * entries):  # a key, then its value, each length-prefixed
        (length,) = struct.unpack_from("<I", data, offset)
        offset += 4 + length
    return hashlib.sha256(data[offset:20 + payload]).hexdigest()


def load(run):
    summary = json.load(open(run + "/summary.json"))
    summary["weights_sha256"] = weights_sha256(run + "/checkpoint.bin")
    return summary


def compare_test_curves(a, b, tol, na, nb):
    """The reason the per-epoch test scores of runs a and b differ, or None."""
    one, two = ([r for r in csv.DictReader(open(run + "/test_per_epoch.csv"))] for run in (a, b))
    if len(one) != len(two) or not one:
        return f"{len(one)} and {len(two)} epochs of test scores"
    for x, y in zip(one, two):
        for k in ("test_loss", "test_accuracy"):
            if abs(float(x[k]) - float(y[k])) > tol:
                return f"epoch {x['epoch']}: {k} {x[k]} in the {na} run, {y[k]} in the {nb} run"
    print(f"per-epoch test loss, {na} against {nb}: " +
          ", ".join(f"{x['test_loss']} vs {y['test_loss']}" for x, y in zip(one, two)))
    return None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("a")
    p.add_argument("b")
    p.add_argument("--names", nargs=2, default=["a", "b"])
    p.add_argument("--what", default="the two runs agree")
    p.add_argument("--test-curves", type=float, metavar="TOL")
    args = p.parse_args()
    na, nb = args.names
    if args.test_curves is not None:
        why = compare_test_curves(args.a, args.b, args.test_curves, na, nb)
        print("FAIL: " + why if why else "PASS: " + args.what)
        return 1 if why else 0
    a, b = load(args.a), load(args.b)
    for k in KEYS:
        print(f"{k:21} {na} {a.get(k)}  {nb} {b.get(k)}")
    differ = [k for k in KEYS if a.get(k) != b.get(k)]
    if differ:
        print(f"FAIL: the {na} run differs from the {nb} run in " + ", ".join(differ))
        return 1
    print("PASS: " + args.what)
    return 0


if __name__ == "__main__":
    sys.exit(main())
