// Any text given as a SLURM plan (RUN_DIR/slurm/plan-N.json) yields a plan or a tach::Error, and a
// plan read round-trips through its writer.
#include <cstddef>
#include <cstdint>
#include <string>

#include "bench/slurm_plan.h"
#include "tach/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const auto plan = tach::bench::plan_from_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    const auto again = tach::bench::plan_from_json(tach::bench::plan_to_json(plan), "round trip");
    if (again.tasks.size() != plan.tasks.size() || again.job_id != plan.job_id) __builtin_trap();
  } catch (const tach::Error&) {}
  return 0;
}
