// The engines tach bench measures and how their workers are started: tach's own (in process) and
// the ones that run in a Python worker (`PYTHON -m tach.engines --engine NAME`).
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engines/engine_protocol.h"

namespace tach::engines {

struct EngineName {
  std::string name;
  bool trains;       // tach bench --train can time its steps
  std::string what;  // a line for --help and docs
};

// tach, torch, torch-compile, onnxruntime, python-matmul (in that order).
const std::vector<EngineName>& engine_names();
// "tach, torch, torch-compile, onnxruntime, python-matmul"
std::string engine_list();
bool is_worker_engine(const std::string& name);  // every engine but tach
// Usage errors: an unknown name (naming the known ones), a name given twice, an empty list; for a
// training sweep, an engine that cannot train.
void check_engines(const std::vector<std::string>& engines, bool train);

// The directory to prepend to the worker's PYTHONPATH (the one that holds tach/engines/):
// $TACH_PYTHON_PACKAGE (that directory, or the tach package in it); the build tree's or the
// source tree's python/ beside tach's executable; an installed site-packages beside it. "" when
// none has it: the interpreter's own path must then find tach.engines (a pip install of tach).
std::string python_package_dir();

// What starts a worker: PYTHON -m tach.engines --engine NAME, with PYTHONPATH.
// python: --python's value ("" is python3). log: the stderr log file.
EngineLaunch worker_launch(const std::string& engine, const std::string& python, const std::string& log);

}  // namespace tach::engines
