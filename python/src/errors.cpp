// Every exception class of docs/errors.md as a Python exception under one
// base, magmadnn.Error, each also deriving from the built-in exception a
// Python caller would catch for it (ValueError, IndexError, OSError,
// RuntimeError), with the C++ message unchanged.
#include <Python.h>
#include <nanobind/stl/string.h>

#include <exception>
#include <string>

#include "common.h"
#include "magmadnn/run/spec.h"

namespace magmadnn::python {
namespace {

struct PyErrors {
  PyObject* error = nullptr;
  PyObject* shape = nullptr;
  PyObject* index = nullptr;
  PyObject* value = nullptr;
  PyObject* config = nullptr;
  PyObject* device = nullptr;
  PyObject* not_supported = nullptr;
  PyObject* io = nullptr;
  PyObject* comm = nullptr;
};
PyErrors g_errors;  // the classes live as long as the module (held by it)

PyObject* make_class(nb::module_& m, const char* name, const char* doc, std::initializer_list<PyObject*> bases) {
  nb::tuple b = nb::steal<nb::tuple>(PyTuple_New(static_cast<Py_ssize_t>(bases.size())));
  Py_ssize_t i = 0;
  for (PyObject* base : bases) {
    Py_INCREF(base);
    PyTuple_SET_ITEM(b.ptr(), i++, base);
  }
  const std::string qualified = std::string("magmadnn.") + name;
  PyObject* cls = PyErr_NewExceptionWithDoc(qualified.c_str(), doc, b.ptr(), nullptr);
  if (!cls) throw nb::python_error();
  m.attr(name) = nb::steal(cls);  // the module holds the reference
  return cls;
}

// The most derived C++ class first.
void translate(const std::exception_ptr& p, void*) {
  try {
    std::rethrow_exception(p);
  } catch (const run::ConfigError& e) {
    PyErr_SetString(g_errors.config, e.what());
  } catch (const ShapeError& e) {
    PyErr_SetString(g_errors.shape, e.what());
  } catch (const IndexError& e) {
    PyErr_SetString(g_errors.index, e.what());
  } catch (const ValueError& e) {
    PyErr_SetString(g_errors.value, e.what());
  } catch (const DeviceError& e) {
    PyErr_SetString(g_errors.device, e.what());
  } catch (const NotSupportedError& e) {
    PyErr_SetString(g_errors.not_supported, e.what());
  } catch (const IOError& e) {
    PyErr_SetString(g_errors.io, e.what());
  } catch (const CommError& e) {
    PyErr_SetString(g_errors.comm, e.what());
  } catch (const Error& e) {
    PyErr_SetString(g_errors.error, e.what());
  }
}

// For the tests: throws the C++ class named `kind` with `message`, so that
// every class's mapping is checked, including those (CommError) that a
// single process cannot provoke.
void raise_for_test(const std::string& kind, const std::string& message) {
  if (kind == "Error") throw Error(message);
  if (kind == "ShapeError") throw ShapeError(message);
  if (kind == "IndexError") throw IndexError(message);
  if (kind == "ValueError") throw ValueError(message);
  if (kind == "ConfigError") throw run::ConfigError("epochs", message);  // "epochs: <message>"
  if (kind == "DeviceError") throw DeviceError(message);
  if (kind == "NotSupportedError") throw NotSupportedError(message);
  if (kind == "IOError") throw IOError(message);
  if (kind == "CommError") throw CommError(message);
  MAGMADNN_THROW(ValueError, "_raise_for_test: unknown kind '" << kind << "'");
}

}  // namespace

void bind_errors(nb::module_& m) {
  PyErrors& e = g_errors;
  e.error = make_class(m, "Error", "Base of every magmadnn exception (C++ magmadnn::Error).", {PyExc_Exception});
  e.shape = make_class(m, "ShapeError", "Tensor shapes that do not fit together.", {e.error, PyExc_ValueError});
  e.index = make_class(m, "IndexError", "An index outside a tensor or buffer.", {e.error, PyExc_IndexError});
  e.value = make_class(m, "ValueError", "An argument with a wrong value (wrong dtype, shape, name or range).",
                       {e.error, PyExc_ValueError});
  e.config = make_class(m, "ConfigError",
                        "A mistake in a run specification; the message starts with the JSON path.", {e.value});
  e.device = make_class(m, "DeviceError", "A missing or failed device (DEVICE memory without a GPU, CUDA errors).",
                        {e.error, PyExc_RuntimeError});
  e.not_supported = make_class(m, "NotSupportedError", "An operation not in this build or on this backend.",
                               {e.error, PyExc_NotImplementedError});
  e.io = make_class(m, "IOError", "A file that cannot be read or written, or whose content is malformed.",
                    {e.error, PyExc_OSError});
  e.comm = make_class(m, "CommError", "A failure of the communication layer (MPI, a dead rank, a mismatch).",
                      {e.error, PyExc_RuntimeError});
  nb::register_exception_translator(translate);
  m.def("_raise_for_test", &raise_for_test, nb::arg("kind"), nb::arg("message"),
        "Throws the C++ exception class `kind` (tests of the exception mapping).");
}

}  // namespace magmadnn::python
