"""NeuralNetwork / Model from Python: fit on NumPy arrays in place, Python
callbacks (stop, raise), KeyboardInterrupt, another thread during fit,
predict to NumPy, save / load, and bad input named."""
import os
import resource
import signal
import threading
import time
import warnings

import numpy as np
import pytest

import magmadnn
from magmadnn import layer


def toy_data(n=512, features=8, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, features)).astype(np.float32)
    labels = (x[:, 0] + 0.5 * x[:, 1] > 0).astype(np.int64)
    return x, magmadnn.one_hot(labels, 2)


def mlp(features=8, hidden=16, classes=2):
    layer.reset_names()  # the same layer names each time, so checkpoints load into a rebuilt network
    inp = layer.input((-1, features))
    fc1 = layer.fullyconnected(inp, hidden)
    act = layer.activation(fc1, "relu")
    fc2 = layer.fullyconnected(act, classes)
    out = layer.activation(fc2, "softmax")
    return [inp, fc1, act, fc2, out]


def test_fit_predict_evaluate_on_numpy():
    x, y = toy_data()
    net = magmadnn.NeuralNetwork(mlp(), "cross_entropy", "sgd", magmadnn.Params(32, 5, 0.1))
    history = net.fit(x, y)
    assert [r["epoch"] for r in history] == [1, 2, 3, 4, 5]
    assert history[-1]["loss"] < history[0]["loss"]
    p = net.predict(x)
    assert isinstance(p, np.ndarray) and p.shape == (512, 2) and p.dtype == np.float32
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    acc = (p.argmax(axis=1) == y.argmax(axis=1)).mean()
    e = net.evaluate(x, y)
    assert e["samples"] == 512 and abs(e["accuracy"] - acc) < 1e-6 and acc > 0.9


def test_the_papers_model_form():
    x, y = toy_data()
    params = magmadnn.Params(batch_size=64, n_epochs=2, learning_rate=0.05, optimizer="adam")
    m = magmadnn.Model(params, mlp())
    assert m.params.optimizer == "adam"
    assert len(m.fit(x, y)) == 2
    assert m.num_params == 8 * 16 + 16 + 16 * 2 + 2


def test_fit_does_not_copy_the_data_set():
    # 96 MiB of inputs: a copy would raise the peak RSS by as much.
    x = np.random.default_rng(1).standard_normal((48_000, 512), dtype=np.float32)
    y = magmadnn.one_hot((x[:, 0] > 0).astype(np.int64), 2)
    net = magmadnn.NeuralNetwork(mlp(512, 8), params=magmadnn.Params(1000, 1, 0.05))
    net.fit(x[:100], y[:100])  # warm up: the network's own buffers
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB
    net.fit(x, y)
    grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown < 24 * 1024, f"peak RSS grew by {grown} KiB during fit on a 96 MiB data set"


def test_python_callbacks_see_every_batch_and_can_stop():
    x, y = toy_data()
    seen = []

    class Recorder(magmadnn.Callback):
        def on_batch_end(self, logs):
            seen.append((logs["epoch"], logs["batch"]))

        def on_epoch_end(self, record):
            return record["epoch"] == 2  # True stops training

    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(128, 10, 0.1))
    epochs = []
    history = net.fit(x, y, callbacks=[Recorder(), lambda r: epochs.append(r["epoch"])])
    assert len(history) == 2 and epochs == [1, 2]
    assert seen == [(e, b) for e in (1, 2) for b in range(4)]


def test_early_stopping_from_cpp():
    x, y = toy_data()
    stop = magmadnn.EarlyStopping("loss", patience=1, min_delta=10.0)
    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(128, 20, 0.1))
    assert len(net.fit(x, y, callbacks=[stop])) == 2 and stop.stopped_epoch == 2


def test_a_raising_callback_stops_fit_and_leaves_a_loadable_checkpoint(tmp_path):
    x, y = toy_data()
    ckpt = str(tmp_path / "model.ckpt")

    class Boom(magmadnn.Callback):
        def on_epoch_end(self, record):
            if record["epoch"] == 2:
                raise ZeroDivisionError("boom at epoch 2")

    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(128, 10, 0.1))
    with pytest.raises(ZeroDivisionError, match="boom at epoch 2"):
        net.fit(x, y, callbacks=[Boom()], checkpoint_path=ckpt, checkpoint_every_epochs=1)
    again = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(128, 10, 0.1))
    again.load(ckpt)
    assert len(again.history) == 2  # the checkpoint of epoch 2 was written before the callback ran
    np.testing.assert_allclose(again.predict(x), net.predict(x), rtol=1e-6)


def test_keyboard_interrupt_stops_fit_between_batches(tmp_path):
    x, y = toy_data(2048)
    ckpt = str(tmp_path / "model.ckpt")
    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(16, 10_000, 0.05))
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        net.fit(x, y, checkpoint_path=ckpt, checkpoint_every_batches=50)
    assert time.monotonic() - t0 < 30
    timer.join()
    again = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(16, 10, 0.05))
    again.load(ckpt)  # the last checkpoint is whole


def test_another_python_thread_runs_during_fit():
    x, y = toy_data(4096)
    ticks = []
    running = threading.Event()
    done = threading.Event()

    def count():
        running.set()
        while not done.is_set():
            ticks.append(time.monotonic())
            time.sleep(0.001)

    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(8, 20, 0.05))  # about 10,000 steps
    th = threading.Thread(target=count)
    th.start()
    running.wait()
    t0 = time.monotonic()
    net.fit(x, y)
    t1 = time.monotonic()
    done.set()
    th.join()
    during = [t for t in ticks if t0 < t < t1]
    assert t1 - t0 > 0.1
    assert len(during) >= 10, f"the other thread ran {len(during)} times in {t1 - t0:.2f} s of fit"


def test_save_and_load_round_trip(tmp_path):
    x, y = toy_data()
    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(64, 2, 0.1))
    net.fit(x, y)
    path = str(tmp_path / "net.ckpt")
    net.save(path)
    other = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(64, 2, 0.1))
    other.load(path)
    np.testing.assert_array_equal(other.predict(x), net.predict(x))
    def key(h):
        return [(r["epoch"], r["loss"], r["accuracy"]) for r in h]

    assert key(other.history) == key(net.history)


def test_bad_input_names_the_argument():
    x, y = toy_data()
    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(64, 1, 0.1))
    with pytest.raises(magmadnn.ValueError, match=r"^x: expected float32 data, got float64"):
        net.fit(x.astype(np.float64), y)
    with pytest.raises(magmadnn.ValueError, match=r"^y: 511 rows for the 512 samples of x"):
        net.fit(x, y[:511])
    with pytest.raises(magmadnn.ValueError, match=r"callbacks\[1\]: expected a callable"):
        net.fit(x, y, callbacks=[magmadnn.Callback(), 42])
    with pytest.raises(magmadnn.ValueError, match=r"callbacks: expected a list"):
        net.fit(x, y, callbacks="on_epoch_end")
    with pytest.raises(magmadnn.ValueError, match=r"^loss: unknown loss 'hinge'"):
        magmadnn.NeuralNetwork(mlp(), "hinge")
    with pytest.raises(magmadnn.ValueError, match=r"adamm"):
        magmadnn.Params(optimizer="adamm")
    with pytest.raises(magmadnn.ShapeError, match=r"^x: shape \{512, 7\} does not fit the network's input \(-1, 8\)"):
        net.fit(np.ascontiguousarray(x[:, :7]), y)
    with pytest.raises(magmadnn.ShapeError, match=r"^x: shape"):
        net.predict(x[0])
    with pytest.raises(magmadnn.ShapeError, match=r"labels: value of shape \{64, 3\} does not match \{-1, 2\}"):
        net.fit(x, np.zeros((512, 3), np.float32))
    with pytest.raises(magmadnn.ValueError, match=r"epochs: must be >= 1"):
        net.fit(x, y, epochs=0)


def test_read_only_data_is_read_in_place():
    x, y = toy_data()
    x.setflags(write=False)
    y.setflags(write=False)
    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(64, 1, 0.1))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        net.fit(x, y)
        assert net.predict(x).shape == (512, 2)


def test_a_fortran_ordered_array_is_copied_once_with_a_warning():
    x, y = toy_data()
    net = magmadnn.NeuralNetwork(mlp(), params=magmadnn.Params(64, 1, 0.1))
    fx = np.asfortranarray(x)
    with pytest.warns(RuntimeWarning, match=r"x: the array is not C-contiguous .* copied once"):
        net.fit(fx, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        np.testing.assert_array_equal(net.predict(np.ascontiguousarray(fx)), net.predict(x))
