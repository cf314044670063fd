#include "task_output.h"

#include "format.h"
#include "tach/parameter_count.h"

namespace tach::cli {

nlohmann::json model_json(const ModelInfo& info) {
  return {{"spec", info.spec},
          {"source", info.source},
          {"architecture", info.architecture},
          {"head", head_name(info.head)},
          {"parameters", info.parameters},
          {"weights_dtype", info.weights_dtype},
          {"compute_dtype", std::string(dtype_name(info.compute))},
          {"gemm_tf32", info.gemm_tf32},
          {"device", info.device.str()},
          {"notes", info.notes}};
}

nlohmann::json cpu_load_json(const CpuLoad& load) {
  return {{"measured", load.measured},
          {"other_cores_mean", load.other_cores_mean},
          {"other_cores_max", load.other_cores_max},
          {"load_average_1m", load.load_average_1m},
          {"contended", load.contended}};
}

void print_model_lines(std::ostream& out, const ModelInfo& info) {
  out << "model       " << info.spec << ": " << info.architecture << ", " << parameter_count_text(info.parameters)
      << " parameters, weights " << info.weights_dtype << ", compute " << dtype_name(info.compute)
      << (info.gemm_tf32 ? " (GEMMs on TF32 tensor cores)" : "") << "\n";
  if (info.source != info.spec) out << "            " << info.source << "\n";  // a directory is its own source
  for (const auto& n : info.notes) out << "note        " << n << "\n";
}

void print_load_lines(std::ostream& out, const CpuLoad& load, const std::string& timed) {
  out << "load        " << describe_cpu_load(load);
  if (load.contended)
    out << "\n            CONTENDED: " << timed
        << " is the shared machine's, not the model's (fewer threads with -t, or a quieter machine)";
  out << "\n";
}

}  // namespace tach::cli
