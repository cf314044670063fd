// One function per part of the native module (module.cc calls them in order).
#pragma once

#include <pybind11/pybind11.h>

namespace tach::python {

void bind_model(pybind11::module_& m);    // Model, Tokenizer, Encoding, load_model
void bind_metrics(pybind11::module_& m);  // the metrics library's classes
void bind_cli(pybind11::module_& m);      // run_cli, command_help, command_options

}  // namespace tach::python
