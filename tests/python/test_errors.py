"""Every exception class of docs/errors.md arrives in Python under
magmadnn.Error, with the built-in class a caller would catch and the C++
message unchanged."""
import builtins

import numpy as np
import pytest

import magmadnn

CLASSES = {
    # C++ class: (Python class, built-in base)
    "Error": (magmadnn.Error, Exception),
    "ShapeError": (magmadnn.ShapeError, builtins.ValueError),
    "IndexError": (magmadnn.IndexError, builtins.IndexError),
    "ValueError": (magmadnn.ValueError, builtins.ValueError),
    "ConfigError": (magmadnn.ConfigError, builtins.ValueError),
    "DeviceError": (magmadnn.DeviceError, builtins.RuntimeError),
    "NotSupportedError": (magmadnn.NotSupportedError, builtins.NotImplementedError),
    "IOError": (magmadnn.IOError, builtins.OSError),
    "CommError": (magmadnn.CommError, builtins.RuntimeError),
}


@pytest.mark.parametrize("kind", sorted(CLASSES))
def test_every_class_is_mapped_with_its_message(kind):
    cls, builtin = CLASSES[kind]
    message = f"a {kind} from C++ [somewhere.cpp:12]"
    with pytest.raises(cls) as info:
        magmadnn._magmadnn._raise_for_test(kind, message)
    assert type(info.value) is cls  # the most derived class, not a base
    assert isinstance(info.value, magmadnn.Error) and isinstance(info.value, builtin)
    assert str(info.value) == ("epochs: " + message if kind == "ConfigError" else message)


def test_config_error_is_a_magmadnn_value_error():
    assert issubclass(magmadnn.ConfigError, magmadnn.ValueError)


def test_library_errors_arrive_with_their_class():
    with pytest.raises(magmadnn.ShapeError, match=r"matmul"):
        a = magmadnn.op.var("a", (2, 3), fill=1.0)
        b = magmadnn.op.var("b", (2, 3), fill=1.0)
        magmadnn.op.matmul(a, b).eval()
    with pytest.raises(magmadnn.IndexError, match=r"index"):
        magmadnn.Tensor((2, 2)).get((0, 2))
    with pytest.raises(magmadnn.IOError):
        x = magmadnn.layer.input((-1, 4))
        net = magmadnn.NeuralNetwork([x, magmadnn.layer.fullyconnected(x, 2)], params=magmadnn.Params())
        net.load("/nonexistent/model.ckpt")
    if not magmadnn.has_gpu():
        with pytest.raises(magmadnn.DeviceError, match=r"DEVICE memory"):
            magmadnn.Tensor((2,), memory="device")
    with pytest.raises(magmadnn.ValueError, match=r"batch_size"):
        magmadnn.Params(batch_size=0)


def test_a_non_magmadnn_exception_keeps_its_own_class():
    with pytest.raises(TypeError):
        magmadnn.Tensor((2,), memory=5)
