// tach train --method full,lora,qlora --exec eager,fused: one run per combination, then the
// comparison table (summary.json, comparison.csv) beside them.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/runtime.h"
#include "tach/train.h"
#include "train/run_names.h"

namespace tach {

namespace {

namespace fs = std::filesystem;

std::string csv_number(double v) {
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

// The last epoch that was evaluated: its accuracy, or null.
nlohmann::json dev_accuracy(const TrainResult& r) {
  for (auto it = r.epochs.rbegin(); it != r.epochs.rend(); ++it)
    if (it->evaluated && it->eval_accuracy >= 0) return it->eval_accuracy;
  return nullptr;
}

}  // namespace

TrainComparison run_training_comparison(const TrainOptions& base, const std::vector<std::string>& methods,
                                        const std::vector<std::string>& execs, const TrainObserver& observer) {
  check(!methods.empty() && !execs.empty(), "a comparison needs at least one method and one exec mode");
  check(base.resume.empty(),
        "--resume continues one run: resume each run of a comparison on its own "
        "(tach train --resume DIR/<method>-<exec>)");
  check(base.save_dir.empty(), "--save names one model directory; a comparison saves each run's in its own directory");
  for (const auto& m : methods)
    check(m == "full" || m == "lora" || m == "qlora", "--method: '" + m + "' is not full, lora or qlora");
  for (const auto& e : execs) check(e == "eager" || e == "fused", "--exec: '" + e + "' is not eager or fused");
  TrainComparison out;
  out.dir = (fs::path(base.runs_dir) /
             (base.run_id.empty() ? "compare-" + train::utc_stamp() + "-" + train::model_name_for_runs(base.model)
                                  : base.run_id))
                .string();
  check(!fs::exists(out.dir), out.dir + " exists already: pick another --run-id");
  fs::create_directories(out.dir);
  announce_run_dir(out.dir);  // run.log for the whole comparison, not in its first run
  for (const auto& method : methods)
    for (const auto& exec : execs) {
      TrainOptions o = base;
      o.method = method;
      o.exec = exec;
      o.runs_dir = out.dir;
      o.run_id = method + "-" + exec;
      if (observer.on_note)
        observer.on_note("comparison: " + method + " × " + exec + " -> " + out.dir + "/" + o.run_id);
      TrainComparisonRow row{method, exec, out.dir + "/" + o.run_id, run_training(o, observer)};
      out.rows.push_back(std::move(row));
    }

  nlohmann::json rows = nlohmann::json::array();
  std::ostringstream csv;
  csv << "method,exec,trainable_parameters,total_parameters,step_ms_median,step_ms_p90,tokens_per_s,samples_per_s,"
         "epoch_seconds,dev_accuracy,peak_bytes";
  const auto& cats = out.rows.front().result.peak_bytes_by_category;
  for (const auto& [c, v] : cats) csv << ",peak_" << c << "_bytes";
  csv << ",run_dir\n";
  for (const auto& r : out.rows) {
    const TrainResult& t = r.result;
    const double epoch_s = t.epochs.empty() ? 0 : t.epochs.back().seconds;
    rows.push_back({{"method", r.method},
                    {"exec", r.exec},
                    {"run_dir", r.run_dir},
                    {"trainable_parameters", t.trainable_parameters},
                    {"total_parameters", t.total_parameters},
                    {"step_ms_median", t.step_ms_median},
                    {"step_ms_p90", t.step_ms_p90},
                    {"tokens_per_s", t.tokens_per_s_median},
                    {"samples_per_s", t.samples_per_s_median},
                    {"epoch_seconds", epoch_s},
                    {"dev_accuracy", dev_accuracy(t)},
                    {"peak_bytes", t.peak_bytes},
                    {"peak_bytes_by_category", t.peak_bytes_by_category},
                    {"diverged", t.diverged}});
    const nlohmann::json acc = dev_accuracy(t);
    csv << r.method << "," << r.exec << "," << t.trainable_parameters << "," << t.total_parameters << ","
        << csv_number(t.step_ms_median) << "," << csv_number(t.step_ms_p90) << "," << csv_number(t.tokens_per_s_median)
        << "," << csv_number(t.samples_per_s_median) << "," << csv_number(epoch_s) << ","
        << (acc.is_null() ? "" : csv_number(acc.get<double>())) << "," << t.peak_bytes;
    for (const auto& [c, v] : cats) {
      auto it = t.peak_bytes_by_category.find(c);
      csv << "," << (it == t.peak_bytes_by_category.end() ? 0 : it->second);
    }
    csv << "," << r.run_dir << "\n";
  }
  const nlohmann::json summary = {
      {"schema", "tach.train_comparison/1"},
      {"model", base.model},
      {"methods", methods},
      {"execs", execs},
      {"units",
       {{"step_ms",
         "milliseconds per optimizer step, wall time, steady clock: median and p90 over each run's "
         "steps"},
        {"tokens_per_s", "real (unpadded) tokens per second, median over steps"},
        {"samples_per_s", "examples per second, median over steps"},
        {"epoch_seconds", "the last epoch's wall time"},
        {"peak_bytes", "tach's allocator, exact bytes, from the first step to the end of the run"},
        {"dev_accuracy", "the last evaluated epoch's accuracy on --eval-dataset (null without one)"}}},
      {"rows", rows}};
  model::write_file_atomically(out.dir + "/summary.json", summary.dump(2) + "\n");
  model::write_file_atomically(out.dir + "/comparison.csv", csv.str());
  return out;
}

}  // namespace tach
