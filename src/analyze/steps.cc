#include "analyze/steps.h"

#include <algorithm>
#include <cstdlib>

#include "analyze/intervals.h"

namespace tach::analyze {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

}  // namespace

std::vector<StepRow> step_breakdown(const Trace& t) {
  std::vector<Interval> loader, optimizer, backward, gpu;
  std::vector<StepRow> steps;
  for (const auto& e : t.cpu) {
    const Category category = t.category(e);
    if (category != Category::user_annotation && category != Category::cpu_op) continue;
    const std::string& name = t.name(e);
    if (category == Category::user_annotation) {
      if (starts_with(name, "ProfilerStep#")) {
        StepRow s;
        s.number = std::strtoll(name.c_str() + 13, nullptr, 10);
        s.start_ns = e.start_ns;
        s.wall_ns = e.end_ns - e.start_ns;
        steps.push_back(s);
      } else if (starts_with(name, "enumerate(DataLoader)#")) {
        loader.emplace_back(e.start_ns, e.end_ns);
      } else if (starts_with(name, "Optimizer.step#") || starts_with(name, "Optimizer.zero_grad#")) {
        optimizer.emplace_back(e.start_ns, e.end_ns);
      }
    } else if (starts_with(name, "autograd::engine::evaluate_function: ")) {
      backward.emplace_back(e.start_ns, e.end_ns);
    }
  }
  for (const auto& d : t.device)
    if (d.category != Category::gpu_user_annotation) gpu.emplace_back(d.start_ns, d.end_ns);
  loader = merge_intervals(std::move(loader));
  optimizer = merge_intervals(std::move(optimizer));
  backward = merge_intervals(std::move(backward));
  gpu = merge_intervals(std::move(gpu));
  std::sort(steps.begin(), steps.end(), [](const StepRow& a, const StepRow& b) { return a.start_ns < b.start_ns; });
  for (auto& s : steps) {
    const int64_t lo = s.start_ns, hi = s.start_ns + s.wall_ns;
    s.dataloader_ns = covered_within(loader, lo, hi);
    s.optimizer_ns = covered_within(optimizer, lo, hi);
    s.backward_ns = covered_within(backward, lo, hi);
    int64_t forward_start = lo, forward_end = hi;
    for (const auto& i : loader)
      if (i.first >= lo && i.first < hi) forward_start = std::max(forward_start, std::min(i.second, hi));
    for (const auto& i : backward)
      if (i.first >= forward_start && i.first < hi) {
        forward_end = i.first;
        break;
      }
    if (forward_end > forward_start)
      s.forward_ns = (forward_end - forward_start) - covered_within(optimizer, forward_start, forward_end);
    s.other_ns = std::max<int64_t>(0, s.wall_ns - s.dataloader_ns - s.optimizer_ns - s.backward_ns - s.forward_ns);
    if (!gpu.empty()) {
      s.gpu_busy_ns = covered_within(gpu, lo, hi);
      s.gpu_idle_ns = s.wall_ns - s.gpu_busy_ns;
    }
  }
  return steps;
}

}  // namespace tach::analyze
