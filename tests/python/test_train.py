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
