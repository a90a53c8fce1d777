"""The slides' compute-graph programs in Python (examples/slides_graph.cpp):
op.var / op.add / op.matmul / op.pow, eval(), and GradientDescent.minimize."""
import numpy as np

import magmadnn
from magmadnn import op


def test_affine_transform_through_the_graph():
    X = op.var("X", (5, 3), fill=("uniform", -1, 1))
    W = op.var("W", (6, 5), fill=("uniform", -1, 1))
    b = op.var("b", (6, 3), fill=("uniform", -1, 1))
    transform = op.add(op.matmul(W, X), b)
    out = transform.eval()
    assert out.shape == (6, 3)
    expected = W.value.numpy() @ X.value.numpy() + b.value.numpy()
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-6)
    # Operators build the same graph.
    np.testing.assert_allclose((W @ X + b).eval().numpy(), expected, rtol=1e-5, atol=1e-6)


def test_a_variable_over_numpy_memory_sees_numpy_writes():
    a = np.ones((2, 2), dtype=np.float32)
    v = op.var("v", a)  # shares a's memory
    assert v.value.data_ptr == a.__array_interface__["data"][0]
    a[0, 0] = 5.0
    np.testing.assert_array_equal(op.pow(v, 2).eval(recompute=True).numpy(), [[25, 1], [1, 1]])


def test_minimize_x_squared_plus_c():
    x = op.var("x", (1,), fill=3.0)
    c = op.var("c", (1,), fill=-2.0)
    opt = magmadnn.optimizer.GradientDescent(0.05)
    steps = 0
    while abs(x.eval().get(0)) >= 1e-3 and steps < 1000:
        opt.minimize(op.add(op.pow(x, 2), c), [x])
        steps += 1
    assert abs(x.eval().get(0)) < 1e-3
    assert 50 < steps < 200  # x shrinks by 0.9 a step: 3 * 0.9^k < 1e-3 at k = 76
