// The recorder behind tach/profile.h: a core::TraceSink installed while a step is in a warmup
// or active window, a capped event buffer, step boundaries with memory samples, and the
// post-processing that gives each event its module path and self time.
#include <algorithm>
#include <mutex>
#include <sstream>

#include "core/trace.h"
#include "profile/gpu_attribution.h"
#if TACH_HAS_CUDA
#include "cuda/cupti_activity.h"
#endif
#include "tach/error.h"
#include "tach/monitor.h"
#include "tach/profile.h"

namespace tach {

ProfileSchedule::Phase ProfileSchedule::phase(int64_t step) const {
  if (step < skip_first) return Phase::skip;
  const int64_t cycle = int64_t(wait) + warmup + active;
  if (cycle <= 0) return Phase::done;
  const int64_t s = step - skip_first;
  if (repeat > 0 && s >= cycle * repeat) return Phase::done;
  const int64_t in = s % cycle;
  if (in < wait) return Phase::wait;
  if (in < int64_t(wait) + warmup) return Phase::warmup;
  return Phase::active;
}

std::string ProfileSchedule::describe() const {
  std::ostringstream s;
  s << "skip_first " << skip_first << ", then " << (repeat > 0 ? std::to_string(repeat) + " x " : "repeated ")
    << "(wait " << wait << ", warmup " << warmup << ", active " << active << ") steps";
  return s.str();
}

struct Profiler::Impl final : core::TraceSink {
  ProfilerOptions options;
  mutable std::mutex mu;
  std::vector<core::SpanRecord> records;  // this step's, while recording
  std::vector<ProfileEvent> kept;
  std::vector<StepSample> steps;
  int64_t dropped = 0;
  int64_t origin_ns = 0, step_start_ns = 0;
  int64_t step_index = 0;
  bool started = false, installed = false;
  RaplEnergy rapl;  // energy counter tracks, where the machine has RAPL
  std::vector<GpuActivityEvent> gpu_activity;
  std::string gpu_note;
#if TACH_HAS_CUDA
  cuda::ActivityCollector cupti;
  bool cupti_running = false;
#endif

  void record(core::SpanRecord&& span) override {
    std::lock_guard<std::mutex> lock(mu);
    if (kept.size() + records.size() >= options.max_events) {
      ++dropped;
      return;
    }
    records.push_back(std::move(span));
  }

  ProfileSchedule::Phase phase() const { return options.schedule.phase(step_index); }

  void install_for_current_step() {
    const auto p = phase();
    const bool want = p == ProfileSchedule::Phase::warmup || p == ProfileSchedule::Phase::active;
    if (want && !installed) core::set_trace_sink(this);
    if (!want && installed) core::set_trace_sink(nullptr);
    installed = want;
  }

  void end_step() {
    const int64_t now = core::steady_ns();
    StepSample s;
    s.step = step_index;
    s.active = phase() == ProfileSchedule::Phase::active;
    s.start_ns = step_start_ns;
    s.end_ns = now;
    if (options.memory_logging && options.memory_log_steps > 0 && step_index % options.memory_log_steps == 0) {
      const MemoryStats m = memory_stats(options.memory_device);
      for (int c = 0; c < kMemoryCategoryCount; ++c) s.allocator_bytes[size_t(c)] = m.by_category[size_t(c)].current;
      s.allocator_total_bytes = m.total.current;
      s.rss_bytes = read_process_memory().rss_bytes;
      if (rapl.available()) s.cpu_energy_j = rapl.joules();
    }
    std::lock_guard<std::mutex> lock(mu);
    steps.push_back(s);
    if (s.active) {
      for (auto& r : records) {
        ProfileEvent e;
        e.kind = r.kind == core::SpanKind::op       ? EventKind::op
                 : r.kind == core::SpanKind::module ? EventKind::module
                                                    : EventKind::scope;
        e.name = std::move(r.name);
        e.detail = std::move(r.detail);
        e.thread = r.thread;
        e.depth = r.depth;
        e.step = step_index;
        e.start_ns = r.start_ns;
        e.end_ns = r.end_ns;
        e.flops = r.flops;
        e.bytes = r.bytes;
        e.allocated_bytes = r.allocated_bytes;
        e.freed_bytes = r.freed_bytes;
        kept.push_back(std::move(e));
      }
    }
    records.clear();  // warmup steps record and discard
    step_start_ns = now;
  }
};

Profiler::Profiler(ProfilerOptions options) : impl_(std::make_unique<Impl>()) {
  const auto& s = options.schedule;
  check(s.skip_first >= 0 && s.wait >= 0 && s.warmup >= 0 && s.active >= 1 && s.repeat >= 0,
        "profiler schedule: skip_first, wait, warmup and repeat must be >= 0 and active >= 1");
  check(options.memory_log_steps >= 1, "profiler: memory_log_steps must be >= 1");
  impl_->options = options;
}

Profiler::~Profiler() {
  if (impl_->installed) core::set_trace_sink(nullptr);
}

void Profiler::start() {
  check(!core::tracing(), "another profiler is recording: one at a time");
  impl_->origin_ns = impl_->step_start_ns = core::steady_ns();
  impl_->started = true;
  impl_->gpu_activity.clear();
  impl_->gpu_note.clear();
#if TACH_HAS_CUDA
  if (impl_->options.gpu_activity && cuda_available()) {
    try {
      impl_->cupti.start();
      impl_->cupti_running = true;
    } catch (const Error& e) {  // another CUPTI client (Nsight) holds it: profile without
      impl_->gpu_note = std::string("no GPU activity: ") + e.what();
    }
  }
#endif
  impl_->install_for_current_step();
}

void Profiler::step() {
  check(impl_->started, "Profiler::step() before start()");
  impl_->end_step();
  ++impl_->step_index;
  impl_->install_for_current_step();
}

void Profiler::stop() {
  if (!impl_->started) return;
  if (impl_->installed) core::set_trace_sink(nullptr);
  impl_->installed = false;
  impl_->started = false;
#if TACH_HAS_CUDA
  if (impl_->cupti_running) {
    impl_->cupti_running = false;
    int64_t dropped = 0;
    for (cuda::GpuActivity& a : impl_->cupti.stop(&dropped)) {
      GpuActivityEvent g;
      g.name = std::move(a.name), g.kind = std::move(a.kind);
      g.device = a.device, g.stream = a.stream, g.start_ns = a.start_ns, g.end_ns = a.end_ns;
      g.launch_ns = a.launch_ns, g.bytes = a.bytes;
      impl_->gpu_activity.push_back(std::move(g));
    }
    if (dropped > 0)
      impl_->gpu_note = "CUPTI dropped " + std::to_string(dropped) + " GPU activity records (its buffers were full)";
  }
#endif
}

bool Profiler::recording() const { return impl_->installed; }

ProfileData Profiler::data() const {
  ProfileData d;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    d.events = impl_->kept;
    d.steps = impl_->steps;
    d.dropped_events = impl_->dropped;
  }
  d.origin_ns = impl_->origin_ns;
  d.schedule = impl_->options.schedule;
  // By thread, then start time, outer spans first on ties: a stack walk gives paths and self time.
  std::stable_sort(d.events.begin(), d.events.end(), [](const ProfileEvent& a, const ProfileEvent& b) {
    if (a.thread != b.thread) return a.thread < b.thread;
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.depth < b.depth;
  });
  std::vector<size_t> stack;
  uint32_t thread = 0;
  for (size_t i = 0; i < d.events.size(); ++i) {
    ProfileEvent& e = d.events[i];
    if (e.thread != thread) stack.clear(), thread = e.thread;
    while (!stack.empty() && d.events[stack.back()].end_ns <= e.start_ns) stack.pop_back();
    std::string path, frames;
    for (size_t j : stack) {
      if (d.events[j].kind == EventKind::op) continue;
      path += (path.empty() ? "" : ".") + d.events[j].name;
      frames += (frames.empty() ? "" : ";") + d.events[j].name;
    }
    e.path = path;
    e.stack = frames;
    e.self_ns = double(e.duration_ns());
    if (!stack.empty()) d.events[stack.back()].self_ns -= double(e.duration_ns());
    stack.push_back(i);
  }
  std::stable_sort(d.events.begin(), d.events.end(),
                   [](const ProfileEvent& a, const ProfileEvent& b) { return a.start_ns < b.start_ns; });
  attribute_gpu_activity(d, impl_->gpu_activity);
  d.gpu_activity_note = impl_->gpu_note;
  return d;
}

struct ProfileScope::State {
  core::Span span;
  explicit State(const char* name) : span(core::SpanKind::scope, name) {}
};

ProfileScope::ProfileScope(const char* name) {
  if (core::tracing()) state_ = std::make_unique<State>(name);
}
ProfileScope::~ProfileScope() = default;

}  // namespace tach

namespace tach {

double profiler_ns_per_event() {
  ProfilerOptions o;
  o.schedule = {0, 0, 0, 1, 1};
  o.memory_logging = false;
  std::vector<double> per_event;
  for (int batch = 0; batch < 7; ++batch) {
    Profiler p(o);
    p.start();
    constexpr int kSpans = 20000;
    const int64_t t0 = core::steady_ns();
    for (int i = 0; i < kSpans; ++i) {
      core::Span span(core::SpanKind::op, "probe");
      if (span.active()) {
        span.set_cost(1, 1);
        span.set_detail(core::concat("[", i, ", 768] f32"));  // as ops do: a shape string per span
      }
    }
    per_event.push_back(double(core::steady_ns() - t0) / kSpans);
    p.stop();
  }
  std::sort(per_event.begin(), per_event.end());
  return per_event[per_event.size() / 2];
}

}  // namespace tach
