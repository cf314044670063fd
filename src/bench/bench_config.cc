// BenchConfig from YAML (the benchmark config.yaml shape, plus tach's keys) and to/from config.json.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <set>

#include "bench/bench_internal.h"
#include "model/family.h"
#include "model/hub_dataset_layout.h"
#include "tach/error.h"

namespace tach {

namespace {

// Benchmark configs and transformers spell dtypes as torch does; tach's short names are accepted too.
std::string dtype_from_user(const std::string& s) {
  if (s == "float32" || s == "fp32" || s == "f32") return "f32";
  if (s == "bfloat16" || s == "bf16") return "bf16";
  if (s == "float16" || s == "fp16" || s == "f16" || s == "half") return "f16";
  if (s == "int8" || s == "qint8") return "int8";
  if (s == "nf4") return "nf4";
  throw Error("dtype '" + s + "' is not one of float32 (f32), bfloat16 (bf16), float16 (f16), int8, nf4");
}

template <typename T>
T scalar(const YAML::Node& node, const std::string& key) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    const char* want = std::is_same_v<T, std::string> ? "a string"
                       : std::is_same_v<T, bool>      ? "true or false"
                       : std::is_integral_v<T>        ? "an integer"
                                                      : "a number";
    throw Error(key + ": expected " + want + " (line " + std::to_string(node.Mark().line + 1) + ")");
  }
}

// A scalar or a list of scalars.
template <typename T>
std::vector<T> list(const YAML::Node& node, const std::string& key) {
  std::vector<T> out;
  if (node.IsSequence()) {
    for (size_t i = 0; i < node.size(); ++i) out.push_back(scalar<T>(node[i], key + "[" + std::to_string(i) + "]"));
  } else {
    out.push_back(scalar<T>(node, key));
  }
  check(!out.empty(), key + ": an empty list");
  return out;
}

void check_keys(const YAML::Node& node, const std::string& section, const std::set<std::string>& known) {
  check(node.IsMap(), section + ": expected a mapping of keys");
  for (auto it = node.begin(); it != node.end(); ++it) {
    const auto key = it->first.as<std::string>();
    if (known.count(key)) continue;
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    throw Error(section + "." + key + ": unknown key (line " + std::to_string(it->first.Mark().line + 1) +
                "); known keys: " + names);
  }
}

// The training: section (tach bench --train's axes and optimizer settings).
void read_training_yaml(const YAML::Node& t, const std::string& p, TrainSweep& s) {
  check_keys(
      t, p + "training",
      {"enabled", "task", "method", "exec", "gradient_checkpointing", "lr", "learning_rate", "weight_decay",
       "adam_beta1", "adam_beta2", "adam_epsilon", "max_grad_norm", "dropout", "lora_r", "lora_alpha", "lora_dropout"});
  s.enabled = t["enabled"] ? scalar<bool>(t["enabled"], p + "training.enabled") : true;
  if (t["task"]) s.task = scalar<std::string>(t["task"], p + "training.task");
  if (t["method"]) s.methods = list<std::string>(t["method"], p + "training.method");
  if (t["exec"]) s.execs = list<std::string>(t["exec"], p + "training.exec");
  if (t["gradient_checkpointing"])
    s.gradient_checkpointing = list<bool>(t["gradient_checkpointing"], p + "training.gradient_checkpointing");
  if (t["lr"]) s.lr = scalar<double>(t["lr"], p + "training.lr");
  if (t["learning_rate"]) s.lr = scalar<double>(t["learning_rate"], p + "training.learning_rate");
  if (t["weight_decay"]) s.weight_decay = scalar<double>(t["weight_decay"], p + "training.weight_decay");
  if (t["adam_beta1"]) s.adam_beta1 = scalar<double>(t["adam_beta1"], p + "training.adam_beta1");
  if (t["adam_beta2"]) s.adam_beta2 = scalar<double>(t["adam_beta2"], p + "training.adam_beta2");
  if (t["adam_epsilon"]) s.adam_eps = scalar<double>(t["adam_epsilon"], p + "training.adam_epsilon");
  if (t["max_grad_norm"]) s.max_grad_norm = scalar<double>(t["max_grad_norm"], p + "training.max_grad_norm");
  if (t["dropout"]) s.dropout = scalar<bool>(t["dropout"], p + "training.dropout");
  if (t["lora_r"]) s.lora_r = scalar<int64_t>(t["lora_r"], p + "training.lora_r");
  if (t["lora_alpha"]) s.lora_alpha = scalar<double>(t["lora_alpha"], p + "training.lora_alpha");
  if (t["lora_dropout"]) s.lora_dropout = scalar<double>(t["lora_dropout"], p + "training.lora_dropout");
}

nlohmann::json train_sweep_json(const TrainSweep& s) {
  return {{"enabled", s.enabled},
          {"task", s.task},
          {"methods", s.methods},
          {"execs", s.execs},
          {"gradient_checkpointing", s.gradient_checkpointing},
          {"lr", s.lr},
          {"weight_decay", s.weight_decay},
          {"adam_beta1", s.adam_beta1},
          {"adam_beta2", s.adam_beta2},
          {"adam_eps", s.adam_eps},
          {"max_grad_norm", s.max_grad_norm},
          {"dropout", s.dropout},
          {"lora_r", s.lora_r},
          {"lora_alpha", s.lora_alpha},
          {"lora_dropout", s.lora_dropout}};
}

TrainSweep train_sweep_from(const nlohmann::json& j) {
  TrainSweep s;
  s.enabled = j.at("enabled");
  s.task = j.value("task", s.task);  // runs from before --task trained sequence classification
  s.methods = j.at("methods").get<std::vector<std::string>>();
  s.execs = j.at("execs").get<std::vector<std::string>>();
  s.gradient_checkpointing = j.at("gradient_checkpointing").get<std::vector<bool>>();
  s.lr = j.at("lr");
  s.weight_decay = j.at("weight_decay");
  s.adam_beta1 = j.at("adam_beta1");
  s.adam_beta2 = j.at("adam_beta2");
  s.adam_eps = j.at("adam_eps");
  s.max_grad_norm = j.at("max_grad_norm");
  s.dropout = j.at("dropout");
  s.lora_r = j.at("lora_r");
  s.lora_alpha = j.at("lora_alpha");
  s.lora_dropout = j.at("lora_dropout");
  return s;
}

}  // namespace

BenchConfig train_sweep_defaults() {
  BenchConfig c;
  c.train.enabled = true;
  c.batch_sizes = {8, 16, 32, 64};
  c.warmup_runs = 1;
  c.stop.min_runs = 3;
  c.stop.max_runs = 20;
  c.stop.time_budget_s = 20;
  c.stop.target_cv = 0.05;
  return c;
}

BenchConfig bench_config_from_yaml(const std::string& path, BenchConfig c) {
  std::ifstream in(path, std::ios::binary);
  check(static_cast<bool>(in), path + ": cannot open the config file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return bench_config_from_yaml_text(ss.str(), path, std::move(c));
}

BenchConfig bench_config_from_yaml_text(const std::string& text, const std::string& path, BenchConfig c) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) { throw Error(path + ": not valid YAML: " + e.what()); }
  if (root.IsNull()) return c;
  const std::string p = path + ": ";
  try {
    check_keys(root, path, {"model", "dataset", "profiling", "output", "seed", "training"});
    if (root["seed"]) c.seed = scalar<uint64_t>(root["seed"], p + "seed");
    if (const auto m = root["model"]) {
      check_keys(m, p + "model", {"name", "device", "dtype", "tokenizer", "adapter", "head", "allow_tf32"});
      if (m["allow_tf32"]) c.allow_tf32 = scalar<bool>(m["allow_tf32"], p + "model.allow_tf32");
      if (m["name"]) c.model = scalar<std::string>(m["name"], p + "model.name");
      if (m["head"]) {
        c.head = scalar<std::string>(m["head"], p + "model.head");
        try {
          parse_head(c.head);
        } catch (const UsageError& e) { throw UsageError(p + "model.head: " + e.what()); }
      }
      if (m["adapter"]) c.adapter = scalar<std::string>(m["adapter"], p + "model.adapter");
      if (m["tokenizer"]) c.tokenizer = scalar<std::string>(m["tokenizer"], p + "model.tokenizer");
      if (m["device"]) c.devices = list<std::string>(m["device"], p + "model.device");
      if (m["dtype"]) {
        c.dtypes.clear();
        for (const auto& d : list<std::string>(m["dtype"], p + "model.dtype")) c.dtypes.push_back(dtype_from_user(d));
      }
    }
    if (const auto d = root["dataset"]) {
      check_keys(d, p + "dataset",
                 {"path", "local_path", "hf_name", "format", "text_column", "text_pair_column", "label_column", "split",
                  "header", "sample_sizes", "limit"});
      if (d["path"]) c.dataset.path = scalar<std::string>(d["path"], p + "dataset.path");
      if (d["local_path"]) c.dataset.path = scalar<std::string>(d["local_path"], p + "dataset.local_path");
      // hf_name (glue/sst2, ORG/NAME[/CONFIG]) is read from the Hub's files, through the cache, when
      // no local path is given; a local path, when given, is what is read.
      if (d["hf_name"] && c.dataset.path.empty()) {
        const std::string name = scalar<std::string>(d["hf_name"], p + "dataset.hf_name");
        const auto spec = model::named_dataset_spec(name, true);
        check(spec.has_value(), p + "dataset.hf_name: '" + name +
                                    "' is not a Hub dataset name (ORG/NAME, ORG/NAME/CONFIG, a canonical name such as "
                                    "glue/sst2, or hf://datasets/...)");
        c.dataset.path = *spec;
      }
      if (d["format"]) c.dataset.format = scalar<std::string>(d["format"], p + "dataset.format");
      if (d["text_column"]) c.dataset.text_column = scalar<std::string>(d["text_column"], p + "dataset.text_column");
      if (d["text_pair_column"])
        c.dataset.text_pair_column = scalar<std::string>(d["text_pair_column"], p + "dataset.text_pair_column");
      if (d["label_column"])
        c.dataset.label_column = scalar<std::string>(d["label_column"], p + "dataset.label_column");
      if (d["split"]) c.dataset.split = scalar<std::string>(d["split"], p + "dataset.split");
      if (d["header"]) c.dataset.header = scalar<std::string>(d["header"], p + "dataset.header");
      if (d["sample_sizes"]) c.sample_sizes = list<int64_t>(d["sample_sizes"], p + "dataset.sample_sizes");
      if (d["limit"]) c.limit = scalar<int64_t>(d["limit"], p + "dataset.limit");
    }
    if (const auto f = root["profiling"]) {
      check_keys(f, p + "profiling",
                 {"batch_sizes", "num_warmup_runs", "num_measurement_runs", "max_length", "seq_lens", "min_runs",
                  "max_runs", "time_budget_s", "target_cv", "threads", "input", "bucketing", "latency_budget_ms",
                  "accuracy", "eval_batch_size", "tensorboard", "decode_tokens"});
      if (f["batch_sizes"]) c.batch_sizes = list<int64_t>(f["batch_sizes"], p + "profiling.batch_sizes");
      if (f["num_warmup_runs"]) c.warmup_runs = scalar<int>(f["num_warmup_runs"], p + "profiling.num_warmup_runs");
      if (f["num_measurement_runs"])
        c.stop.runs = scalar<int>(f["num_measurement_runs"], p + "profiling.num_measurement_runs");
      if (f["max_length"]) c.seq_lens = list<int64_t>(f["max_length"], p + "profiling.max_length");
      if (f["seq_lens"]) c.seq_lens = list<int64_t>(f["seq_lens"], p + "profiling.seq_lens");
      if (f["max_length"] && !f["seq_lens"]) c.eval_max_length = c.seq_lens.back();
      if (f["min_runs"]) c.stop.min_runs = scalar<int>(f["min_runs"], p + "profiling.min_runs");
      if (f["max_runs"]) c.stop.max_runs = scalar<int>(f["max_runs"], p + "profiling.max_runs");
      if (f["time_budget_s"]) c.stop.time_budget_s = scalar<double>(f["time_budget_s"], p + "profiling.time_budget_s");
      if (f["target_cv"]) c.stop.target_cv = scalar<double>(f["target_cv"], p + "profiling.target_cv");
      if (f["threads"]) c.threads = list<int>(f["threads"], p + "profiling.threads");
      if (f["input"]) c.input = scalar<std::string>(f["input"], p + "profiling.input");
      if (f["bucketing"]) c.bucketing = scalar<bool>(f["bucketing"], p + "profiling.bucketing");
      if (f["latency_budget_ms"])
        c.latency_budget_ms = scalar<double>(f["latency_budget_ms"], p + "profiling.latency_budget_ms");
      if (f["accuracy"]) c.accuracy = scalar<bool>(f["accuracy"], p + "profiling.accuracy");
      if (f["tensorboard"]) c.tensorboard = scalar<bool>(f["tensorboard"], p + "profiling.tensorboard");
      if (f["eval_batch_size"])
        c.eval_batch_size = scalar<int64_t>(f["eval_batch_size"], p + "profiling.eval_batch_size");
      if (f["decode_tokens"]) c.decode_tokens = scalar<int64_t>(f["decode_tokens"], p + "profiling.decode_tokens");
    }
    if (const auto t = root["training"]) read_training_yaml(t, p, c.train);
    if (const auto o = root["output"]) {
      check_keys(o, p + "output", {"runs_dir", "run_id"});
      if (o["runs_dir"]) c.runs_dir = scalar<std::string>(o["runs_dir"], p + "output.runs_dir");
      if (o["run_id"]) c.run_id = scalar<std::string>(o["run_id"], p + "output.run_id");
    }
  } catch (const YAML::Exception& e) { throw Error(p + e.what()); }
  return c;
}

std::string bench_config_to_json(const BenchConfig& c) {
  nlohmann::json j = {
      {"schema", "tach.bench.config/1"},
      {"model", c.model},
      {"tokenizer", c.tokenizer},
      {"adapter", c.adapter},
      {"head", c.head},
      {"devices", c.devices},
      {"dtypes", c.dtypes},
      {"allow_tf32", c.allow_tf32},
      {"batch_sizes", c.batch_sizes},
      {"seq_lens", c.seq_lens},
      {"threads", c.threads},
      {"warmup_runs", c.warmup_runs},
      {"gpu_energy_window_s", c.gpu_energy_window_s},
      {"stop",
       {{"runs", c.stop.runs},
        {"min_runs", c.stop.min_runs},
        {"max_runs", c.stop.max_runs},
        {"time_budget_s", c.stop.time_budget_s},
        {"target_cv", c.stop.target_cv}}},
      {"seed", c.seed},
      {"input", c.input},
      {"dataset",
       {{"path", c.dataset.path},
        {"format", c.dataset.format},
        {"text_column", c.dataset.text_column},
        {"text_pair_column", c.dataset.text_pair_column},
        {"label_column", c.dataset.label_column},
        {"split", c.dataset.split},
        {"header", c.dataset.header}}},
      {"bucketing", c.bucketing},
      {"accuracy", c.accuracy},
      {"sample_sizes", c.sample_sizes},
      {"limit", c.limit},
      {"eval_batch_size", c.eval_batch_size},
      {"eval_max_length", c.eval_max_length},
      {"latency_budget_ms", c.latency_budget_ms},
      {"decode_tokens", c.decode_tokens},
      {"profile", c.profile},
      {"tensorboard", c.tensorboard},
      {"runs_dir", c.runs_dir},
      {"run_id", c.run_id},
      {"train", train_sweep_json(c.train)},
  };
  try {
    return j.dump(2);
  } catch (const nlohmann::json::type_error&) {
    // config.json must reproduce the run exactly, so text is not replaced: it is refused.
    throw Error(
        "the configuration holds text that is not valid UTF-8 (a model path, a column name?); config.json "
        "cannot record it exactly");
  }
}

BenchConfig bench_config_from_json(const std::string& text, const std::string& where) {
  try {
    const nlohmann::json j = nlohmann::json::parse(text);
    check(j.value("schema", "") == "tach.bench.config/1", where + ": not a tach.bench.config/1 file");
    BenchConfig c;
    c.model = j.at("model");
    c.tokenizer = j.at("tokenizer");
    c.adapter = j.value("adapter", "");  // absent from configs written before adapters
    c.head = j.value("head", "auto");    // absent from configs written before --head: the checkpoint's own
    c.devices = j.at("devices").get<std::vector<std::string>>();
    c.dtypes = j.at("dtypes").get<std::vector<std::string>>();
    c.allow_tf32 = j.value("allow_tf32", false);  // absent from configs written before it: full f32
    c.batch_sizes = j.at("batch_sizes").get<std::vector<int64_t>>();
    c.seq_lens = j.at("seq_lens").get<std::vector<int64_t>>();
    c.threads = j.at("threads").get<std::vector<int>>();
    c.warmup_runs = j.at("warmup_runs");
    c.gpu_energy_window_s = j.value("gpu_energy_window_s", 1.0);  // absent from configs written before it
    const auto& s = j.at("stop");
    c.stop = {s.at("runs"), s.at("min_runs"), s.at("max_runs"), s.at("time_budget_s"), s.at("target_cv")};
    c.seed = j.at("seed");
    c.input = j.at("input");
    const auto& d = j.at("dataset");
    c.dataset = {d.at("path"),         d.at("format"), d.at("text_column"), d.at("text_pair_column"),
                 d.at("label_column"), d.at("split"),  d.at("header")};
    c.bucketing = j.at("bucketing");
    c.accuracy = j.at("accuracy");
    c.sample_sizes = j.at("sample_sizes").get<std::vector<int64_t>>();
    c.limit = j.at("limit");
    c.eval_batch_size = j.at("eval_batch_size");
    c.eval_max_length = j.at("eval_max_length");
    c.latency_budget_ms = j.at("latency_budget_ms");
    c.decode_tokens = j.value("decode_tokens", int64_t{0});  // runs written before it timed prefill only
    c.profile = j.value("profile", false);
    c.tensorboard = j.value("tensorboard", true);
    c.runs_dir = j.at("runs_dir");
    c.run_id = j.at("run_id");
    if (j.contains("train")) c.train = train_sweep_from(j.at("train"));  // absent before training sweeps
    return c;
  } catch (const nlohmann::json::exception& e) { throw Error(where + ": " + e.what()); }
}

void check_lengths_fit_model(const BenchConfig& c) {
  if (c.seq_lens.empty()) return;
  const model::ArchitectureSummary a = model::summarize_architecture(model::resolve_model(c.model));
  // The longest row the model takes, as its loader checks it (RoBERTa's and MPNet's position ids
  // start after the padding index, so rows are shorter than the positions).
  const int64_t longest = a.max_row_tokens > 0 ? a.max_row_tokens : a.P;
  if (longest <= 0) return;  // rotary positions: no table to run past
  std::string past, fit, all;
  for (int64_t s : c.seq_lens) {
    std::string& list = s > longest ? past : fit;
    list += (list.empty() ? "" : ",") + std::to_string(s);
    all += (all.empty() ? "" : ",") + std::to_string(s);
  }
  if (past.empty()) return;
  const std::string limit = a.max_row_tokens > 0
                                ? std::to_string(a.P) + " positions (max_position_embeddings), of which a row takes " +
                                      std::to_string(longest)
                                : std::to_string(a.P) + " positions (max_position_embeddings)";
  const std::string what_fits = fit.empty() ? "give lengths up to " + std::to_string(longest) + ", e.g. -s " +
                                                  std::to_string(std::min<int64_t>(longest, 128))
                                            : "-s " + fit + " fit" + (fit.find(',') == std::string::npos ? "s" : "") +
                                                  "; give lengths up to " + std::to_string(longest);
  usage_check(false,
              (fit.empty() ? "every sequence length (-s " + all + ") is"
                           : "sequence length" + std::string(past.find(',') == std::string::npos ? " " : "s ") + past +
                                 " of -s " + all + (past.find(',') == std::string::npos ? " is" : " are")) +
                  " past " + c.model + "'s " + limit + ", so no point there could run: " + what_fits);
}

}  // namespace tach
