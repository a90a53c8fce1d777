"""Fashion-MNIST for the peer benchmarks, read the way magmadnn reads it.

Pixels become float32 in [0, 1] (x / 255), labels become one-hot float32
rows, so every framework starts from the same arrays. The whole set is loaded
into memory before any timer starts.
"""
import argparse
import gzip
import math
import os
import struct

import numpy as np

DEFAULT_DIR = "/usr/share/datasets/fashion-mnist"


def _read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    if len(data) < 4:
        raise ValueError(f"{path}: {len(data)} bytes, too short for an IDX header")
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError(f"{path}: IDX magic {data[:4].hex()} is not unsigned-byte data")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    offset = 4 + 4 * ndim
    expected = int(np.prod(dims))
    if len(data) - offset != expected:
        raise ValueError(f"{path}: header says {dims} ({expected} bytes) but {len(data) - offset} follow offset {offset}")
    return np.frombuffer(data, dtype=np.uint8, offset=offset).reshape(dims)


def load(split, data_dir=None, flatten=True):
    """Return (x, y_onehot, y_labels) for split 'train' or 't10k'.

    x is float32 (n, 784) when flatten, else (n, 1, 28, 28); y_onehot is
    float32 (n, 10); y_labels is int64 (n,).
    """
    data_dir = data_dir or os.environ.get("MAGMADNN_FASHION_MNIST", DEFAULT_DIR)
    images = _read_idx(os.path.join(data_dir, f"{split}-images-idx3-ubyte.gz"))
    labels = _read_idx(os.path.join(data_dir, f"{split}-labels-idx1-ubyte.gz")).astype(np.int64)
    if images.shape[0] != labels.shape[0]:
        raise ValueError(f"{split}: {images.shape[0]} images but {labels.shape[0]} labels")
    x = images.astype(np.float32) / np.float32(255.0)
    x = x.reshape(len(x), -1) if flatten else x.reshape(len(x), 1, 28, 28)
    onehot = np.zeros((len(labels), 10), dtype=np.float32)
    onehot[np.arange(len(labels)), labels] = 1.0
    return np.ascontiguousarray(x), onehot, labels


def common_args(parser):
    """Flags shared by every peer script, with the paper's MLP defaults."""
    parser.add_argument("--layers", type=int, default=1, help="hidden layers (MLP only)")
    parser.add_argument("--hidden", type=int, default=528)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=100)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--weight-decay", type=float, default=0.001)
    parser.add_argument("--momentum", type=float, default=0.0)
    parser.add_argument("--schedule", choices=("constant", "cosine"), default="constant",
                        help="cosine: lr annealed to 0 over all steps, per step, as magmadnn's CosineLR")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--data-dir", default=None)
    parser.add_argument("--device", default="cpu",
                        help="PyTorch only: cpu, or cuda (the data set is copied to the GPU before the timer starts)")
    parser.add_argument("--compile", action="store_true", help="PyTorch only: torch.compile the model")
    return parser


def peer_args(description, **defaults):
    """Parses a peer script's flags: common_args, --no-shuffle, the script's
    own defaults (its network's settings), and sets OMP_NUM_THREADS from
    --threads before the framework is imported."""
    parser = common_args(argparse.ArgumentParser(description=description))
    parser.add_argument("--no-shuffle", dest="shuffle", action="store_false")
    parser.set_defaults(**defaults)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(args.threads))
    return args


def cosine_factor(step, total):
    """magmadnn's CosineLR at 0-based step `step` of `total`, as a factor of the base rate."""
    return 0.5 * (1.0 + math.cos(math.pi * min(step, total) / total))


def batches_per_epoch(n, batch_size):
    """Full batches plus one partial batch, as magmadnn's loader does."""
    return (n + batch_size - 1) // batch_size
