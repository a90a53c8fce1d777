"""magmadnn: a C++20 deep-learning framework, from Python (docs/python.md).

- ``magmadnn.Tensor`` shares memory with NumPy and with any DLPack producer or
  consumer without copies (``from_numpy``, ``from_dlpack``, ``numpy.asarray``,
  ``numpy.from_dlpack``).
- ``magmadnn.op`` (var, add, matmul, pow, ...; ``Expr.eval()``),
  ``magmadnn.layer`` and ``magmadnn.optimizer`` are the slides' API;
  ``NeuralNetwork`` / ``Model`` train on NumPy arrays in place (``fit``),
  with Python callbacks, and ``save`` / ``load`` the command line's
  checkpoints.
- Every exception of the C++ library arrives as a subclass of
  ``magmadnn.Error`` (also of ValueError, IndexError, OSError or
  RuntimeError) with the C++ message.
"""
from . import _magmadnn
from ._magmadnn import *  # noqa: F401,F403
from ._magmadnn import (  # noqa: F401
    Error, ShapeError, IndexError, ValueError, ConfigError, DeviceError, NotSupportedError, IOError, CommError,
    Tensor, from_numpy, from_dlpack, has_gpu, op, layer, optimizer, Params, NeuralNetwork, Model, EarlyStopping,
    load_fashion_mnist,
)


class Callback:
    """Base of Python callbacks of ``NeuralNetwork.fit`` (overriding is optional).

    Each hook runs on the training thread with the GIL held. A hook that
    returns True stops training after that batch or epoch; one that raises
    stops ``fit`` with that exception.
    """

    def on_train_begin(self, info):
        """info: first_epoch, last_epoch, samples, batches_per_epoch, batch_size, has_validation."""

    def on_epoch_begin(self, epoch):
        """epoch: 1-based."""

    def on_batch_end(self, logs):
        """logs: epoch, batch, batches, size, loss, epoch_loss, epoch_accuracy, samples_done, seconds."""

    def on_epoch_end(self, record):
        """record: epoch, loss, accuracy, val_loss, val_accuracy, seconds, samples_per_second, learning_rate."""

    def on_train_end(self, history):
        """history: the list of epoch records."""


def one_hot(labels, classes):
    """Float32 one-hot rows {N, classes} for integer class labels {N} (a new array)."""
    import numpy

    labels = numpy.asarray(labels)
    if labels.ndim != 1 or labels.dtype.kind not in "iu":
        raise ValueError(f"labels: expected a 1-D integer array, got {labels.dtype} of shape {labels.shape}")
    if labels.size and (labels.min() < 0 or labels.max() >= classes):
        raise ValueError(f"labels: values must lie in [0, {classes}), got [{labels.min()}, {labels.max()}]")
    out = numpy.zeros((labels.size, classes), dtype=numpy.float32)
    out[numpy.arange(labels.size), labels] = 1.0
    return out


def _merge(base, over, path):
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(base.get(key), dict):
            _merge(base[key], value, f"{path}{key}.")
        else:
            base[key] = value
    return base


def train(config=None, *, preset=None, checkpoint=None, resume=False, callbacks=None, **flags):
    """Trains as ``magmadnn train`` does, in this process, and returns the summary (summary.json) as a dict.

    config: a dict or the path of a JSON config (docs/cli.md's schema), or None.
    preset: start from a preset (mlp, lenet5, resnet, ...); without config the preset is mlp,
        as on the command line. The config is merged over the preset, the flags over both.
    flags: top-level keys (epochs=3, batch_size=64, seed=1); a double underscore reaches into
        an object: data__limit_train=2000 sets config["data"]["limit_train"].
    checkpoint: write the training state to this file after every epoch (the command line's
        checkpoint format); resume=True continues from it when it exists.
    callbacks: as NeuralNetwork.fit's.

    A wrong key or value, or a config file that cannot be read, raises magmadnn.ConfigError
    naming its JSON path or the file; a missing data set magmadnn.IOError. The GIL is released while training; Ctrl-C stops with KeyboardInterrupt.
    """
    import json
    import os

    if isinstance(config, (str, os.PathLike)):
        config = json.loads(_magmadnn._read_json(os.fspath(config)))
    elif config is not None and not isinstance(config, dict):
        raise ValueError(f"config: expected a dict, the path of a JSON file or None, got {type(config).__name__}")
    if preset is None and config is None:
        preset = "mlp"
    merged = json.loads(_magmadnn._preset(preset)) if preset is not None else {}
    _merge(merged, json.loads(json.dumps(config or {})), "")
    for key, value in flags.items():
        *parents, leaf = key.split("__")
        node = merged
        for p in parents:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise ValueError(f"{key}: '{p}' is not an object in the config")
        node[leaf] = value
    return json.loads(_magmadnn._train(json.dumps(merged), os.fspath(checkpoint or ""), resume, callbacks))


def tune(config, out, *, resume=False):
    """Runs a hyperparameter search as ``magmadnn tune CONFIG --out DIR`` does in one process
    (docs/tune.md: train, space, searcher, objective, seed) and returns results.json as a dict.

    config: a dict or the path of a JSON tune config. out: the search folder (journal.jsonl,
    results.json, best.json); resume=True continues its journal. Trials run one after the
    other in this process. A wrong key raises magmadnn.ConfigError naming its JSON path.
    """
    import json
    import os

    if isinstance(config, (str, os.PathLike)):
        config = json.loads(_magmadnn._read_json(os.fspath(config)))
    elif not isinstance(config, dict):
        raise ValueError(f"config: expected a dict or the path of a JSON file, got {type(config).__name__}")
    return json.loads(_magmadnn._tune(json.dumps(config), os.fspath(out), resume))


__all__ = [name for name in dir() if not name.startswith("_")]
