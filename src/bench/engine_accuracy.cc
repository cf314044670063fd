// Another engine's accuracy pass (tach bench --engine NAME --accuracy): the worker is fed the token
// ids of tach's own pass, batch by batch (accuracy_batches: the same examples, order, truncation
// and padding), and answers each batch's logits; tach takes their argmax and scores it with the
// one implementation of the metrics (classification_metrics), so that the engines differ only
// where their predictions do. Timing is not its point: the wall time is recorded, nothing more.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "bench/engine_point.h"
#include "engines/engine_names.h"
#include "tach/error.h"

namespace tach {

std::string engine_accuracy_to_json(const std::vector<EngineAccuracy>& results) {
  nlohmann::json arr = nlohmann::json::array();
  for (const EngineAccuracy& e : results) {
    nlohmann::json j = {{"engine", e.engine},     {"device", e.device}, {"dtype", e.dtype},       {"status", e.status},
                        {"examples", e.examples}, {"wall_s", e.wall_s}, {"versions", e.versions}, {"python", e.python}};
    if (e.status == "ok") {
      j["accuracy"] = e.accuracy;
      j["macro_f1"] = e.macro_f1;
      j["differ_from_tach"] = e.differ >= 0 ? nlohmann::json(e.differ) : nlohmann::json(nullptr);
    } else {
      j["reason"] = e.reason;
    }
    arr.push_back(std::move(j));
  }
  return arr.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

std::vector<EngineAccuracy> engine_accuracy_from_json(const std::string& accuracy_json, const std::string& where) {
  std::vector<EngineAccuracy> out;
  try {
    const nlohmann::json j = nlohmann::json::parse(accuracy_json);
    if (!j.is_object() || !j.contains("engines")) return out;
    check(j.at("engines").is_array(), where + ": \"engines\" is not a list");
    for (const auto& a : j.at("engines")) {
      EngineAccuracy e;
      e.engine = a.at("engine"), e.device = a.at("device"), e.dtype = a.at("dtype");
      e.status = a.at("status");
      check(e.status == "ok" || e.status == "failed",
            where + ": an engine's status is \"" + e.status + "\", not \"ok\" or \"failed\"");
      e.examples = a.at("examples");
      e.wall_s = a.value("wall_s", 0.0);
      e.versions = a.value("versions", "");
      e.python = a.value("python", "");
      if (e.status == "ok") {
        e.accuracy = a.at("accuracy"), e.macro_f1 = a.at("macro_f1");
        const auto& differ = a.at("differ_from_tach");
        e.differ = differ.is_null() ? -1 : differ.get<int64_t>();
      } else {
        e.reason = a.value("reason", "");
      }
      out.push_back(std::move(e));
    }
  } catch (const nlohmann::json::exception& e) { throw Error(where + ": " + e.what()); }
  return out;
}

namespace bench {

const EngineAccuracy* kept_engine_accuracy(const std::vector<EngineAccuracy>& kept, const std::string& engine,
                                           const AccuracyResult& tach, const std::string& python) {
  for (const EngineAccuracy& e : kept)
    if (e.status == "ok" && e.engine == engine && e.device == tach.device && e.dtype == tach.dtype &&
        e.examples == tach.examples && e.python == python)
      return &e;
  return nullptr;
}

namespace {

// Each row's label id: the argmax of its logits ([B, L] row-major). A null value (the worker's
// NaN or infinity) never wins: a row of them predicts label 0, as tach's argmax over NaNs does.
std::vector<int32_t> argmax_rows(const nlohmann::json& logits, int64_t rows, int64_t labels,
                                 const std::string& engine) {
  const auto shape = logits.at("shape").get<std::vector<int64_t>>();
  const auto& data = logits.at("data");
  check(shape == std::vector<int64_t>{rows, labels} && int64_t(data.size()) == rows * labels,
        "engine " + engine + "'s logits hold " + std::to_string(data.size()) + " values for a batch of " +
            std::to_string(rows) + " rows of " + std::to_string(labels) + " labels");
  std::vector<int32_t> out(size_t(rows), 0);
  for (int64_t b = 0; b < rows; ++b) {
    double best = -std::numeric_limits<double>::infinity();
    for (int64_t l = 0; l < labels; ++l) {
      const auto& v = data[size_t(b * labels + l)];
      const double x = v.is_number() ? v.get<double>() : NAN;
      if (x > best) best = x, out[size_t(b)] = int32_t(l);
    }
  }
  return out;
}

}  // namespace

EngineAccuracy EngineWorkers::run_accuracy(const EncoderModel& tach_model, const std::string& engine,
                                           const AccuracyResult& tach, const TextSource& texts, int threads) {
  const ModelInfo& info = tach_model.info();
  EngineAccuracy a;
  a.engine = engine, a.device = tach.device, a.dtype = tach.dtype, a.examples = tach.examples;
  a.python = config_.python;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    const size_t n = size_t(tach.examples);
    const std::vector<int32_t> truth_all = LabelMap(info.labels).ids_of(texts.examples, texts.name);
    check(n <= truth_all.size(),
          "the accuracy pass has " + std::to_string(n) + " examples, the dataset " + std::to_string(truth_all.size()));
    const std::vector<int32_t> truth(truth_all.begin(), truth_all.begin() + long(n));
    Worker& w = started(engine);
    a.versions = engine_detail::versions_text(w.client->ready().versions);
    PointKey key;
    key.engine = engine, key.device = tach.device, key.dtype = tach.dtype;
    PointResult::EngineRun one_time;  // the load's costs belong to the points, not to this pass
    load(w, key, key.device + "/" + key.dtype + "/" + std::to_string(threads),
         engine_detail::load_request(config_, key, engine_task(info), threads, nullptr), one_time);
    const int64_t labels = int64_t(info.labels.size());
    const int64_t max_len = accuracy_max_length(info, config_);
    std::vector<int32_t> predicted(n, 0);
    for (const std::vector<size_t>& rows : accuracy_batches(texts, n, config_)) {
      const TokenBatch batch = text_batch(texts, info, rows, max_len, /*pad_to_longest=*/true);
      (void)w.client->call(inputs_request(batch));
      // A compiling engine (torch-compile) compiles each new batch shape on its first call.
      const nlohmann::json reply = w.client->call({{"op", "outputs"}}, engines::request_deadline_s("prepare"));
      const nlohmann::json& outputs = engines::outputs_of(reply, engine);
      check(outputs.contains("logits"), "engine " + engine + "'s outputs have no logits");
      const std::vector<int32_t> got = argmax_rows(outputs.at("logits"), int64_t(rows.size()), labels, engine);
      for (size_t i = 0; i < rows.size(); ++i) predicted[rows[i]] = got[i];
    }
    const AccuracyResult scored = classification_metrics(truth, predicted, info.labels);
    a.accuracy = scored.accuracy, a.macro_f1 = scored.macro_f1;
    if (tach.predicted.size() == n) {
      a.differ = 0;
      for (size_t i = 0; i < n; ++i) a.differ += predicted[i] != tach.predicted[i];
    }
  } catch (const engines::WorkerFailure& e) {
    workers_.erase(engine);  // a fresh worker for whatever comes next
    a.status = "failed", a.reason = "engine " + engine + ": " + e.what();
  } catch (const Error& e) {
    a.status = "failed", a.reason = std::string(e.what());
  } catch (const nlohmann::json::exception& e) {
    a.status = "failed", a.reason = "engine " + engine + "'s outputs are not {shape, data} logits: " + e.what();
  }
  a.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return a;
}

}  // namespace bench
}  // namespace tach
