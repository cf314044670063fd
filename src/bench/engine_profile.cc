// tach profile --engine: another engine's calls under torch.profiler, in its worker process
// (the protocol's "profile" request, docs/engines.md), on the ids tach profiles itself.
#include "tach/engine_profile.h"

#include <algorithm>
#include <filesystem>

#include "bench/engine_point.h"
#include "engines/engine_names.h"
#include "engines/engine_protocol.h"
#include "model/checkpoint.h"
#include "tach/error.h"

namespace fs = std::filesystem;

namespace tach {

namespace {

std::vector<std::string> string_list(const nlohmann::json& reply, const char* key, const std::string& engine) {
  const auto it = reply.find(key);
  if (it == reply.end() || !it->is_array())
    throw Error("engine " + engine + "'s profile reply has no \"" + key + "\" list");
  std::vector<std::string> out;
  for (const auto& v : *it) {
    if (!v.is_string())
      throw Error("engine " + engine + "'s profile reply lists a trace that is not a path: " + v.dump());
    out.push_back(v.get<std::string>());
  }
  return out;
}

}  // namespace

void check_profile_engine(const std::string& engine, const std::string& model, const std::string& dtype) {
  engines::check_engines({engine}, false);  // an unknown name, naming the known ones
  usage_check(engine != "onnxruntime",
              "--engine onnxruntime cannot be profiled here: ONNX Runtime has a profiler of its own "
              "(SessionOptions.enable_profiling), whose JSON holds ONNX nodes, not the torch.profiler "
              "events tach analyze reads; profile --engine torch or torch-compile, or tach's own engine (no --engine)");
  usage_check(engine != "python-matmul",
              "--engine python-matmul computes a stand-in matrix product, not the model: there is no model to "
              "profile; profile --engine torch or torch-compile");
  usage_check(engine == "torch" || engine == "torch-compile",
              "--engine " + engine + ": tach profile profiles tach (no --engine), torch or torch-compile");
  usage_check(model.rfind("preset:", 0) != 0, model + " has synthetic weights, which only tach builds: --engine " +
                                                  engine +
                                                  " needs a model directory or a hub id with its weights (-m DIR)");
  usage_check(dtype == "f32" || dtype == "bf16" || dtype == "f16",
              "--dtype " + dtype + " is tach's own quantization; --engine " + engine + " runs f32, bf16 or f16");
}

void check_engine_worker(const std::string& engine, const std::string& python) {
  (void)bench::engine_detail::worker_versions(engine, python);
}

EngineProfile profile_engine(const EngineProfileOptions& o, const ModelInfo& info, const TokenBatch& batch) {
  const std::string dir = model::resolve_model(o.model).dir;
  check(!dir.empty(), o.model + ": --engine " + o.engine + " needs a model directory with its weights");
  EngineProfile p;
  p.engine = o.engine;
  p.task = bench::engine_task(info);
  p.log = (fs::path(o.output_dir) / "engines" / (o.engine + ".log")).string();
  auto client = engines::EngineClient::start(engines::worker_launch(o.engine, o.python, p.log));
  p.versions = bench::engine_detail::versions_text(client->ready().versions);
  nlohmann::json train = nullptr;
  if (o.train)
    train = {
        {"method", o.method},        {"lr", o.lr}, {"seed", o.seed}, {"lora_r", o.lora_r}, {"lora_alpha", o.lora_alpha},
        {"num_labels", o.num_labels}};
  const nlohmann::json loaded = client->call({{"op", "load"},
                                              {"model", fs::absolute(dir).string()},
                                              {"task", p.task},
                                              {"dtype", o.dtype},
                                              {"device", o.device.str()},
                                              {"threads", o.threads},
                                              {"cache_dir", bench::engine_detail::engine_cache_dir()},
                                              {"train", train}});
  const engines::EngineLoad one_time = engines::load_from_reply(loaded, o.engine);
  p.load_s = one_time.load_s, p.setup_kind = one_time.setup_kind, p.setup_s = one_time.setup_s;
  nlohmann::json inputs = bench::inputs_request(batch);
  if (o.train) {
    const int64_t B = batch.batch(), T = batch.seq_len();
    const auto rows = [&](int64_t width, int64_t offset, int64_t stride) {
      nlohmann::json out = nlohmann::json::array();
      for (int64_t b = 0; b < B; ++b) {
        std::vector<int32_t> row;
        for (int64_t t = 0; t < width; ++t) row.push_back(o.labels.at(size_t(b * stride + offset + t)));
        out.push_back(width == 1 ? nlohmann::json(row.front()) : nlohmann::json(row));
      }
      return out;
    };
    const size_t n = o.labels.size();
    if (p.task == "question-answering" && n == size_t(2 * B)) {
      inputs["start_positions"] = rows(1, 0, 2);
      inputs["end_positions"] = rows(1, 1, 2);
    } else if (n == size_t(B * T)) {
      inputs["labels"] = rows(T, 0, T);
    } else {
      check(n == size_t(B), "engine profile: " + std::to_string(n) + " labels for a batch of " + std::to_string(B) +
                                " x " + std::to_string(T) + " (" + p.task + ")");
      inputs["labels"] = rows(1, 0, 1);
    }
  }
  (void)client->call(inputs);
  const nlohmann::json prepared = client->call({{"op", "prepare"}});
  p.first_call_s = prepared.contains("first_call_s") && prepared.at("first_call_s").is_number()
                       ? prepared.at("first_call_s").get<double>()
                       : 0;
  const ProfileSchedule& s = o.schedule;
  const int64_t cycles = std::max(s.repeat, 1);
  p.steps = s.skip_first + cycles * (s.wait + s.warmup + s.active);
  // The calls' deadline as a "time" request's, plus a minute for writing the traces.
  const double deadline = engines::request_deadline_s("time", p.steps, std::max(p.first_call_s, 1.0)) + 60;
  const nlohmann::json reply = client->call({{"op", "profile"},
                                             {"schedule",
                                              {{"skip_first", s.skip_first},
                                               {"wait", s.wait},
                                               {"warmup", s.warmup},
                                               {"active", s.active},
                                               {"repeat", cycles}}},
                                             {"output_dir", fs::absolute(o.output_dir).string()},
                                             {"gzip", o.gzip}},
                                            deadline);
  client->quit();
  p.traces = string_list(reply, "traces", o.engine);
  check(!p.traces.empty(), "engine " + o.engine + " wrote no trace (its log: " + p.log + ")");
  if (const auto it = reply.find("step_s"); it != reply.end() && it->is_array())
    for (const auto& v : *it)
      if (v.is_number()) p.step_s.push_back(v.get<double>());
  return p;
}

}  // namespace tach
