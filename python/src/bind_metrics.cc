// The metrics library's classes as they are in C++ (tach/metrics.h, tach/memory.h,
// tach/comprehensive_profiler.h). python/tach/metrics.py puts the names and JSON layouts that
// training scripts use on top of them.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings.h"
#include "tach/comprehensive_profiler.h"
#include "tach/memory.h"
#include "tach/metrics.h"

namespace py = pybind11;

namespace tach::python {

namespace {

py::dict stats_dict(const SeriesStats& s) {
  py::dict d;
  d["count"] = s.count, d["mean"] = s.mean, d["std"] = s.std, d["min"] = s.min, d["max"] = s.max;
  d["p50"] = s.p50, d["p95"] = s.p95, d["p99"] = s.p99;
  return d;
}

// None: the GPU where one is usable, else the CPU (python/tach/metrics.py says which).
Device device_of(const py::object& device) {
  if (device.is_none()) return default_metrics_device();
  if (py::isinstance<py::int_>(device)) return Device::cuda(device.cast<int>());
  return parse_device(device.cast<std::string>());
}

}  // namespace

void bind_metrics(py::module_& m) {
  m.def("_device_name", [](const py::object& d) { return device_of(d).str(); });
  m.def("_default_metrics_device", [] {
    std::string why;
    const Device d = default_metrics_device(&why);
    return py::make_tuple(d.str(), why);
  });

  py::class_<Timer>(m, "_Timer")
      .def(py::init([](const py::object& d) { return std::make_unique<Timer>(device_of(d)); }),
           py::arg("device") = py::none())
      .def("start", &Timer::start)
      .def("stop", &Timer::stop)
      .def("stats", [](const Timer& t, const std::string& n) { return stats_dict(t.stats(n)); })
      .def("names", [](const Timer& t) {
        std::vector<std::string> names;
        for (const auto& [k, v] : t.summary()) names.push_back(k);
        return names;
      });

  py::class_<ThroughputTracker>(m, "_ThroughputTracker")
      .def(py::init<size_t, double>(), py::arg("window") = 100, py::arg("ema_alpha") = 0.1)
      .def("update", &ThroughputTracker::update, py::arg("samples"), py::arg("tokens") = 0)
      .def("update_at", &ThroughputTracker::update_at)
      .def("rates", [](const ThroughputTracker& t) {
        const auto r = t.rates();
        py::dict d;
        d["samples_per_sec"] = r.samples_per_s, d["tokens_per_sec"] = r.tokens_per_s;
        d["ema_samples_per_sec"] = r.ema_samples_per_s, d["ema_tokens_per_sec"] = r.ema_tokens_per_s;
        d["updates"] = r.updates, d["total_samples"] = r.total_samples, d["total_tokens"] = r.total_tokens;
        return d;
      });

  py::class_<MetricTracker>(m, "_MetricTracker")
      .def(py::init([](bool streaming, double accuracy) {
             return std::make_unique<MetricTracker>(
                 streaming ? MetricTracker::Mode::streaming : MetricTracker::Mode::exact, accuracy);
           }),
           py::arg("streaming") = false, py::arg("accuracy") = 0.01)
      .def("update", &MetricTracker::update, py::arg("name"), py::arg("value"), py::arg("step") = -1)
      .def("update_batch", &MetricTracker::update_batch, py::arg("values"), py::arg("step") = -1)
      .def("stats", [](const MetricTracker& t, const std::string& n) { return stats_dict(t.stats(n)); })
      .def("window_stats",
           [](const MetricTracker& t, const std::string& n, size_t w) { return stats_dict(t.window_stats(n, w)); })
      .def("rejected", &MetricTracker::rejected)
      .def("names", &MetricTracker::names)
      .def("history", &MetricTracker::history);

  py::class_<ScoreDistributionTracker>(m, "_ScoreDistributionTracker")
      .def(py::init<>())
      .def("update", &ScoreDistributionTracker::update)
      .def("summary", [](const ScoreDistributionTracker& t) {
        const auto s = t.summary();
        py::dict d, counts;
        d["total"] = s.total, d["valid"] = s.valid, d["invalid"] = s.invalid, d["invalid_rate"] = s.invalid_rate;
        d["mean"] = s.mean;
        for (const auto& [v, n] : s.counts) counts[py::float_(v)] = n;
        d["counts"] = counts;
        return d;
      });

  py::class_<GrpoTracker>(m, "_GrpoTracker")
      .def(py::init<>())
      .def("log_step", &GrpoTracker::log_step, py::arg("step"), py::arg("policy_loss"), py::arg("mean_reward"),
           py::arg("kl"), py::arg("reward_components") = std::map<std::string, double>{})
      .def("log_group", &GrpoTracker::log_group)
      .def("group_stats",
           [](const GrpoTracker& t) {
             const auto g = t.group_stats();
             py::dict d;
             d["groups"] = g.groups, d["mean_reward"] = g.mean_reward, d["mean_group_std"] = g.mean_group_std;
             d["zero_variance_fraction"] = g.zero_variance_fraction;
             d["mean_best_minus_worst"] = g.mean_best_minus_worst;
             d["mean_reward_by_rank"] = g.mean_reward_by_rank;
             return d;
           })
      .def("step_stats", [](const GrpoTracker& t, const std::string& n) { return stats_dict(t.steps().stats(n)); })
      .def("step_names", [](const GrpoTracker& t) { return t.steps().names(); })
      .def("step_history", [](const GrpoTracker& t, const std::string& n) { return t.steps().history(n); });

  py::class_<TrainingLogger>(m, "_TrainingLogger")
      .def(py::init<std::string, bool>(), py::arg("jsonl_path") = "", py::arg("append") = false)
      .def("log_step", &TrainingLogger::log_step, py::arg("step"), py::arg("metrics"),
           py::arg("scores") = std::vector<std::optional<double>>{})
      .def("save_checkpoint_metrics", &TrainingLogger::save_checkpoint_metrics)
      .def("export_all", py::overload_cast<>(&TrainingLogger::export_all, py::const_));

  py::class_<MemoryProfiler>(m, "_MemoryProfiler")
      .def(py::init([](const py::object& d) { return std::make_unique<MemoryProfiler>(device_of(d)); }),
           py::arg("device") = py::none())
      .def("measure",
           [](MemoryProfiler& p, const std::string& tag) {
             const MemorySnapshot s = p.measure(tag);
             py::dict d;
             d["tag"] = s.tag, d["rss_bytes"] = s.rss_bytes, d["peak_rss_bytes"] = s.peak_rss_bytes;
             d["device_used_bytes"] = s.device_used_bytes;
             return d;
           })
      .def("set_baseline", &MemoryProfiler::set_baseline)
      .def("detect_process_leak", [](MemoryProfiler& p, int64_t threshold) {
        const auto l = p.detect_process_leak(threshold);
        py::dict d;
        d["leak"] = l.leak, d["growth_bytes"] = l.growth_bytes, d["growing"] = l.growing;
        d["explanation"] = l.explanation;
        return d;
      });

  py::class_<ComprehensiveProfiler>(m, "_ComprehensiveProfiler")
      .def(py::init([](const py::object& d, size_t window) {
             return std::make_unique<ComprehensiveProfiler>(device_of(d), window);
           }),
           py::arg("device") = py::none(), py::arg("window") = 100)
      .def("start_iteration", &ComprehensiveProfiler::start_iteration)
      .def("end_iteration", &ComprehensiveProfiler::end_iteration, py::arg("num_samples"), py::arg("num_tokens") = 0)
      .def("set_baseline", &ComprehensiveProfiler::set_baseline)
      .def("iterations", &ComprehensiveProfiler::iterations)
      .def("to_json", &ComprehensiveProfiler::to_json)
      .def("export_to_json", &ComprehensiveProfiler::export_to_json);
}

}  // namespace tach::python
