#include "analyze/run_ceilings.h"

#include <string>

#include "tach/profile.h"

namespace tach::analyze {

namespace {

using json = nlohmann::ordered_json;

// The GPU names deviceProperties give, each once: "NVIDIA H100 80GB HBM3, ...".
std::string device_names(const json& device_properties) {
  std::string names;
  for (const auto& d : device_properties)
    if (d.contains("name") && d["name"].is_string() && names.find(d["name"].get<std::string>()) == std::string::npos)
      names += (names.empty() ? "" : ", ") + d["name"].get<std::string>();
  return names;
}

}  // namespace

RunCeilings choose_ceilings(bool any_gpu, const json& device_properties, json& notes) {
  RunCeilings c;
  if (any_gpu) {
    for (const auto& d : device_properties)
      if (!c.peak && d.contains("name") && d["name"].is_string()) c.peak = published_peak(d["name"].get<std::string>());
    if (c.peak) {
      c.roofline = {{"device", c.peak->device},
                    {"f32_flops", c.peak->f32},
                    {"tf32_flops", c.peak->tf32},
                    {"bf16_flops", c.peak->bf16},
                    {"source", c.peak->source},
                    {"memory_bytes_per_s", c.peak->bytes_per_s},
                    {"memory_source", c.peak->bandwidth_source}};
    } else {
      const std::string names = device_names(device_properties);
      notes.push_back("no published peak for " + (names.empty() ? std::string("this GPU") : names) +
                      " (deviceProperties' name; the table holds H200, H100, A100, L40S, L4, A10 and V100): no "
                      "roofline");
    }
  } else if (!device_properties.empty()) {
    // A GPU run whose trace kept no kernels: its ops' CPU times are the host launching them, which
    // neither the GPU's peaks nor this machine's judge.
    notes.push_back(
        "deviceProperties name a GPU but the traces hold no kernels: the ops' times are the host's "
        "launches, so no roofline");
  } else if (const auto m = cached_machine_ceilings()) {
    const std::string source = "tach info --ceilings: " + describe_ceilings_provenance(*m);
    c.peak = PeakFlops{m->cpu,
                       m->gemm_f32_flops,
                       m->gemm_f32_flops,
                       m->gemm_bf16_flops,
                       source,
                       m->memory_bytes_per_s,
                       "tach info --ceilings (STREAM triad): " + describe_ceilings_provenance(*m)};
    c.roofline = {{"device", m->cpu},
                  {"f32_flops", m->gemm_f32_flops},
                  {"bf16_flops", m->gemm_bf16_flops},
                  {"source", c.peak->source},
                  {"memory_bytes_per_s", c.peak->bytes_per_s},
                  {"memory_source", c.peak->bandwidth_source}};
  } else {
    notes.push_back("no measured CPU ceilings on this machine (tach info --ceilings measures them): no roofline");
  }
  return c;
}

json peak_fraction(const std::optional<PeakFlops>& peak, const OpRow& r) {
  const int64_t time_ns = r.device_ns > 0 ? r.device_ns : r.cpu_ns;
  if (!peak || r.flops <= 0 || time_ns <= 0) return nullptr;
  const double rate = double(r.flops) / (double(time_ns) * 1e-9);
  const double ceiling = peak_at(*peak, r.precision);
  return ceiling > 0 ? json(rate / ceiling) : json(nullptr);
}

}  // namespace tach::analyze
