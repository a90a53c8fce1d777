// Shared by the binding files of magmadnn._magmadnn (python/src/). The
// bindings are thin: they convert Python arguments, check what C++ would
// misread (dtype, shape, memory order), and call the library. Every check
// names the Python argument it refers to.
#pragma once

#include <nanobind/nanobind.h>
#include <nanobind/ndarray.h>

#include <cstdint>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "magmadnn/core/errors.h"
#include "magmadnn/core/half.h"
#include "magmadnn/model/callbacks.h"
#include "magmadnn/tensor/tensor.h"

namespace magmadnn::python {

namespace nb = nanobind;

/// The Python Tensor: one class for every element type it can hold.
using AnyTensor = std::variant<Tensor<float>, Tensor<double>, Tensor<half>, Tensor<bfloat16>>;

struct PyTensor {
  AnyTensor t;
  template <typename F>
  decltype(auto) visit(F&& f) { return std::visit(std::forward<F>(f), t); }
  template <typename F>
  decltype(auto) visit(F&& f) const { return std::visit(std::forward<F>(f), t); }
  dtype element_type() const {
    return visit([](const auto& x) { return std::decay_t<decltype(x)>::get_dtype(); });
  }
  /// The Tensor<T> inside, or ValueError naming `arg` and both dtypes.
  template <typename T>
  Tensor<T>& as(const char* arg) {
    auto* p = std::get_if<Tensor<T>>(&t);
    MAGMADNN_CHECK(p != nullptr, ValueError,
                   arg << ": expected " << dtype_name(dtype_v<T>) << " data, got " << dtype_name(element_type())
                       << " (convert it, e.g. with .astype(numpy." << dtype_name(dtype_v<T>) << "))");
    return *p;
  }
};

/// "float32", numpy.float32, numpy.dtype("float32"), "f4" ... -> dtype; a
/// ValueError naming `arg` otherwise.
dtype dtype_from_py(nb::handle obj, const char* arg);
/// A shape from an int or a sequence of ints >= 0 (ValueError naming `arg`).
Shape shape_from_py(nb::handle obj, const char* arg);
/// A filler from None (zeros), a number (that value) or (name, values...).
template <typename T>
tensor_filler_t<T> filler_from_py(nb::handle fill);
/// "host", "device", "managed", "cuda_managed" (any case) -> memory_t.
memory_t memory_from_py(const std::string& name, const char* arg);

/// A Tensor over `array`'s memory without a copy (HOST), keeping the array
/// alive. Refuses (ValueError naming `arg`) a device array, an unsupported
/// dtype, and an array that is not C-contiguous unless `allow_copy`, in
/// which case a non-contiguous array is copied once with a warning.
PyTensor tensor_from_array(nb::ndarray<> array, const char* arg, bool allow_copy);

/// Tensor<T> from a Python argument that is a magmadnn.Tensor or a NumPy /
/// DLPack array (zero copy where the layout allows; see tensor_from_array).
/// `read_only`: a read-only array is accepted too (for data the library
/// only reads: fit's, evaluate's and predict's inputs).
template <typename T>
Tensor<T> tensor_arg(nb::handle obj, const char* arg, bool allow_copy, bool read_only = false);

/// A NumPy array sharing `t`'s memory (HOST, or MANAGED without a GPU);
/// `owner` is kept alive by the array.
nb::object numpy_view(const PyTensor& t, nb::handle owner);

/// fit's `callbacks` argument: Python objects or callables (PyCallback) and
/// C++ callbacks (EarlyStopping); ValueError naming the bad entry.
std::vector<std::shared_ptr<model::Callback<float>>> callbacks_arg(nb::handle callbacks);
/// A callback that raises KeyboardInterrupt after a batch when Ctrl-C came.
std::shared_ptr<model::Callback<float>> signal_check();

void bind_errors(nb::module_& m);
void bind_run(nb::module_& m);
void bind_tensor(nb::module_& m);
void bind_graph(nb::module_& m);
void bind_model(nb::module_& m);

}  // namespace magmadnn::python
