// accuracy.json: each accuracy pass's result, a sequence classifier's (accuracy, macro-F1, per
// class, confusion) or a per-token head's (its task's metrics by name), with the timings and load
// both kinds record.
#include <nlohmann/json.hpp>
#include "bench/bench_internal.h"
#include "bench/task_passes.h"
#include "tach/bench.h"
#include "tach/error.h"

namespace tach {

namespace {

// What every pass records beside its scores.
nlohmann::json common_fields(const AccuracyResult& r) {
  nlohmann::json j = {{"device", r.device},
                      {"dtype", r.dtype},
                      {"examples", r.examples},
                      {"tokenize_s", r.tokenize_s},
                      {"model_s", r.model_s},
                      {"total_s", r.total_s},
                      {"samples_per_s", r.samples_per_s},
                      {"warmup_batches", r.warmup_batches}};
  if (r.load.measured) j["load"] = bench::load_json(r.load);
  return j;
}

void read_common_fields(const nlohmann::json& a, AccuracyResult& r) {
  r.device = a.value("device", "");  // absent before passes ran per dtype: the sweep's first
  r.dtype = a.value("dtype", "");
  r.examples = a.at("examples");
  r.tokenize_s = a.at("tokenize_s");
  r.model_s = a.at("model_s");
  r.total_s = a.at("total_s");
  r.samples_per_s = a.at("samples_per_s");
  r.warmup_batches = a.value("warmup_batches", int64_t{0});         // absent before passes were warmed up
  if (a.contains("load")) r.load = bench::load_from(a.at("load"));  // absent where not measured
}

}  // namespace

std::string accuracy_to_json(const std::vector<AccuracyResult>& results, const std::string& dataset) {
  nlohmann::json arr = nlohmann::json::array();
  for (const auto& r : results) {
    nlohmann::json j = common_fields(r);
    if (!r.task.empty()) {  // a per-token head's pass: its task's metrics by name (NaN: null)
      nlohmann::json metrics = nlohmann::json::object();
      for (const auto& [name, value] : r.scores) metrics[name] = value;
      j["task"] = r.task, j["metrics"] = metrics, j["scheme"] = r.scheme;
    } else {
      nlohmann::json classes = nlohmann::json::array();
      for (const auto& c : r.per_class)
        classes.push_back({{"label", c.label},
                           {"precision", c.precision},
                           {"recall", c.recall},
                           {"f1", c.f1},
                           {"support", c.support}});
      j["accuracy"] = r.accuracy, j["macro_f1"] = r.macro_f1, j["chance_accuracy"] = r.chance_accuracy;
      j["per_class"] = classes, j["confusion"] = r.confusion;
    }
    arr.push_back(std::move(j));
  }
  return nlohmann::json{{"schema", "tach.bench.accuracy/1"}, {"dataset", dataset}, {"results", arr}}.dump(
      2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<AccuracyResult> accuracy_from_json(const std::string& text, const std::string& where,
                                               std::string* dataset) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    check(j.value("schema", "") == "tach.bench.accuracy/1", where + ": not a tach.bench.accuracy/1 file");
    if (dataset) *dataset = j.at("dataset");
    std::vector<AccuracyResult> out;
    for (const auto& a : j.at("results")) {
      AccuracyResult r;
      read_common_fields(a, r);
      if (a.contains("task")) {  // a per-token head's pass
        r.task = a.at("task");
        r.scores = bench::metrics_from_json(a.at("metrics"), r.task, where);
        r.scheme = a.value("scheme", "");
        if (a.contains("predictions")) r.predicted_text = a.at("predictions").get<std::vector<std::string>>();
      } else {
        r.accuracy = a.at("accuracy");
        r.macro_f1 = a.at("macro_f1");
        r.chance_accuracy = a.at("chance_accuracy");
        for (const auto& c : a.at("per_class"))
          r.per_class.push_back({c.at("label"), c.at("precision"), c.at("recall"), c.at("f1"), c.at("support")});
        r.confusion = a.at("confusion").get<std::vector<std::vector<int64_t>>>();
        if (a.contains("predictions"))  // kept where other engines ran
          r.predicted = a.at("predictions").get<std::vector<int32_t>>();
      }
      out.push_back(std::move(r));
    }
    return out;
  } catch (const nlohmann::json::exception& e) { throw Error(where + ": " + e.what()); }
}

}  // namespace tach
