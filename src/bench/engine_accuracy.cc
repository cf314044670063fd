// Another engine's accuracy pass (tach bench --engine NAME --accuracy): the worker is fed the token
// ids of tach's own pass, batch by batch, and answers each batch's logits; tach turns them into
// predictions and scores them with the one implementation of the metrics, so that the engines
// differ only where their predictions do. A sequence classifier's batches are accuracy_batches'
// (the same examples, order, truncation and padding), its logits' argmax scored by
// classification_metrics; a token classifier's or a question-answering model's are tach eval's
// (task_passes.h: the same sentences or windows), its per-token logits becoming tags or answer
// spans through the same code as tach's. Timing is not its point: the wall time is recorded.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "bench/engine_point.h"
#include "bench/task_passes.h"
#include "engines/engine_names.h"
#include "tach/error.h"

namespace tach {

std::string engine_accuracy_to_json(const std::vector<EngineAccuracy>& results) {
  nlohmann::json arr = nlohmann::json::array();
  for (const EngineAccuracy& e : results) {
    nlohmann::json j = {{"engine", e.engine},     {"device", e.device}, {"dtype", e.dtype},       {"status", e.status},
                        {"examples", e.examples}, {"wall_s", e.wall_s}, {"versions", e.versions}, {"python", e.python}};
    if (!e.task.empty()) j["task"] = e.task;
    if (e.status == "ok" && !e.task.empty()) {
      j["metrics"] = nlohmann::json::object();
      for (const auto& [name, value] : e.scores) j["metrics"][name] = value;  // NaN: null
      j["differ_from_tach"] = e.differ >= 0 ? nlohmann::json(e.differ) : nlohmann::json(nullptr);
    } else if (e.status == "ok") {
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
      e.task = a.value("task", "");
      if (e.status == "ok" && !e.task.empty()) {
        e.scores = bench::metrics_from_json(a.at("metrics"), e.task, where);
        const auto& differ = a.at("differ_from_tach");
        e.differ = differ.is_null() ? -1 : differ.get<int64_t>();
      } else if (e.status == "ok") {
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
        e.examples == tach.examples && e.python == python && e.task == tach.task)
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

// The worker's outputs for a batch of [B, T] ids, as the f32 tensor tach's head gives: a token
// classifier's logits [B, T, labels], or a question-answering head's start and end logits ([B, T]
// each) side by side, [B, T, 2]. A null value (the worker's NaN or infinity) is NaN.
Tensor per_token_logits(const nlohmann::json& outputs, const std::string& task, int64_t B, int64_t T, int64_t labels,
                        const std::string& engine) {
  const bool qa = task == "question-answering";
  const int64_t L = qa ? 2 : labels;
  Tensor out = Tensor::empty({B, T, L}, DType::f32);
  float* o = out.data<float>();
  const auto fill = [&](const char* name, const std::vector<int64_t>& shape, int64_t column, int64_t columns) {
    check(outputs.contains(name), "engine " + engine + "'s outputs have no " + name);
    const auto& t = outputs.at(name);
    const auto& data = t.at("data");
    check(t.at("shape").get<std::vector<int64_t>>() == shape && int64_t(data.size()) == B * T * columns,
          "engine " + engine + "'s " + name + " hold " + std::to_string(data.size()) + " values of shape " +
              t.at("shape").dump() + " for a batch of [" + std::to_string(B) + ", " + std::to_string(T) + "] tokens" +
              (qa ? std::string() : " and " + std::to_string(labels) + " labels"));
    for (int64_t i = 0; i < B * T; ++i)
      for (int64_t c = 0; c < columns; ++c) {
        const auto& v = data[size_t(i * columns + c)];
        o[i * L + column + c] = v.is_number() ? v.get<float>() : NAN;
      }
  };
  if (qa) {
    fill("start_logits", {B, T}, 0, 1);
    fill("end_logits", {B, T}, 1, 1);
  } else {
    fill("logits", {B, T, labels}, 0, labels);
  }
  return out;
}

// One batch's outputs from the worker.
nlohmann::json batch_outputs(engines::EngineClient& client, const TokenBatch& batch, const std::string& engine) {
  (void)client.call(inputs_request(batch));
  // A compiling engine (torch-compile) compiles each new batch shape on its first call.
  const nlohmann::json reply = client.call({{"op", "outputs"}}, engines::request_deadline_s("prepare"));
  return engines::outputs_of(reply, engine);
}

// A sequence classifier's pass: tach's batches, the logits' argmax, classification_metrics.
void sequence_pass(engines::EngineClient& client, const std::string& engine, const ModelInfo& info,
                   const BenchConfig& config, const AccuracyResult& tach, const TextSource& texts, EngineAccuracy& a) {
  const size_t n = size_t(tach.examples);
  const std::vector<int32_t> truth_all = LabelMap(info.labels).ids_of(texts.examples, texts.name);
  check(n <= truth_all.size(),
        "the accuracy pass has " + std::to_string(n) + " examples, the dataset " + std::to_string(truth_all.size()));
  const std::vector<int32_t> truth(truth_all.begin(), truth_all.begin() + long(n));
  const int64_t labels = int64_t(info.labels.size());
  const int64_t max_len = accuracy_max_length(info, config);
  std::vector<int32_t> predicted(n, 0);
  for (const std::vector<size_t>& rows : accuracy_batches(texts, n, config)) {
    const TokenBatch batch = text_batch(texts, info, rows, max_len, /*pad_to_longest=*/true);
    const nlohmann::json outputs = batch_outputs(client, batch, engine);
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
}

// A per-token head's pass: tach eval's sentences or windows, through the same pass as tach's.
void task_pass(engines::EngineClient& client, const std::string& engine, const ModelInfo& info,
               const BenchConfig& config, const AccuracyResult& tach, const TaskAccuracyData& data, EngineAccuracy& a) {
  const int64_t labels = int64_t(info.labels.size());
  const TokenLogitsForward forward = [&](const TokenBatch& batch) {
    return per_token_logits(batch_outputs(client, batch, engine), data.task, batch.batch(), batch.seq_len(), labels,
                            engine);
  };
  const TaskPass pass = task_accuracy_pass(data, info, config, forward, /*warm_up=*/false);
  check(pass.result.examples == tach.examples, "the accuracy pass has " + std::to_string(tach.examples) +
                                                   " examples, the dataset " + std::to_string(pass.result.examples));
  a.scores = pass.result.scores;
  const std::vector<std::string>& predicted = pass.result.predicted_text;
  if (tach.predicted_text.size() == predicted.size()) {
    a.differ = 0;
    for (size_t i = 0; i < predicted.size(); ++i) a.differ += predicted[i] != tach.predicted_text[i];
  }
}

}  // namespace

EngineAccuracy EngineWorkers::run_accuracy(const EncoderModel& tach_model, const std::string& engine,
                                           const AccuracyResult& tach, const TextSource* texts,
                                           const TaskAccuracyData* task, int threads) {
  const ModelInfo& info = tach_model.info();
  EngineAccuracy a;
  a.engine = engine, a.device = tach.device, a.dtype = tach.dtype, a.examples = tach.examples;
  a.task = tach.task;
  a.python = config_.python;
  const auto t0 = std::chrono::steady_clock::now();
  try {
    check(tach.task.empty() ? texts != nullptr : task != nullptr, "no data for the accuracy pass of " + engine);
    Worker& w = started(engine);
    a.versions = engine_detail::versions_text(w.client->ready().versions);
    PointKey key;
    key.engine = engine, key.device = tach.device, key.dtype = tach.dtype;
    PointResult::EngineRun one_time;  // the load's costs belong to the points, not to this pass
    load(w, key, key.device + "/" + key.dtype + "/" + std::to_string(threads),
         engine_detail::load_request(config_, key, engine_task(info), threads, nullptr), one_time);
    if (tach.task.empty()) sequence_pass(*w.client, engine, info, config_, tach, *texts, a);
    else task_pass(*w.client, engine, info, config_, tach, *task, a);
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
