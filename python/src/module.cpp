// magmadnn._magmadnn: the extension module behind the Python package
// magmadnn (python/magmadnn/__init__.py re-exports it). docs/python.md.
#include "common.h"

NB_MODULE(_magmadnn, m) {
  m.doc() = "magmadnn's C++ library, bound with nanobind (docs/python.md)";
  magmadnn::python::bind_errors(m);
  magmadnn::python::bind_tensor(m);
  magmadnn::python::bind_graph(m);
  magmadnn::python::bind_model(m);
  magmadnn::python::bind_run(m);
}
