#!/usr/bin/env python3
"""Writes the first N training and M test samples of Fashion-MNIST into DIR
under MNIST's file names, so MagmaDNN v1 programs (which read
train-images-idx3-ubyte etc. from their working directory) can train on real
data in a test-sized run. Training files are written plain and test files
gzipped, so both reader paths are exercised.

usage: make_small_mnist.py DIR N_TRAIN N_TEST [SOURCE_DIR]
"""
import gzip
import struct
import sys
from pathlib import Path


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic, count = struct.unpack(">II", data[:8])
    ndim = magic & 0xFF
    dims = struct.unpack(">" + "I" * (ndim - 1), data[8:8 + 4 * (ndim - 1)]) if ndim > 1 else ()
    return magic, count, dims, data[8 + 4 * (ndim - 1):]


def write_idx(path, magic, count, dims, body, compress):
    header = struct.pack(">II", magic, count) + b"".join(struct.pack(">I", d) for d in dims)
    opener = gzip.open if compress else open
    with opener(path, "wb") as f:
        f.write(header + body)


def main():
    out, n_train, n_test = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    src = Path(sys.argv[4] if len(sys.argv) > 4 else "/usr/share/datasets/fashion-mnist")
    out.mkdir(parents=True, exist_ok=True)
    for split, n, compress in (("train", n_train, False), ("t10k", n_test, True)):
        for kind in ("images-idx3", "labels-idx1"):
            name = f"{split}-{kind}-ubyte"
            magic, count, dims, body = read_idx(src / f"{name}.gz")
            per = 1
            for d in dims:
                per *= d
            n_keep = min(n, count)
            target = out / (name + (".gz" if compress else ""))
            write_idx(target, magic, n_keep, dims, body[: n_keep * per], compress)


if __name__ == "__main__":
    main()
