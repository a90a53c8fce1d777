#!/usr/bin/env python3
"""ONNX Runtime against magmadnn (tests/onnx/ort_round_trip.sh).

  ort_compare.py cut IMAGES.gz N OUT.idx      first N images of an IDX file, uncompressed
  ort_compare.py check MODEL.onnx IMAGES.idx PRED.csv
      runs MODEL.onnx in ONNX Runtime on the images (scaled by 1/255, as
      magmadnn feeds them) and compares with `magmadnn predict`'s CSV
      (index,class,p0,...): the same class for every image, every
      probability within 1e-5. Exit 1 naming the first difference.
"""
import gzip
import sys

import numpy as np


def read_idx(path):
    data = (gzip.open if path.endswith(".gz") else open)(path, "rb").read()
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * k:8 + 4 * k], "big") for k in range(ndim)]
    return data[:4], dims, np.frombuffer(data, np.uint8, offset=4 + 4 * ndim).reshape(dims)


def cut(src, n, out):
    magic, dims, a = read_idx(src)
    dims[0] = n
    with open(out, "wb") as f:
        f.write(magic + b"".join(d.to_bytes(4, "big") for d in dims) + a[:n].tobytes())


def check(model, images, csv):
    import onnxruntime as ort
    _, _, a = read_idx(images)
    x = (a.astype(np.float64) * (1.0 / 255.0)).astype(np.float32)
    if x.ndim == 3:  # {N, H, W}: one channel
        x = x[:, None, :, :]
    sess = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    got = sess.run(None, {sess.get_inputs()[0].name: x})[0]
    rows = np.loadtxt(csv, delimiter=",", skiprows=1)
    want_class, want = rows[:, 1].astype(int), rows[:, 2:]
    if got.shape != want.shape:
        sys.exit(f"{model}: ONNX Runtime gives {got.shape}, magmadnn {want.shape}")
    bad = np.nonzero(got.argmax(1) != want_class)[0]
    if bad.size:
        sys.exit(f"{model}: image {bad[0]}: class {got.argmax(1)[bad[0]]} in ONNX Runtime, {want_class[bad[0]]} in magmadnn")
    diff = np.abs(got - want).max()
    if diff > 1e-5:
        sys.exit(f"{model}: probabilities differ by {diff:.3g} (> 1e-5)")
    print(f"{model}: {len(x)} images, same classes, probabilities within {diff:.2g} (ONNX Runtime {ort.__version__})")


if __name__ == "__main__":
    if sys.argv[1] == "cut":
        cut(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        check(sys.argv[2], sys.argv[3], sys.argv[4])
