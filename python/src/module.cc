// The `tach` Python module's native half (_tach): models, tokenizers, the metrics library and the
// command line interface, over the same library the tach executable links. python/tach/ holds the
// Python half (keyword arguments to flags, run directories to records).
#include <pybind11/pybind11.h>

#include "bindings.h"
#include "tach/error.h"

namespace py = pybind11;

PYBIND11_MODULE(_tach, m) {
  m.doc() = "tach's native module: use `import tach`.";
  // tach::Error arrives as tach.Error with the same message; Stopped (Ctrl-C) as KeyboardInterrupt.
  static py::exception<tach::Error> error(m, "Error", PyExc_RuntimeError);
  // pybind11 takes a plain void(*)(std::exception_ptr), so the pointer is taken by value.
  py::register_exception_translator([](std::exception_ptr p) {  // NOLINT(performance-unnecessary-value-param)
    try {
      if (p) std::rethrow_exception(p);
    } catch (const tach::Stopped& e) {
      PyErr_SetString(PyExc_KeyboardInterrupt, e.what());
    } catch (const tach::Error& e) { error(e.what()); }
  });
  tach::python::bind_model(m);
  tach::python::bind_metrics(m);
  tach::python::bind_cli(m);
}
