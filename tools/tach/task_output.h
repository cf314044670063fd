// What the commands that run one head on a few inputs (tach fill-mask, tach answer) print and
// write the same way: the model, and the load their timing was taken under.
#pragma once

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "tach/model.h"
#include "tach/monitor.h"

namespace tach::cli {

// The model block of a --json document: spec, source, architecture, head, parameters, dtypes,
// device, notes.
nlohmann::json model_json(const ModelInfo& info);
// The load a timing was taken under, as every command's JSON writes it.
nlohmann::json cpu_load_json(const CpuLoad& load);
// "model ...", the source where it is not the spec itself, and each note.
void print_model_lines(std::ostream& out, const ModelInfo& info);
// "load ..." and, when contended, what that means for `timed` ("the time to answer").
void print_load_lines(std::ostream& out, const CpuLoad& load, const std::string& timed);

}  // namespace tach::cli
