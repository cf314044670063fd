// profile.json: the machine-readable summary of one profile, beside summary.txt's words.
#include <nlohmann/json.hpp>

#include "tach/profile.h"

namespace tach {

std::string profile_summary_json(const ProfileData& data, const MachineCeilings& c) {
  using json = nlohmann::json;
  const StepAccounting acc = step_accounting(data);
  const LeakVerdict leak = detect_leak(data);
  json j;
  j["schema"] = "tach.profile/1";
  j["ceilings"] = {{"gemm_f32_flops_per_s", c.gemm_f32_flops},
                   {"gemm_bf16_flops_per_s", c.gemm_bf16_flops},
                   {"gemm_int8_ops_per_s", c.gemm_int8_ops},
                   {"memory_bytes_per_s", c.memory_bytes_per_s},
                   {"method", c.method},
                   {"provenance", describe_ceilings_provenance(c)},
                   {"measured_at", c.measured_at},
                   {"from_cache", c.from_cache},
                   {"under_load", c.under_load},
                   {"other_cores", c.other_cores},
                   {"load_average", c.load_average}};
  j["step_ms"] = {{"wall", acc.step_ns * 1e-6},
                  {"ops", acc.ops_ns * 1e-6},
                  {"in_modules_between_ops", acc.inside_modules_ns * 1e-6},
                  {"outside_model", acc.outside_ns * 1e-6},
                  {"method", "medians over the active steps, wall clock"}};
  j["bottlenecks"] = bottlenecks(data, c, 3);
  j["memory"] = {{"leak", leak.leak},
                 {"explanation", leak.explanation},
                 {"growing_categories", leak.growing_categories},
                 {"growing_scopes", leak.growing_scopes}};
  j["ops"] = json::array();
  for (const auto& r : op_table(data, "op", "self", c))
    j["ops"].push_back({{"op", r.key},
                        {"calls", r.calls},
                        {"self_ms", r.self_ns * 1e-6},
                        {"flops", r.flops},
                        {"bytes", r.bytes},
                        {"verdict", bound_name(r.verdict.bound)},
                        {"achieved_fraction", r.verdict.achieved_fraction}});
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace tach
