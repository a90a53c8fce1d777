"""magmadnn.train: the command's training run from Python (presets, config
dict or file, flags), returning summary.json as a dict; bad configs named."""
import json

import numpy as np
import pytest

import magmadnn


def test_train_the_mlp_preset_on_fashion_mnist(fashion_mnist_dir, tmp_path):
    ckpt = tmp_path / "checkpoint.bin"
    epochs = []
    summary = magmadnn.train(preset="mlp", epochs=1, data__dir=fashion_mnist_dir, data__limit_train=3000,
                             data__limit_test=1000, checkpoint=ckpt, callbacks=[lambda r: epochs.append(r["epoch"])])
    assert summary["name"] == "mlp" and summary["epochs"] == 1 and epochs == [1]
    assert summary["test_samples"] == 1000 and summary["train_samples"] == 2700
    assert 0.5 < summary["test_accuracy"] <= 1.0
    assert ckpt.exists()


def test_config_file_and_flags(fashion_mnist_dir, tmp_path):
    cfg = json.loads(magmadnn._magmadnn._preset("mlp"))
    cfg.setdefault("data", {}).update(dir=fashion_mnist_dir, limit_train=1000, limit_test=200, val_split=0)
    cfg["epochs"] = 3
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    summary = magmadnn.train(path, epochs=1, batch_size=50)
    assert summary["epochs"] == 1 and summary["batch_size"] == 50 and summary["validation_samples"] == 0


def test_a_wrong_key_is_a_config_error_naming_its_path():
    with pytest.raises(magmadnn.ConfigError, match=r"data\.limit_trian"):
        magmadnn.train(preset="mlp", data__limit_trian=10)
    with pytest.raises(magmadnn.ConfigError, match=r"epochs"):
        magmadnn.train({"epochs": -1}, preset="mlp")
    with pytest.raises(magmadnn.ValueError, match=r"config: expected a dict"):
        magmadnn.train(42)
    with pytest.raises(magmadnn.ConfigError, match=r"cannot open config file /nonexistent/config.json"):
        magmadnn.train("/nonexistent/config.json")


def test_fashion_mnist_as_numpy(fashion_mnist_dir):
    x, y = magmadnn.load_fashion_mnist("test", fashion_mnist_dir)
    assert x.shape == (10000, 1, 28, 28) and x.dtype == np.float32 and y.shape == (10000, 10)
    assert 0.0 <= x.min() and x.max() <= 1.0 and (y.sum(axis=1) == 1).all()


def paper_mlp():
    from magmadnn import layer
    inp = layer.input((-1, 1, 28, 28)); flat = layer.flatten(inp); fc1 = layer.fullyconnected(flat, 528)
    act = layer.activation(fc1, "sigmoid"); fc2 = layer.fullyconnected(act, 10); out = layer.activation(fc2, "softmax")
    return magmadnn.NeuralNetwork([inp, flat, fc1, act, fc2, out], "cross_entropy", "sgd", magmadnn.Params(100, 1, 0.05))


def command_checkpoint(fashion_mnist_dir, tmp_path):
    """checkpoint.bin of `magmadnn train` (the command, when CTest names it), else of magmadnn.train."""
    import os
    import subprocess
    cli = os.environ.get("MAGMADNN_CLI")
    if cli:
        out = tmp_path / "run"
        subprocess.run([cli, "train", "--preset", "mlp", "--epochs", "1", "--data", fashion_mnist_dir,
                        "--limit-train", "2000", "--limit-test", "1000", "--out", str(out), "--quiet"],
                       check=True, capture_output=True, timeout=300)
        return out / "checkpoint.bin", json.loads((out / "summary.json").read_text())
    ckpt = tmp_path / "checkpoint.bin"
    summary = magmadnn.train(preset="mlp", epochs=1, data__dir=fashion_mnist_dir, data__limit_train=2000,
                             data__limit_test=1000, checkpoint=ckpt)
    return ckpt, summary


def test_the_command_lines_checkpoint_loads_into_a_python_network(fashion_mnist_dir, tmp_path):
    ckpt, summary = command_checkpoint(fashion_mnist_dir, tmp_path)
    net = paper_mlp()
    net.load(str(ckpt))
    assert len(net.history) == 1
    x, y = magmadnn.load_fashion_mnist("test", fashion_mnist_dir)
    e = net.evaluate(x[:1000], y[:1000])
    assert abs(e["accuracy"] - summary["test_accuracy"]) < 1e-9
    assert abs(e["loss"] - summary["test_loss"]) < 1e-5
    net.save(str(tmp_path / "again.ckpt"))  # and it writes the same format back
    again = paper_mlp()
    again.load(str(tmp_path / "again.ckpt"))
    np.testing.assert_array_equal(again.predict(x[:100]), net.predict(x[:100]))


def test_tune_a_small_grid(fashion_mnist_dir, tmp_path):
    config = {
        "train": {"preset": "mlp", "epochs": 1,
                  "data": {"dir": fashion_mnist_dir, "limit_train": 1000, "limit_test": 200}},
        "space": [{"path": "optimizer.learning_rate", "values": [0.05, 0.5]}],
        "searcher": {"type": "grid"},
    }
    results = magmadnn.tune(config, tmp_path / "search")
    assert len(results["trials"]) == 2 and results["best"] in (0, 1)
    assert (tmp_path / "search" / "results.json").exists() and (tmp_path / "search" / "best.json").exists()
    with pytest.raises(magmadnn.ConfigError, match=r"searcher"):
        magmadnn.tune(dict(config, searcher={"type": "nope"}), tmp_path / "other")
