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


__all__ = [name for name in dir() if not name.startswith("_")]
