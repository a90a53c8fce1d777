// magmadnn.Tensor: Tensor<T> for float32, float64, float16 and bfloat16,
// sharing memory with NumPy both ways (the buffer protocol,
// __array_interface__, Tensor.numpy()) and exchanging with any DLPack
// producer or consumer (__dlpack__, magmadnn.from_dlpack). Nothing here
// copies unless the caller asked for a copy or the layout forces one (then
// with a warning).
#include <Python.h>

#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <sstream>

#include "common.h"
#include "magmadnn/backend/registry.h"

namespace magmadnn::python {

namespace {
std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
}  // namespace

// fill: None (zeros), a number (that value), or (name, values...) with
// name one of uniform, gaussian, glorot, he, constant, zero, one, identity.
template <typename T>
tensor_filler_t<T> filler_from_py(nb::handle fill) {
  if (fill.is_none()) return {ZERO};
  if (PyFloat_Check(fill.ptr()) || PyLong_Check(fill.ptr())) return {CONSTANT, nb::cast<double>(fill)};
  MAGMADNN_CHECK(PyTuple_Check(fill.ptr()) && nb::len(fill) >= 1 && nb::isinstance<nb::str>(fill[0]), ValueError,
                 "fill: expected None, a number, or a tuple (name, values...) such as ('uniform', -1, 1), got "
                     << nb::str(nb::repr(fill)).c_str());
  static const std::pair<const char*, tensor_fill_t> kinds[] = {
      {"uniform", UNIFORM}, {"gaussian", GAUSSIAN}, {"glorot", GLOROT}, {"he", HE},     {"constant", CONSTANT},
      {"zero", ZERO},       {"one", ONE},           {"identity", IDENTITY}, {"none", NONE}};
  const std::string name = lower(nb::cast<std::string>(fill[0]));
  std::vector<T> values;
  for (std::size_t i = 1; i < nb::len(fill); ++i) values.push_back(static_cast<T>(nb::cast<double>(fill[i])));
  for (const auto& [n, k] : kinds)
    if (name == n) return {k, values};
  MAGMADNN_THROW(ValueError, "fill: unknown filler '" << name
                                 << "' (uniform, gaussian, glorot, he, constant, zero, one, identity, none)");
}

template tensor_filler_t<float> filler_from_py<float>(nb::handle);

Shape shape_from_py(nb::handle obj, const char* arg) {
  std::vector<std::int64_t> dims;
  if (PyLong_Check(obj.ptr())) {
    dims.push_back(nb::cast<std::int64_t>(obj));
  } else {
    MAGMADNN_CHECK(PySequence_Check(obj.ptr()), ValueError,
                   arg << ": expected a shape (a sequence of ints), got " << nb::str(nb::repr(obj)).c_str());
    for (nb::handle d : obj) {
      MAGMADNN_CHECK(PyLong_Check(d.ptr()), ValueError,
                     arg << ": every size must be an int, got " << nb::str(nb::repr(d)).c_str());
      dims.push_back(nb::cast<std::int64_t>(d));
    }
  }
  for (auto d : dims) MAGMADNN_CHECK(d >= 0, ValueError, arg << ": sizes must be >= 0, got " << d);
  return Shape(dims);
}

namespace {

template <typename T>
struct dl_type;
template <> struct dl_type<float> { static constexpr nb::dlpack::dtype v{2, 32, 1}; static constexpr const char* fmt = "f"; };
template <> struct dl_type<double> { static constexpr nb::dlpack::dtype v{2, 64, 1}; static constexpr const char* fmt = "d"; };
template <> struct dl_type<half> { static constexpr nb::dlpack::dtype v{2, 16, 1}; static constexpr const char* fmt = "e"; };
template <> struct dl_type<bfloat16> { static constexpr nb::dlpack::dtype v{4, 16, 1}; static constexpr const char* fmt = nullptr; };


template <typename T>
PyTensor make_tensor(const Shape& shape, memory_t mem, device_t device, nb::handle fill);

template <typename T>
PyTensor make_tensor(const Shape& shape, memory_t mem, device_t device, nb::handle fill) {
  return PyTensor{Tensor<T>(shape, filler_from_py<T>(fill), mem, device)};
}

// The host pointer of a tensor NumPy may view, or a DeviceError saying why not.
template <typename T>
T* host_pointer(Tensor<T>& t, const char* what) {
  const memory_t m = t.get_memory_type();
  MAGMADNN_CHECK(m == HOST || (m == MANAGED && !t.on_device()), DeviceError,
                 what << ": a " << memory_name(m) << " tensor"
                      << (m == MANAGED ? " on a GPU" : "")
                      << " has no host memory NumPy can share; copy it first with t.to('host') "
                         "(or use __dlpack__ / magmadnn.from_dlpack with a device-aware consumer)");
  if (t.empty()) return nullptr;
  return t.mutable_host_data();
}

template <typename T>
std::vector<std::int64_t> dims_of(const Tensor<T>& t) {
  return t.shape().dims();
}

// Copies a strided array into a fresh contiguous tensor (element strides).
template <typename T>
void strided_copy(const T* src, const std::vector<std::int64_t>& shape, const std::vector<std::int64_t>& strides,
                  std::size_t axis, T*& dst) {
  if (axis == shape.size()) {
    *dst++ = *src;
    return;
  }
  for (std::int64_t i = 0; i < shape[axis]; ++i) strided_copy(src + i * strides[axis], shape, strides, axis + 1, dst);
}

template <typename T>
PyTensor from_array_typed(nb::ndarray<>& a, const char* arg, bool allow_copy) {
  std::vector<std::int64_t> shape(a.ndim()), strides(a.ndim());
  bool contiguous = true;
  std::int64_t expect = 1;
  for (std::size_t i = a.ndim(); i-- > 0;) {
    shape[i] = static_cast<std::int64_t>(a.shape(i));
    strides[i] = a.stride(i);
    if (shape[i] != 1 && strides[i] != expect) contiguous = false;
    expect *= shape[i];
  }
  if (expect <= 1) contiguous = true;
  Shape s = shape.empty() ? Shape{1} : Shape(shape);
  T* data = static_cast<T*>(a.data());
  if (contiguous) {
    auto keep = std::shared_ptr<void>(new nb::ndarray<>(a), [](void* p) {
      if (Py_IsInitialized()) delete static_cast<nb::ndarray<>*>(p);  // takes the GIL itself
    });
    return PyTensor{Tensor<T>::borrow_host(data, s, std::move(keep))};
  }
  std::ostringstream st;
  for (std::size_t i = 0; i < strides.size(); ++i) st << (i ? ", " : "(") << strides[i] * static_cast<std::int64_t>(sizeof(T));
  st << (strides.size() == 1 ? ",)" : ")");
  MAGMADNN_CHECK(allow_copy, ValueError,
                 arg << ": the array is not C-contiguous (byte strides " << st.str()
                     << "); pass numpy.ascontiguousarray(" << arg << ") to share or copy it");
  const std::string warning = std::string(arg) + ": the array is not C-contiguous (byte strides " + st.str() +
                              "); it was copied once";
  if (PyErr_WarnEx(PyExc_RuntimeWarning, warning.c_str(), 1) != 0) throw nb::python_error();
  Tensor<T> t(s, HOST);
  T* dst = t.mutable_host_data();
  strided_copy<T>(data, shape, strides, 0, dst);
  return PyTensor{std::move(t)};
}

// The Python object's array, or a ValueError naming the argument.
// `read_only`: also a read-only array (for data the library only reads).
nb::ndarray<> array_arg(nb::handle obj, const char* arg, bool read_only = false) {
  nb::ndarray<> a;
  if (read_only) {
    nb::ndarray<nb::ro> r;
    if (nb::try_cast(obj, r, false)) return nb::ndarray<>(r);
  }
  if (!nb::try_cast(obj, a, false)) {
    MAGMADNN_THROW(ValueError, arg << ": expected a magmadnn.Tensor or a writable array (NumPy, or any object with "
                                      "__dlpack__ or the buffer protocol), got "
                                   << nb::str(nb::handle(Py_TYPE(obj.ptr()))).c_str());
  }
  return a;
}

template <typename T>
nb::object dlpack_of(Tensor<T>& t, nb::handle owner) {
  const auto dims = t.shape().dims();
  std::vector<std::size_t> shape(dims.begin(), dims.end());
  void* ptr = nullptr;
  int device_type = 1, device_id = 0;
  if (t.on_device()) {
    ptr = t.mutable_device_data();
    device_type = t.get_memory_type() == CUDA_MANAGED ? 13 : 2;
    device_id = t.get_device_id();
  } else {
    ptr = host_pointer(t, "__dlpack__");
  }
  // Without a framework nanobind hands the array out as a 'dltensor' capsule.
  nb::ndarray<> view(ptr, shape.size(), shape.data(), owner, nullptr, dl_type<T>::v, device_type, device_id);
  return nb::cast(view, nb::rv_policy::reference);
}

template <typename X>
struct elem;
template <typename T>
struct elem<Tensor<T>> {
  using type = T;
};
template <typename X>
using elem_t = typename elem<std::decay_t<X>>::type;

// Buffer protocol (PEP 3118) for host float32 / float64 / float16 tensors:
// numpy.asarray(t) and memoryview(t) share t's memory.
int tensor_getbuffer(PyObject* self, Py_buffer* view, int flags) {
  view->obj = nullptr;
  try {
    PyTensor* pt = nb::inst_ptr<PyTensor>(self);
    pt->visit([&](auto& t) {
      using T = elem_t<decltype(t)>;
      MAGMADNN_CHECK(dl_type<T>::fmt != nullptr, NotSupportedError,
                     "buffer protocol: NumPy has no bfloat16; use __dlpack__ or t.cast('float32')");
      T* ptr = host_pointer(t, "buffer protocol");
      const auto dims = t.shape().dims();
      auto* meta = new Py_ssize_t[2 * dims.size() + 1];
      Py_ssize_t stride = sizeof(T);
      for (std::size_t i = dims.size(); i-- > 0;) {
        meta[i] = static_cast<Py_ssize_t>(dims[i]);
        meta[dims.size() + i] = stride;
        stride *= static_cast<Py_ssize_t>(dims[i]);
      }
      view->buf = ptr;
      view->len = static_cast<Py_ssize_t>(t.size() * sizeof(T));
      view->itemsize = sizeof(T);
      view->readonly = 0;
      view->ndim = static_cast<int>(dims.size());
      view->format = (flags & PyBUF_FORMAT) ? const_cast<char*>(dl_type<T>::fmt) : nullptr;
      view->shape = meta;
      view->strides = meta + dims.size();
      view->suboffsets = nullptr;
      view->internal = meta;
    });
  } catch (const std::exception& e) {
    // Through the module's translator, so the Python class is magmadnn's.
    try {
      throw;
    } catch (nb::python_error& pe) {
      pe.restore();
    } catch (...) {
      PyErr_SetString(PyExc_BufferError, e.what());
    }
    return -1;
  }
  view->obj = self;
  Py_INCREF(self);
  return 0;
}

void tensor_releasebuffer(PyObject*, Py_buffer* view) { delete[] static_cast<Py_ssize_t*>(view->internal); }

PyType_Slot tensor_slots[] = {{Py_bf_getbuffer, reinterpret_cast<void*>(tensor_getbuffer)},
                              {Py_bf_releasebuffer, reinterpret_cast<void*>(tensor_releasebuffer)},
                              {0, nullptr}};

// Normalises a (possibly negative) index into [0, n) or throws IndexError.
std::int64_t norm_index(std::int64_t i, std::int64_t n, std::int64_t axis, const Shape& s) {
  const std::int64_t j = i < 0 ? i + n : i;
  MAGMADNN_CHECK(j >= 0 && j < n, IndexError, "index " << i << " is out of range for axis " << axis << " of shape " << s);
  return j;
}

// t[i0, i1, ...] with fewer ints than axes, or t[a:b]: a view.
PyTensor view_of(const PyTensor& pt, nb::handle key) {
  return pt.visit([&](const auto& t) -> PyTensor {
    using T = elem_t<decltype(t)>;
    if (PySlice_Check(key.ptr())) {
      Py_ssize_t start, stop, step;
      if (PySlice_Unpack(key.ptr(), &start, &stop, &step) < 0) throw nb::python_error();
      MAGMADNN_CHECK(step == 1, ValueError, "index: only slices with step 1 are views, got step " << step);
      PySlice_AdjustIndices(t.shape()[0], &start, &stop, step);
      return PyTensor{t.slice(start, std::max(start, stop))};
    }
    std::vector<std::int64_t> index;
    if (PyTuple_Check(key.ptr())) {
      for (nb::handle h : key) index.push_back(nb::cast<std::int64_t>(h));
    } else {
      index.push_back(nb::cast<std::int64_t>(key));
    }
    MAGMADNN_CHECK(static_cast<std::int64_t>(index.size()) < t.ndim(), IndexError,
                   "index: " << index.size() << " indices for a view of a " << t.ndim() << "-D tensor");
    Tensor<T> v = t.view(t.shape());
    for (std::size_t k = 0; k < index.size(); ++k) {
      const std::int64_t i = norm_index(index[k], v.shape()[0], static_cast<std::int64_t>(k), t.shape());
      auto dims = v.shape().dims();
      Tensor<T> row = v.slice(i, i + 1);
      dims.erase(dims.begin());
      v = row.view_dims(dims);
    }
    return PyTensor{std::move(v)};
  });
}

// A full multi-index (one int per axis) or a flat int on a 1-D tensor.
bool is_element_key(const PyTensor& pt, nb::handle key, std::vector<std::int64_t>& index) {
  const std::int64_t nd = pt.visit([](const auto& t) { return t.ndim(); });
  if (PyLong_Check(key.ptr())) {
    if (nd != 1) return false;
    index = {nb::cast<std::int64_t>(key)};
    return true;
  }
  if (!PyTuple_Check(key.ptr()) || static_cast<std::int64_t>(nb::len(key)) != nd) return false;
  for (nb::handle h : key) {
    MAGMADNN_CHECK(PyLong_Check(h.ptr()), IndexError,
                   "index: expected ints, got " << nb::str(nb::repr(key)).c_str());
    index.push_back(nb::cast<std::int64_t>(h));
  }
  return true;
}

std::vector<std::int64_t> index_arg(nb::handle idx) {
  if (PyLong_Check(idx.ptr())) return {nb::cast<std::int64_t>(idx)};
  std::vector<std::int64_t> out;
  MAGMADNN_CHECK(PySequence_Check(idx.ptr()), IndexError,
                 "index: expected an int or a sequence of ints, got " << nb::str(nb::repr(idx)).c_str());
  for (nb::handle h : idx) out.push_back(nb::cast<std::int64_t>(h));
  return out;
}

nb::dict array_interface(PyTensor& pt) {
  return pt.visit([&](auto& t) {
    using T = elem_t<decltype(t)>;
    MAGMADNN_CHECK(dl_type<T>::fmt != nullptr, NotSupportedError,
                   "__array_interface__: NumPy has no bfloat16; use __dlpack__ or t.cast('float32')");
    T* ptr = host_pointer(t, "__array_interface__");
    nb::dict d;
    nb::list shape;
    for (auto s : t.shape().dims()) shape.append(s);
    d["shape"] = nb::tuple(shape);
    d["typestr"] = std::string("<") + (std::is_same_v<T, double> ? "f8" : std::is_same_v<T, float> ? "f4" : "f2");
    d["data"] = nb::make_tuple(reinterpret_cast<std::uintptr_t>(ptr), false);
    d["strides"] = nb::none();
    d["version"] = 3;
    return d;
  });
}

}  // namespace

dtype dtype_from_py(nb::handle obj, const char* arg) {
  std::string name;
  if (nb::isinstance<nb::str>(obj)) {
    name = nb::cast<std::string>(obj);
  } else if (nb::hasattr(obj, "__name__")) {
    name = nb::cast<std::string>(obj.attr("__name__"));  // numpy.float32
  } else {
    name = nb::cast<std::string>(nb::str(obj));  // numpy.dtype('float32')
  }
  name = lower(name);
  if (name == "float32" || name == "float" || name == "f4" || name == "<f4") return dtype::f32;
  if (name == "float64" || name == "double" || name == "f8" || name == "<f8") return dtype::f64;
  if (name == "float16" || name == "half" || name == "f2" || name == "<f2") return dtype::f16;
  if (name == "bfloat16") return dtype::bf16;
  MAGMADNN_THROW(ValueError, arg << ": unsupported dtype '" << name << "' (float32, float64, float16, bfloat16)");
}

memory_t memory_from_py(const std::string& name, const char* arg) {
  const std::string n = lower(name);
  if (n == "host") return HOST;
  if (n == "device") return DEVICE;
  if (n == "managed") return MANAGED;
  if (n == "cuda_managed") return CUDA_MANAGED;
  MAGMADNN_THROW(ValueError, arg << ": unknown memory '" << name << "' (host, device, managed, cuda_managed)");
}

PyTensor tensor_from_array(nb::ndarray<> a, const char* arg, bool allow_copy) {
  MAGMADNN_CHECK(a.device_type() == nb::device::cpu::value, ValueError,
                 arg << ": a device array (DLPack device type " << a.device_type()
                     << "); magmadnn.from_dlpack takes host memory only, copy it to the host first");
  const nb::dlpack::dtype dt = a.dtype();
  if (dt == dl_type<float>::v) return from_array_typed<float>(a, arg, allow_copy);
  if (dt == dl_type<double>::v) return from_array_typed<double>(a, arg, allow_copy);
  if (dt == dl_type<half>::v) return from_array_typed<half>(a, arg, allow_copy);
  if (dt == dl_type<bfloat16>::v) return from_array_typed<bfloat16>(a, arg, allow_copy);
  static const char* codes[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  MAGMADNN_THROW(ValueError, arg << ": unsupported dtype " << (dt.code < 7 ? codes[dt.code] : "?")
                                 << static_cast<int>(dt.bits)
                                 << " (float32, float64, float16, bfloat16); convert it, e.g. "
                                 << arg << ".astype(numpy.float32)");
}

template <typename T>
Tensor<T> tensor_arg(nb::handle obj, const char* arg, bool allow_copy, bool read_only) {
  // Views and moves only: a Tensor<T> copy is a deep copy.
  if (nb::isinstance<PyTensor>(obj)) {
    const Tensor<T>& t = nb::cast<PyTensor&>(obj).as<T>(arg);
    return t.view(t.shape());
  }
  PyTensor pt = tensor_from_array(array_arg(obj, arg, read_only), arg, allow_copy);
  return std::move(pt.as<T>(arg));
}
template Tensor<float> tensor_arg<float>(nb::handle, const char*, bool, bool);
template Tensor<double> tensor_arg<double>(nb::handle, const char*, bool, bool);

nb::object numpy_view(const PyTensor& cpt, nb::handle owner) {
  PyTensor& pt = const_cast<PyTensor&>(cpt);
  return pt.visit([&](auto& t) -> nb::object {
    using T = elem_t<decltype(t)>;
    MAGMADNN_CHECK(dl_type<T>::fmt != nullptr, NotSupportedError,
                   "numpy(): NumPy has no bfloat16; use t.cast('float32').numpy() or __dlpack__");
    T* ptr = host_pointer(t, "numpy()");
    const auto dims = t.shape().dims();
    std::vector<std::size_t> shape(dims.begin(), dims.end());
    nb::ndarray<nb::numpy> arr(ptr, shape.size(), shape.data(), owner, nullptr, dl_type<T>::v);
    return nb::cast(arr, nb::rv_policy::reference);
  });
}

// Elements, views and copies.
static void bind_tensor_access(nb::class_<PyTensor>& cls) {
  cls
      .def("get", [](const PyTensor& t, nb::handle idx) {
        const auto i = index_arg(idx);
        return t.visit([&](const auto& x) {
          return static_cast<double>(i.size() == 1 && x.ndim() != 1 ? x.get(i[0]) : x.get(i));
        });
      }, nb::arg("index"),
      "The element at `index`: a sequence of one int per axis (negative counts from the end), or one\n"
      "flat int. Raises magmadnn.IndexError naming the index and the shape when it is outside.")
      .def("set", [](PyTensor& t, nb::handle idx, double value) {
        const auto i = index_arg(idx);
        t.visit([&](auto& x) {
          using T = elem_t<decltype(x)>;
          if (i.size() == 1 && x.ndim() != 1) x.set(i[0], static_cast<T>(value));
          else x.set(i, static_cast<T>(value));
        });
      }, nb::arg("index"), nb::arg("value"), "Sets the element at `index` (as get()).")
      .def("__getitem__", [](nb::handle self, nb::handle key) -> nb::object {
        PyTensor& t = nb::cast<PyTensor&>(self);
        std::vector<std::int64_t> i;
        if (is_element_key(t, key, i)) return nb::float_(t.visit([&](const auto& x) { return static_cast<double>(x.get(i)); }));
        return nb::cast(view_of(t, key));
      })
      .def("__setitem__", [](nb::handle self, nb::handle key, nb::handle value) {
        PyTensor& t = nb::cast<PyTensor&>(self);
        std::vector<std::int64_t> i;
        if (is_element_key(t, key, i)) {
          const double v = nb::cast<double>(value);
          t.visit([&](auto& x) { x.set(i, static_cast<elem_t<decltype(x)>>(v)); });
          return;
        }
        nb::object view = nb::cast(view_of(t, key));
        numpy_view(nb::cast<PyTensor&>(view), view).attr("__setitem__")(nb::ellipsis(), value);
      })
      .def("view", [](const PyTensor& t, nb::handle shape) {
        std::vector<std::int64_t> dims;
        for (nb::handle d : shape) dims.push_back(nb::cast<std::int64_t>(d));
        return t.visit([&](const auto& x) { return PyTensor{x.view_dims(dims)}; });
      }, nb::arg("shape"), "A tensor of another shape over the same storage (one size may be -1).\n"
                           "Raises magmadnn.ShapeError if the sizes differ.")
      .def("slice", [](const PyTensor& t, std::int64_t b, std::int64_t e) {
        return t.visit([&](const auto& x) { return PyTensor{x.slice(b, e)}; });
      }, nb::arg("begin"), nb::arg("end"), "Rows [begin, end) of axis 0, sharing storage.")
      .def("shares_memory_with", [](const PyTensor& a, const PyTensor& b) {
        return a.visit([&](const auto& x) {
          using T = elem_t<decltype(x)>;
          auto* y = std::get_if<Tensor<T>>(&b.t);
          return y != nullptr && x.shares_storage_with(*y);
        });
      }, nb::arg("other"))
      .def("copy", [](const PyTensor& t) { return t.visit([](const auto& x) { return PyTensor{x}; }); },
           "A deep copy in the same kind of memory.")
      .def("to", [](const PyTensor& t, const std::string& memory, int device) {
        const memory_t mem = memory_from_py(memory, "memory");
        return t.visit([&](const auto& x) { return PyTensor{x.to(mem, device)}; });
      }, nb::arg("memory"), nb::arg("device") = 0, "A deep copy in other memory.")
      .def("cast", [](const PyTensor& t, nb::handle dtype) {
        const magmadnn::dtype d = dtype_from_py(dtype, "dtype");
        return t.visit([&](const auto& x) -> PyTensor {
          switch (d) {
            case dtype::f32: return PyTensor{x.template cast<float>()};
            case dtype::f64: return PyTensor{x.template cast<double>()};
            case dtype::f16: return PyTensor{x.template cast<half>()};
            default: return PyTensor{x.template cast<bfloat16>()};
          }
        });
      }, nb::arg("dtype"), "A converted copy (float32, float64, float16, bfloat16) in the same memory.");
}

// NumPy and DLPack.
static void bind_tensor_exchange(nb::class_<PyTensor>& cls) {
  cls
      .def("numpy", [](nb::handle self, bool copy) -> nb::object {
        PyTensor& t = nb::cast<PyTensor&>(self);
        nb::object view = numpy_view(t, self);
        return copy ? view.attr("copy")() : view;
      }, nb::arg("copy") = false,
      "A NumPy array sharing this tensor's memory (copy=False), or a copy. Host tensors only:\n"
      "a tensor on a GPU raises magmadnn.DeviceError (copy it with t.to('host') first).")
      .def_prop_ro("__array_interface__", [](PyTensor& t) { return array_interface(t); })
      .def("__dlpack__", [](nb::handle self, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                            nb::handle copy) {
        PyTensor& t = nb::cast<PyTensor&>(self);
        MAGMADNN_CHECK(copy.is_none() || !nb::cast<bool>(copy), NotSupportedError,
                       "__dlpack__: copy=True is not supported; the capsule always shares memory");
        return t.visit([&](auto& x) { return dlpack_of(x, self); });
      }, nb::arg("stream").none() = nb::none(), nb::arg("max_version").none() = nb::none(), nb::arg("dl_device").none() = nb::none(),
      nb::arg("copy").none() = nb::none(),
      "A DLPack capsule sharing this tensor's memory (host, or the device pointer for a tensor on a GPU).")
      .def("__dlpack_device__", [](const PyTensor& t) {
        return t.visit([](const auto& x) {
          if (!x.on_device()) return nb::make_tuple(1, 0);
          return nb::make_tuple(x.get_memory_type() == CUDA_MANAGED ? 13 : 2, x.get_device_id());
        });
      })
      .def("__repr__", [](const PyTensor& t) { return t.visit([](const auto& x) { return x.to_string(); }); });
}

void bind_tensor(nb::module_& m) {
  nb::class_<PyTensor> cls(m, "Tensor", nb::type_slots(tensor_slots),
    "An n-dimensional, row-major array (C++ magmadnn::Tensor<T>): float32, float64, float16 or bfloat16,\n"
    "in HOST, MANAGED, DEVICE or CUDA_MANAGED memory.\n\n"
    "A host tensor shares its memory with NumPy both ways, without copies: numpy.asarray(t),\n"
    "memoryview(t), t.numpy() and magmadnn.from_numpy(a) / magmadnn.from_dlpack(a) all give views.\n"
    "Views (t[i], t[a:b], t.view(shape)) share storage with t. Indices may be negative (Python style);\n"
    "out-of-range indices raise magmadnn.IndexError naming the index and the shape.");
  cls.def(
         "__init__",
         [](PyTensor* self, nb::handle shape, nb::handle dtype, const std::string& memory, nb::handle fill, int device) {
           const Shape s = shape_from_py(shape, "shape");
           const memory_t mem = memory_from_py(memory, "memory");
           PyTensor t;
           switch (dtype_from_py(dtype, "dtype")) {
             case dtype::f32: t = make_tensor<float>(s, mem, device, fill); break;
             case dtype::f64: t = make_tensor<double>(s, mem, device, fill); break;
             case dtype::f16: t = make_tensor<half>(s, mem, device, fill); break;
             default: t = make_tensor<bfloat16>(s, mem, device, fill); break;
           }
           new (self) PyTensor(std::move(t));
         },
         nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("memory") = "host", nb::arg("fill").none() = nb::none(),
         nb::arg("device") = 0,
         "Allocates a tensor of `shape` (ints >= 0) and `dtype` in `memory` ('host', 'managed', 'device',\n"
         "'cuda_managed'; DEVICE memory without a GPU raises magmadnn.DeviceError). `fill`: None (zeros), a\n"
         "number, or (name, values...) with name uniform, gaussian, glorot, he, constant, zero, one, identity.")
      .def_prop_ro("shape", [](const PyTensor& t) {
        nb::list l;
        for (auto d : t.visit([](const auto& x) { return x.shape().dims(); })) l.append(d);
        return nb::tuple(l);
      }, "The sizes of the axes (a tuple).")
      .def_prop_ro("dtype", [](const PyTensor& t) { return std::string(dtype_name(t.element_type())); },
                   "'float32', 'float64', 'float16' or 'bfloat16'.")
      .def_prop_ro("memory", [](const PyTensor& t) {
        return lower(memory_name(t.visit([](const auto& x) { return x.get_memory_type(); })));
      }, "'host', 'managed', 'device' or 'cuda_managed'.")
      .def_prop_ro("device", [](const PyTensor& t) { return t.visit([](const auto& x) { return x.get_device_id(); }); })
      .def_prop_ro("on_device", [](const PyTensor& t) { return t.visit([](const auto& x) { return x.on_device(); }); },
                   "True when arithmetic on this tensor runs on a GPU.")
      .def_prop_ro("ndim", [](const PyTensor& t) { return t.visit([](const auto& x) { return x.ndim(); }); })
      .def_prop_ro("size", [](const PyTensor& t) { return t.visit([](const auto& x) { return x.size(); }); },
                   "The number of elements.")
      .def("__len__", [](const PyTensor& t) { return t.visit([](const auto& x) { return x.shape()[0]; }); })
      .def_prop_ro("data_ptr", [](PyTensor& t) {
        return t.visit([](auto& x) {
          return reinterpret_cast<std::uintptr_t>(x.on_device() ? static_cast<const void*>(x.data())
                                                                : static_cast<const void*>(x.host_data()));
        });
      }, "The address of the first element (host memory, or device memory for a tensor on a GPU).");
  bind_tensor_access(cls);
  bind_tensor_exchange(cls);

  m.def("from_numpy", [](nb::handle array) { return tensor_from_array(array_arg(array, "array"), "array", false); },
        nb::arg("array"),
        "A HOST tensor over `array`'s memory (no copy; the tensor keeps the array alive). The array must be\n"
        "writable, C-contiguous and float32, float64, float16 or bfloat16; anything else raises\n"
        "magmadnn.ValueError naming what was expected.");
  m.def("from_dlpack", [](nb::handle obj) { return tensor_from_array(array_arg(obj, "obj"), "obj", false); },
        nb::arg("obj"),
        "A HOST tensor over the memory of any DLPack producer (numpy, torch, ... ; an object with\n"
        "__dlpack__, or a 'dltensor' capsule), without a copy. Host memory, C-contiguous, floating point.");
  m.def("has_gpu", []() { return has_cuda_device(); }, "True when a CUDA device is usable in this process.");
}

}  // namespace magmadnn::python
