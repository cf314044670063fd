#include "train/train_options.h"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <set>

#include "tach/device.h"
#include "tach/dtype.h"
#include "tach/error.h"
#include "tach/plain_number.h"
#include "train/distill.h"

namespace tach {

namespace train {

namespace {

// Every option once: its key (the flag without dashes, '-' as '_') and its member.
template <typename F>
void visit(TrainOptions& o, F&& f) {
  f("model", o.model);
  f("tokenizer", o.tokenizer);
  f("dataset", o.data.path);
  f("dataset_format", o.data.format);
  f("text_column", o.data.text_column);
  f("text_pair_column", o.data.text_pair_column);
  f("label_column", o.data.label_column);
  f("split", o.data.split);
  f("header", o.data.header);
  f("max_samples", o.max_samples);
  f("shuffle", o.shuffle);
  f("labels", o.labels);
  f("problem_type", o.problem_type);
  f("task", o.task);
  f("mlm_probability", o.mlm_probability);
  f("label_all_tokens", o.label_all_tokens);
  f("doc_stride", o.doc_stride);
  f("eval_dataset", o.eval_data.path);
  f("eval_split", o.eval_data.split);
  f("eval_every", o.eval_every);
  f("eval_max_length", o.eval_max_length);
  f("epochs", o.epochs);
  f("max_steps", o.max_steps);
  f("batch_size", o.batch_size);
  f("gradient_accumulation_steps", o.grad_accumulation);
  f("lr", o.lr);
  f("warmup_ratio", o.warmup_ratio);
  f("schedule", o.schedule);
  f("weight_decay", o.weight_decay);
  f("decay_scope", o.decay_scope);
  f("adam_beta1", o.adam_beta1);
  f("adam_beta2", o.adam_beta2);
  f("adam_epsilon", o.adam_eps);
  f("max_grad_norm", o.max_grad_norm);
  f("max_length", o.max_length);
  f("padding", o.padding);
  f("dropout", o.dropout);
  f("seed", o.seed);
  f("dtype", o.dtype);
  f("exec", o.exec);
  f("gradient_checkpointing", o.gradient_checkpointing);
  f("method", o.method);
  f("lora_r", o.lora_r);
  f("lora_alpha", o.lora_alpha);
  f("lora_dropout", o.lora_dropout);
  f("lora_target_modules", o.lora_target_modules);
  f("modules_to_save", o.modules_to_save);
  f("adapter", o.adapter);
  f("distill_from", o.distill_from);
  f("distill_temperature", o.distill_temperature);
  f("distill_alpha", o.distill_alpha);
  f("distill_dtype", o.distill_dtype);
  f("runs_dir", o.runs_dir);
  f("run_id", o.run_id);
  f("save", o.save_dir);
  f("save_every", o.save_every);
  f("profile", o.profile);
  f("profiler_skip_first", o.profiler_skip_first);
  f("profiler_wait", o.profiler_wait);
  f("profiler_warmup", o.profiler_warmup);
  f("profiler_active", o.profiler_active);
  f("profiler_repeat", o.profiler_repeat);
  f("profiler_output_dir", o.profiler_output_dir);
  f("enable_memory_logging", o.memory_logging);
  f("memory_log_steps", o.memory_log_steps);
  f("tensorboard", o.tensorboard);
  f("threads", o.threads);
  f("dist_timeout", o.dist_timeout);
  f("bucket_mb", o.bucket_mb);
  f("scaling_reference", o.scaling_reference);
}

template <typename T>
T yaml_scalar(const YAML::Node& n, const std::string& where) {
  try {
    return n.as<T>();
  } catch (const YAML::Exception&) {
    const char* want = std::is_same_v<T, std::string> ? "a string"
                       : std::is_same_v<T, bool>      ? "true or false"
                       : std::is_integral_v<T>        ? "an integer"
                                                      : "a number";
    throw Error(where + ": expected " + want + " (line " + std::to_string(n.Mark().line + 1) + ")");
  }
}

// The teacher runs inference on the student's device, so its dtype must be one that device runs
// (as load_model checks), refused here, before either model is read, naming the option.
void check_distill_dtype(const std::string& name, const Device& device) {
  DType d = DType::f32;
  try {
    d = parse_compute_dtype(name);
  } catch (const Error& e) { throw UsageError(std::string("--distill-dtype: ") + e.what()); }
  if (device.kind == DeviceKind::cuda)  // int8 and nf4 weight-only there (ops/linear_quantized.h)
    usage_check(d == DType::f32 || d == DType::bf16 || d == DType::f16 || d == DType::i8 || d == DType::nf4,
                "--distill-dtype " + name + " is not supported on cuda (f32, bf16, f16, int8, nf4)");
  else
    usage_check(d == DType::f32 || d == DType::bf16 || d == DType::i8 || d == DType::nf4,
                "--distill-dtype " + name + " is not supported on cpu (f32, bf16, int8, nf4)");
}

}  // namespace

nlohmann::json options_to_json(const TrainOptions& options) {
  TrainOptions o = options;
  nlohmann::json j = nlohmann::json::object();
  visit(o, [&](const char* key, auto& member) { j[key] = member; });
  return j;
}

TrainOptions options_from_json(const nlohmann::json& j, const std::string& source) {
  TrainOptions o;
  visit(o, [&](const char* key, auto& member) {
    if (!j.contains(key)) return;
    try {
      j.at(key).get_to(member);
    } catch (const std::exception&) {
      throw Error(source + ": option \"" + key + "\" has the wrong type: " + j.at(key).dump());
    }
  });
  return o;
}

}  // namespace train

void merge_train_options(TrainOptions& flags, const TrainOptions& file,
                         const std::function<bool(const std::string& key)>& given_on_command_line) {
  std::vector<const void*> from;
  TrainOptions copy = file;
  train::visit(copy, [&](const char*, auto& member) { from.push_back(&member); });
  size_t i = 0;
  train::visit(flags, [&](const char* key, auto& member) {
    using T = std::decay_t<decltype(member)>;
    if (!given_on_command_line(key)) member = *static_cast<const T*>(from[i]);
    ++i;
  });
}

namespace train {

void validate_options(const TrainOptions& o) {
  usage_check(!o.model.empty(), "no model: pass -m MODEL");
  usage_check(!o.data.path.empty(), "no dataset: pass -d DATASET");
  usage_check(std::isfinite(o.lr) && o.lr > 0,
              "--lr must be a positive number, got " + plain_number(o.lr) +
                  " (a zero, negative or NaN learning rate trains nothing or diverges)");
  usage_check(o.epochs >= 1 || o.max_steps >= 1, "--epochs must be at least 1 (or give --max-steps)");
  usage_check(o.max_steps >= 0, "--max-steps must be >= 0");
  usage_check(o.batch_size >= 1, "--batch-size must be at least 1");
  usage_check(o.max_length >= 1, "--max-length must be at least 1, got " + std::to_string(o.max_length));
  usage_check(o.eval_max_length >= 0, "--eval-max-length must be 0 (the default: --max-length) or more, got " +
                                          std::to_string(o.eval_max_length));
  usage_check(o.grad_accumulation >= 1, "--gradient-accumulation-steps must be at least 1");
  usage_check(std::isfinite(o.warmup_ratio) && o.warmup_ratio >= 0 && o.warmup_ratio < 1,
              "--warmup-ratio must be in [0, 1)");
  usage_check(std::isfinite(o.weight_decay) && o.weight_decay >= 0, "--weight-decay must be >= 0");
  usage_check(std::isfinite(o.max_grad_norm) && o.max_grad_norm >= 0, "--max-grad-norm must be >= 0 (0: no clipping)");
  usage_check(o.adam_beta1 >= 0 && o.adam_beta1 < 1 && o.adam_beta2 >= 0 && o.adam_beta2 < 1,
              "Adam betas must be in [0, 1)");
  usage_check(o.adam_eps > 0, "--adam-epsilon must be positive");
  usage_check(o.schedule == "linear" || o.schedule == "constant",
              "--schedule must be linear or constant, got " + o.schedule);
  usage_check(o.decay_scope == "trainer" || o.decay_scope == "all",
              "--decay-scope must be trainer or all, got " + o.decay_scope);
  usage_check(o.padding == "longest" || o.padding == "max_length",
              "--padding must be longest or max_length, got " + o.padding);
  usage_check(o.max_samples >= 0, "--max-samples must be >= 0");
  usage_check(o.eval_every >= 0 && o.save_every >= 0, "--eval-every and --save-every must be >= 0");
  usage_check(o.dtype == "f32" || o.dtype == "bf16", "--dtype must be f32 or bf16, got " + o.dtype);
  usage_check(o.exec == "eager" || o.exec == "fused", "--exec must be eager or fused, got " + o.exec);
  usage_check(o.method == "full" || o.method == "lora" || o.method == "qlora",
              "--method must be full, lora or qlora, got " + o.method);
  usage_check(
      o.adapter.empty() || o.method != "full",
      "--adapter continues training a LoRA adapter; it needs --method lora or qlora (to run a model with an adapter "
      "merged in, use tach classify, eval or bench --adapter, or tach merge)");
  usage_check(o.lora_r >= 1, "--lora-r must be at least 1, got " + std::to_string(o.lora_r));
  usage_check(std::isfinite(o.lora_alpha) && o.lora_alpha > 0, "--lora-alpha must be positive");
  usage_check(o.lora_dropout >= 0 && o.lora_dropout < 1, "--lora-dropout must be in [0, 1)");
  usage_check(o.problem_type.empty() || o.problem_type == "single_label_classification" ||
                  o.problem_type == "multi_label_classification" || o.problem_type == "regression",
              "--problem-type must be single_label_classification, multi_label_classification or regression, got " +
                  o.problem_type);
  usage_check(o.task == "sequence-classification" || o.task == "mlm" || o.task == "token-classification" ||
                  o.task == "question-answering",
              "--task must be sequence-classification, mlm, token-classification or question-answering, got " + o.task);
  usage_check(std::isfinite(o.mlm_probability) && o.mlm_probability > 0 && o.mlm_probability < 1,
              "--mlm-probability must be between 0 and 1 (exclusive)");
  usage_check(o.task != "question-answering" || (o.doc_stride >= 0 && o.doc_stride < o.max_length),
              "--doc-stride must be >= 0 and smaller than --max-length (" + std::to_string(o.max_length) + ")");
  usage_check(o.task == "sequence-classification" || (o.labels.empty() || o.task == "token-classification"),
              "--labels names a classifier's labels; --task " + o.task + " has none");
  usage_check(o.profiler_skip_first >= 0 && o.profiler_wait >= 0 && o.profiler_warmup >= 0 && o.profiler_active >= 1 &&
                  o.profiler_repeat >= 0,
              "profiler schedule: skip-first, wait and warmup >= 0, active >= 1, repeat >= 0");
  usage_check(o.memory_log_steps >= 1, "--memory-log-steps must be at least 1");
  usage_check(o.threads >= 0, "--threads must be >= 0");
  usage_check(std::isfinite(o.dist_timeout) && o.dist_timeout > 0,
              "--dist-timeout must be a positive number of seconds");
  usage_check(std::isfinite(o.bucket_mb) && o.bucket_mb > 0, "--bucket-mb must be a positive number of megabytes");
  validate_distill_settings(o.distill_temperature, o.distill_alpha);
  check_distill_dtype(o.distill_dtype, o.device);
  // The teacher's settings without a teacher would be ignored: a run that looks distilled and is not.
  if (o.distill_from.empty()) {
    const TrainOptions defaults;
    const auto needs_teacher = [](bool set, const std::string& option) {
      usage_check(!set, option + " needs --distill-from (a teacher to distil from); without one it would be ignored");
    };
    needs_teacher(o.distill_temperature != defaults.distill_temperature,
                  "--distill-temperature " + plain_number(o.distill_temperature));
    needs_teacher(o.distill_alpha != defaults.distill_alpha, "--distill-alpha " + plain_number(o.distill_alpha));
    needs_teacher(parse_compute_dtype(o.distill_dtype) != parse_compute_dtype(defaults.distill_dtype),
                  "--distill-dtype " + o.distill_dtype);
  }
}

}  // namespace train

void load_train_yaml(const std::string& path, TrainOptions& options) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) { throw Error(path + ": " + e.what()); }
  if (root.IsNull()) return;
  check(root.IsMap(), path + ": expected a mapping of options");
  std::set<std::string> known;
  train::visit(options, [&](const char* key, auto& member) {
    known.insert(key);
    const YAML::Node n = root[key];
    if (!n) return;
    using T = std::decay_t<decltype(member)>;
    if constexpr (std::is_same_v<T, std::vector<std::string>>) {
      member.clear();
      if (n.IsSequence())
        for (size_t i = 0; i < n.size(); ++i)
          member.push_back(train::yaml_scalar<std::string>(n[i], path + ": " + key));
      else member.push_back(train::yaml_scalar<std::string>(n, path + ": " + key));
    } else {
      member = train::yaml_scalar<T>(n, path + ": " + key);
    }
  });
  for (auto it = root.begin(); it != root.end(); ++it) {
    const std::string key = it->first.as<std::string>();
    if (known.count(key)) continue;
    std::string names;
    for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
    throw Error(path + ": unknown option \"" + key + "\" (line " + std::to_string(it->first.Mark().line + 1) +
                "); options: " + names);
  }
}

}  // namespace tach
