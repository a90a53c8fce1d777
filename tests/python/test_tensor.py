"""magmadnn.Tensor and NumPy / DLPack: shared memory both ways, dtypes,
views, negative indices, get/set, and the refusals that name the problem."""
import gc
import warnings

import numpy as np
import pytest

import magmadnn


def addr(a):
    return a.__array_interface__["data"][0]


def test_numpy_write_is_seen_by_the_tensor_and_back():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = magmadnn.from_numpy(a)
    assert t.shape == (3, 4) and t.dtype == "float32" and t.memory == "host"
    assert t.data_ptr == addr(a)  # same address: no copy
    a[1, 2] = 42.0
    assert t.get((1, 2)) == 42.0
    t.set((-1, -1), -7.0)  # negative indices count from the end
    assert a[2, 3] == -7.0
    t[0, 0] = 5.0
    assert a[0, 0] == 5.0 and t[0, 0] == 5.0


def test_tensor_to_numpy_shares_memory_three_ways():
    t = magmadnn.Tensor((2, 3), dtype="float64", fill=1.5)
    for view in (np.asarray(t), t.numpy(), np.asarray(memoryview(t))):
        assert view.dtype == np.float64 and view.shape == (2, 3)
        assert addr(view) == t.data_ptr
        view[1, 1] = 9.0
        assert t.get((1, 1)) == 9.0
        t.set((0, 2), 3.0)
        assert view[0, 2] == 3.0
    copied = t.numpy(copy=True)
    assert addr(copied) != t.data_ptr


def test_the_array_outlives_its_creator():
    t = magmadnn.Tensor((1000,), fill=2.0)
    a = t.numpy()
    del t
    gc.collect()
    assert a.sum() == 2000.0  # the array keeps the tensor's memory alive
    b = np.ones(100, dtype=np.float32)
    u = magmadnn.from_numpy(b)
    del b
    gc.collect()
    assert u.get(99) == 1.0  # and the tensor keeps the array alive


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
def test_dtypes_round_trip(dtype):
    a = np.linspace(-2, 2, 6).astype(dtype)
    t = magmadnn.from_numpy(a)
    assert t.dtype == dtype
    back = np.asarray(t)
    assert back.dtype == np.dtype(dtype) and addr(back) == addr(a)
    np.testing.assert_array_equal(back, a)


def test_bfloat16_converts_and_refuses_a_numpy_view():
    t = magmadnn.Tensor((4,), dtype="bfloat16", fill=1.25)
    assert t.dtype == "bfloat16" and t.get(0) == 1.25
    with pytest.raises(magmadnn.NotSupportedError, match="bfloat16"):
        t.__array_interface__  # noqa: B018
    np.testing.assert_array_equal(t.cast("float32").numpy(), np.full(4, 1.25, np.float32))


def test_views_share_storage_and_indices_may_be_negative():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    t = magmadnn.from_numpy(a)
    row = t[-1]  # a view of the last row
    assert row.shape == (6,) and row.get(-1) == 23.0
    assert row.shares_memory_with(t)
    part = t[1:3]
    assert part.shape == (2, 6) and part.get((0, 0)) == 6.0
    part.set((1, 0), 100.0)
    assert a[2, 0] == 100.0
    v = t.view((-1, 3))
    assert v.shape == (8, 3) and v.shares_memory_with(t)
    with pytest.raises(magmadnn.ShapeError):
        t.view((5, 5))
    with pytest.raises(magmadnn.IndexError, match=r"\[4, 6\]|4, 6|index"):
        t.get((4, 0))
    with pytest.raises(IndexError):  # also the built-in class
        t[-5]


def test_dlpack_round_trip_with_numpy():
    t = magmadnn.Tensor((3, 2), fill=("uniform", -1, 1))
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)  # read-only in NumPy 1.x, but the same memory
    assert addr(a) == t.data_ptr
    t.set((0, 0), 11.0)
    assert a[0, 0] == 11.0
    b = np.arange(6, dtype=np.float64).reshape(2, 3)
    u = magmadnn.from_dlpack(b)  # NumPy -> magmadnn -> NumPy: one address throughout
    assert u.data_ptr == addr(b) and u.dtype == "float64" and u.shape == (2, 3)
    c = np.from_dlpack(u)
    assert addr(c) == addr(b)
    b[1, 2] = -3.0
    assert u.get((1, 2)) == -3.0 and c[1, 2] == -3.0
    capsule = magmadnn.Tensor((2,), fill=4.0).__dlpack__()
    assert magmadnn.from_dlpack(capsule).get(1) == 4.0


def test_bad_arrays_raise_naming_the_argument():
    with pytest.raises(magmadnn.ValueError, match=r"array: unsupported dtype int64"):
        magmadnn.from_numpy(np.arange(4))
    f = np.asfortranarray(np.ones((3, 4), dtype=np.float32))
    with pytest.raises(magmadnn.ValueError, match=r"array: the array is not C-contiguous"):
        magmadnn.from_numpy(f)
    with pytest.raises(magmadnn.ValueError, match=r"not C-contiguous"):
        magmadnn.from_numpy(np.ones(10, dtype=np.float32)[::-2])  # negative strides
    with pytest.raises(magmadnn.ValueError, match=r"array: expected a magmadnn.Tensor or a writable array"):
        magmadnn.from_numpy([1.0, 2.0])
    ro = np.ones(3, dtype=np.float32)
    ro.setflags(write=False)
    with pytest.raises(magmadnn.ValueError, match=r"array: expected"):
        magmadnn.from_numpy(ro)
    with pytest.raises(magmadnn.ValueError, match=r"dtype: unsupported dtype 'int8'"):
        magmadnn.Tensor((2,), dtype="int8")
    with pytest.raises(magmadnn.ValueError, match=r"shape: sizes must be >= 0"):
        magmadnn.Tensor((2, -1))
    with pytest.raises(magmadnn.ValueError, match=r"memory: unknown memory 'gpu'"):
        magmadnn.Tensor((2,), memory="gpu")


def test_a_device_tensor_refuses_a_numpy_view():
    if magmadnn.has_gpu():
        t = magmadnn.Tensor((4,), memory="device", fill=1.0)
        with pytest.raises(magmadnn.DeviceError, match=r"DEVICE tensor has no host memory NumPy can share"):
            np.asarray(t)
        assert t.__dlpack_device__()[0] == 2
        np.testing.assert_array_equal(t.to("host").numpy(), np.ones(4, np.float32))
    else:
        with pytest.raises(magmadnn.DeviceError, match=r"DEVICE memory"):
            magmadnn.Tensor((4,), memory="device")
