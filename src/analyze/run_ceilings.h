// The ceilings a run's ops are judged against: a GPU trace's against the published peak of the GPU
// its deviceProperties name, a CPU trace's against this machine's cached GEMM and STREAM ceilings
// (tach info --ceilings), or none, with a note saying why.
#pragma once

#include <optional>

#include <nlohmann/json.hpp>

#include "analyze/op_averages.h"
#include "analyze/roofline.h"

namespace tach::analyze {

struct RunCeilings {
  std::optional<PeakFlops> peak;
  // analysis.json's roofline (device, peaks, sources, memory bandwidth; ops[] added by the
  // caller), or null where there is no ceiling.
  nlohmann::ordered_json roofline = nullptr;
};

// notes: a string appended where there is no roofline, saying why.
RunCeilings choose_ceilings(bool any_gpu, const nlohmann::ordered_json& device_properties,
                            nlohmann::ordered_json& notes);

// The op's FLOP/s as a share of the peak at its precision (its device time where it launched
// kernels, else its CPU time), or null without FLOPs, time or a peak.
nlohmann::ordered_json peak_fraction(const std::optional<PeakFlops>& peak, const OpRow& r);

}  // namespace tach::analyze
