"""examples/python/ runs, on a slice of Fashion-MNIST."""
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"


def run(script, *args):
    env = dict(os.environ, DISPLAY="")
    r = subprocess.run([sys.executable, str(EXAMPLES / script), *map(str, args)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def test_mlp_in_ten_lines(fashion_mnist_dir):
    code = [l for l in (EXAMPLES / "mlp_fashion_mnist.py").read_text().splitlines() if l and not l.startswith("#")]
    assert len(code) <= 10
    out = run("mlp_fashion_mnist.py", 3000)
    assert "epoch 5: loss" in out
    accuracy = float(out.split("test accuracy")[1])
    assert accuracy > 0.6


def test_lenet5_with_a_python_callback(fashion_mnist_dir):
    out = run("lenet5_live_loss.py", 1000, 1)
    assert "epoch 1 batch 0/16" in out and "epoch 1: loss" in out and "test accuracy" in out


def test_weights_to_pytorch(fashion_mnist_dir):
    pytest.importorskip("torch")
    assert "same classes" in run("to_pytorch.py", 2000)
