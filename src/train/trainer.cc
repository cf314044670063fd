// tach train: the loop. Per step: cut the micro-batches (data), run the forward and the loss,
// the backward, clip, and the optimizer; time each phase; log the step; evaluate, checkpoint and
// report per epoch; save the model at the end. Every file is written so that a kill at any
// instant leaves the last complete state readable (docs/train.md).
#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/parallel.h"
#include "cpu/train_gemm.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"
#include "tach/memory.h"
#include "tach/metrics.h"
#include "tach/monitor.h"
#include "tach/profile.h"
#include "tach/system_info.h"
#include "tach/tokenizer.h"
#include "tach/train.h"
#include "train/train_step.h"
#include "train/lr_schedule.h"
#include "train/optimizer.h"
#include "train/run_checkpoint.h"
#include "train/save_model.h"
#include "train/train_data.h"
#include "train/train_eval.h"
#include "train/train_options.h"
#include "train/trainable_model.h"
#include "model/peft_adapter.h"
#include "train/lora.h"
#include "train/run_names.h"
#include "train/training_model.h"

namespace tach {

namespace {

// 16 rather than 16.000000.
std::string shortest(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string claim_run_dir(const std::string& runs_dir, const std::string& model, const std::string& wanted) {
  std::error_code ec;
  fs::create_directories(runs_dir, ec);
  check(!ec, runs_dir + ": cannot create (" + ec.message() + ")");
  if (!wanted.empty()) {
    const fs::path p = fs::path(runs_dir) / wanted;
    check(!fs::exists(p), p.string() + " exists already: pick another --run-id, or continue it with --resume " +
                              p.string());
    fs::create_directories(p, ec);
    check(!ec, p.string() + ": cannot create (" + ec.message() + ")");
    return p.string();
  }
  const std::string base = "train-" + train::utc_stamp() + "-" + train::model_name_for_runs(model);
  for (int n = 1; n < 1000; ++n) {
    const fs::path p = fs::path(runs_dir) / (n == 1 ? base : base + "-" + std::to_string(n));
    if (fs::create_directory(p, ec)) return p.string();
  }
  throw Error(runs_dir + ": no free run directory name for " + base);
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  check(static_cast<bool>(in), path + ": cannot read");
  try {
    return nlohmann::json::parse(in);
  } catch (const std::exception& e) {
    throw Error(path + ": " + e.what());
  }
}

// Keeps the lines of a steps.jsonl (or the rows of a CSV) that a resumed run still stands by.
void keep_lines(const std::string& path, const std::function<bool(const std::string&, size_t)>& keep) {
  std::ifstream in(path);
  if (!in) return;
  std::string line, kept;
  for (size_t i = 0; std::getline(in, line); ++i)
    if (keep(line, i)) kept += line + "\n";
  in.close();
  model::write_file_atomically(path, kept);
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : 0.5 * (v[v.size() / 2 - 1] + v[v.size() / 2]);
}

// The 90th percentile, linear between order statistics (numpy's default).
double p90(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const double at = 0.9 * double(v.size() - 1);
  const size_t lo = size_t(at);
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (at - double(lo)) * (v[hi] - v[lo]);
}

std::string csv_number(double v) {
  if (!std::isfinite(v)) return "";
  std::ostringstream s;
  s.precision(9);
  s << v;
  return s.str();
}

constexpr const char* kEpochHeader =
    "epoch,train_loss,eval_loss,eval_accuracy,eval_macro_f1,epoch_seconds,tokens_per_s,samples_per_s,peak_memory_bytes";

}  // namespace

TrainResult run_training(TrainOptions o, const TrainObserver& observer) {
  auto note = [&](const std::string& m) {
    if (observer.on_note) observer.on_note(m);
  };
  TrainResult result;
  std::string run_dir;
  nlohmann::json resume_state = nlohmann::json::object();
  std::string resume_checkpoint;
  if (!o.resume.empty()) {
    // A resumed run continues with the options it started with; nothing given now overrides them.
    run_dir = o.resume;
    const nlohmann::json config = read_json(run_dir + "/config.json");
    check(config.value("schema", "") == "tach.train_config/1", run_dir + "/config.json is not a tach train run");
    o = train::options_from_json(config.at("options"), run_dir + "/config.json");
    o.resume = run_dir;
    resume_checkpoint = train::latest_run_checkpoint(run_dir);
  }
  train::validate_options(o);
  if (o.threads > 0) core::set_num_threads(o.threads);
  // Mixed precision for this run's GEMMs (cpu/train_gemm.h); restored when the run ends.
  const cpu::TrainPrecisionScope precision(o.dtype == "bf16" ? cpu::TrainPrecision::bf16 : cpu::TrainPrecision::f32);
  if (o.dtype == "bf16") note(train::bf16_training_note());

  // The model, its labels and the data.
  train::TrainingModelSource src = train::open_training_model(o.model, o.seed);
  std::vector<std::string> labels = src.id2label();
  std::string problem_type = src.problem_type();
  DatasetOptions train_source = o.data;
  if (train_source.split.empty()) train_source.split = "train";  // JSON split files: train on "train", not "test"
  Dataset train_set = read_dataset(train_source);
  if (o.max_samples > 0 && int64_t(train_set.examples.size()) > o.max_samples) train_set.examples.resize(size_t(o.max_samples));
  std::vector<std::string> head_notes;
  // Training on from a peft adapter: its head (modules_to_save) decides the labels' count.
  std::shared_ptr<model::PeftAdapter> adapter;
  int64_t adapter_head_rows = 0;
  if (!o.adapter.empty()) {
    adapter = model::PeftAdapter::open(o.adapter);
    adapter_head_rows = std::max(adapter->head_rows("classifier.weight"), adapter->head_rows("score.weight"));
    if (adapter_head_rows > 0 && !adapter->id2label().empty()) labels = adapter->id2label();
  }
  if (!src.checkpoint_has_head && !(adapter && !adapter->id2label().empty() && adapter_head_rows > 0)) {
    // A new head: its labels come from --labels or the data, its problem type from --problem-type.
    problem_type = o.problem_type.empty() ? "single_label_classification" : o.problem_type;
    labels = o.labels.empty() ? train::labels_from_data(train_set, problem_type == "multi_label_classification")
                              : o.labels;
    if (problem_type == "regression") labels = {"LABEL_0"};
  } else {
    check(o.labels.empty() || o.labels == labels,
          "--labels names a new head, but " + o.model + " already has one (" + std::to_string(labels.size()) +
              " labels); drop --labels to train it");
  }
  if (problem_type.empty()) problem_type = labels.size() == 1 ? "regression" : "single_label_classification";
  check(adapter_head_rows == 0 || int64_t(labels.size()) == adapter_head_rows,
        "the adapter in " + o.adapter + " has a head for " + std::to_string(adapter_head_rows) + " labels, but " +
            std::to_string(labels.size()) + " come from " + (src.checkpoint_has_head ? o.model : "the data"));
  const std::unique_ptr<train::TrainableModel> model_ptr =
      train::build_trainable_model(src, labels, problem_type, o.seed, &head_notes);
  train::TrainableModel& model = *model_ptr;
  if (o.method == "lora" || o.method == "qlora") {
    train::LoraOptions lo;
    lo.r = o.lora_r;
    lo.alpha = float(o.lora_alpha);
    lo.dropout = float(o.lora_dropout);
    lo.target_modules = o.lora_target_modules.empty() ? train::default_lora_targets(*src.family)
                                                      : o.lora_target_modules;
    lo.modules_to_save = o.modules_to_save.empty() ? train::default_modules_to_save(*src.family) : o.modules_to_save;
    if (adapter) lo = train::lora_options_of(*adapter);
    train::attach_lora(model, lo, o.seed);
    if (adapter) {
      train::load_peft_adapter_weights(model, o.adapter);
      head_notes.push_back("LoRA: continuing " + adapter->describe().substr(0, adapter->describe().find(')') + 1) +
                           "; its options replace the --lora-* flags");
    }
    head_notes.push_back("LoRA: r " + std::to_string(lo.r) + ", alpha " + shortest(lo.alpha) + ", " +
                         std::to_string(model.lora->adapters.size()) + " adapters; " +
                         std::to_string(model.params.count(true)) + " of " + std::to_string(model.params.count(false)) +
                         " parameters train");
    if (o.method == "qlora") {
      const int64_t before = memory_stats(Device::cpu()).by_category[int(MemoryCategory::weights)].current;
      const int64_t matrices = model.quantize_base_nf4();
      release_cached_memory(Device::cpu());
      const int64_t after = memory_stats(Device::cpu()).by_category[int(MemoryCategory::weights)].current;
      head_notes.push_back("QLoRA: " + std::to_string(matrices) + " frozen weight matrices in NF4 (blocks of 64, " +
                           "double-quantized absmax, as bitsandbytes): " + std::to_string(model.params.nf4_bytes() >> 20) +
                           " MiB; the weights category went from " + std::to_string(before >> 20) + " to " +
                           std::to_string(after >> 20) + " MiB");
    }
  }
  src.store.reset();  // every weight is an f32 master copy now
  for (const auto& n : head_notes) note(n);

  const std::string tokenizer_path = !o.tokenizer.empty() ? o.tokenizer : src.location.dir;
  check(!tokenizer_path.empty(), o.model + " has synthetic weights and no tokenizer files: pass --tokenizer (for "
                                           "BERT and DistilBERT presets, ../shared/tokenizers/bert-base-uncased; for "
                                           "Qwen2 presets, ../shared/tokenizers/qwen2.5)");
  const auto tokenizer = Tokenizer::load(tokenizer_path);
  check(src.pad_token_id() >= 0 || o.batch_size == 1,
        o.model + ": config.json names no pad_token_id, so padded rows of a batch cannot be told apart; set "
                  "pad_token_id in config.json or train with --batch-size 1");
  const auto pad_id = int32_t(std::max<int64_t>(0, src.pad_token_id()));
  const train::TrainData data =
      train::prepare_train_data(train_set, *tokenizer, labels, problem_type, o.max_length,
                                o.padding == "max_length", pad_id, model.uses_token_types());
  train::TrainData eval_data;
  const bool has_eval = !o.eval_data.path.empty();
  if (has_eval) {
    DatasetOptions eo = o.data;
    eo.path = o.eval_data.path;
    eo.split = o.eval_data.split;
    const Dataset eval_set = read_dataset(eo);
    eval_data = train::prepare_train_data(eval_set, *tokenizer, labels, problem_type,
                                          o.eval_max_length > 0 ? o.eval_max_length : o.max_length, false, pad_id,
                                          model.uses_token_types());
  }

  // The schedule of steps.
  const int64_t n = data.size(), B = o.batch_size, A = o.grad_accumulation;
  const int64_t batches_per_epoch = (n + B - 1) / B;
  const int64_t steps_per_epoch = (batches_per_epoch + A - 1) / A;
  const int64_t total_steps = o.max_steps > 0 ? o.max_steps : o.epochs * steps_per_epoch;
  const int64_t warmup_steps = int64_t(std::ceil(o.warmup_ratio * double(total_steps)));
  const train::LinearSchedule schedule{o.lr, warmup_steps, total_steps, o.schedule == "linear"};
  train::AdamWConfig adam;
  adam.beta1 = float(o.adam_beta1);
  adam.beta2 = float(o.adam_beta2);
  adam.eps = float(o.adam_eps);
  adam.weight_decay = float(o.weight_decay);
  const bool fused = o.exec == "fused";
  train::AdamWOptimizer optimizer(model.params, adam,
                                  o.decay_scope == "all" ? train::DecayScope::all : train::DecayScope::trainer, fused);

  // The run directory.
  if (run_dir.empty()) {
    run_dir = claim_run_dir(o.runs_dir, o.model, o.run_id);
    o.run_id = fs::path(run_dir).filename().string();
    const SystemInfo sys = system_info();
    nlohmann::json cfg = {{"schema", "tach.train_config/1"},
                          {"options", train::options_to_json(o)},
                          {"model", {{"source", src.source},
                                     {"architecture", model.architecture()},
                                     {"labels", labels},
                                     {"problem_type", problem_type},
                                     {"parameters", model.params.count(false)},
      {"trainable_parameters", model.params.count(true)},
      {"nf4_weight_bytes", model.params.nf4_bytes()},
                                     {"trainable_parameters", model.params.count(true)},
                                     {"notes", head_notes}}},
                          {"data", {{"train_examples", n}, {"eval_examples", eval_data.size()},
                                    {"batches_per_epoch", batches_per_epoch}, {"steps_per_epoch", steps_per_epoch},
                                    {"total_steps", total_steps}, {"warmup_steps", warmup_steps}}},
                          {"precision", {{"dtype", o.dtype},
                                         {"gemm", o.dtype == "f32" ? "f32"
                                                  : cpu::bf16_train_gemm_native()
                                                      ? "bf16 inputs, f32 accumulation (oneDNN bf16 matmul)"
                                                      : "bf16 emulated: inputs rounded to bf16, f32 GEMM"}}},
                          {"machine", {{"cpu", sys.cpu_model}, {"threads", core::num_threads()},
                                       {"isa", sys.isa.summary()}, {"gemm", sys.gemm_library}}}};
    model::write_file_atomically(run_dir + "/config.json", cfg.dump(2) + "\n");
  }
  result.run_dir = run_dir;
  const std::string steps_path = run_dir + "/steps.jsonl", epochs_path = run_dir + "/epoch_results.csv";

  int64_t start_step = 0;
  double train_seconds_before = 0;
  if (!resume_checkpoint.empty()) {
    resume_state = train::load_run_checkpoint(resume_checkpoint, model.params, optimizer);
    start_step = resume_state.at("step").get<int64_t>();
    train_seconds_before = resume_state.value("train_seconds", 0.0);
    result.resumed_from = start_step;
    // Steps logged after the checkpoint are done again: drop them, and epochs that ended after it.
    keep_lines(steps_path, [&](const std::string& line, size_t) {
      try {
        return nlohmann::json::parse(line).at("step").get<int64_t>() < start_step;
      } catch (const std::exception&) {
        return false;  // a line cut short by the kill
      }
    });
    const int64_t epochs_done = start_step / steps_per_epoch;  // epochs 0 .. epochs_done - 1 are complete
    keep_lines(epochs_path, [&](const std::string& line, size_t i) {
      return i == 0 || std::atoll(line.c_str()) < epochs_done;  // epochs that ended by the checkpoint
    });
    note("resuming " + run_dir + " after step " + std::to_string(start_step) + " (" + resume_checkpoint + ")");
  } else if (!o.resume.empty()) {
    note("no checkpoint in " + run_dir + " yet: starting it from step 0");
    std::error_code ec;
    fs::remove(steps_path, ec);
    fs::remove(epochs_path, ec);
  }
  if (!fs::exists(epochs_path)) model::write_file_atomically(epochs_path, std::string(kEpochHeader) + "\n");
  TrainingLogger logger(steps_path, start_step > 0);

  // The profiler records the schedule's active steps always (for the summary's top ops); traces
  // are written only with --profile.
  ProfilerOptions popts;
  popts.schedule.wait = int(o.profiler_wait);
  popts.schedule.warmup = int(o.profiler_warmup);
  popts.schedule.active = int(o.profiler_active);
  popts.schedule.repeat = int(o.profiler_repeat);
  popts.memory_logging = true;
  popts.memory_log_steps = o.memory_logging ? int(o.memory_log_steps) : 1;
  Profiler profiler(popts);

  // The loop.
  const std::unique_ptr<train::ForwardState> forward_state = model.new_state(fused);
  forward_state->checkpoint = o.gradient_checkpointing;
  train::DropoutRates rates = o.dropout ? src.dropout() : train::DropoutRates{};
  rates.seed = o.seed;
  if (o.dropout && model.lora) rates.lora = float(o.lora_dropout);
  std::vector<double> step_ms, data_ms, fwd_ms, bwd_ms, opt_ms, tok_rates, sample_rates;
  std::vector<int64_t> epoch_order_cache;
  int64_t cached_epoch = -1;
  std::vector<int64_t> order;
  double epoch_loss_sum = resume_state.value("epoch_loss_sum", 0.0);
  int64_t epoch_loss_count = resume_state.value("epoch_loss_count", int64_t(0));
  int64_t epoch_tokens = resume_state.value("epoch_tokens", int64_t(0)), epoch_samples = resume_state.value("epoch_samples", int64_t(0));
  double epoch_seconds = resume_state.value("epoch_seconds", 0.0);
  const auto run_start = Clock::now();
  reset_memory_peaks(Device::cpu());
  // Peaks are reset per epoch (epoch_results.csv has each epoch's); the run's are folded here.
  std::array<int64_t, kMemoryCategoryCount> run_peak_by_category{};
  int64_t run_peak_total = 0;
  const auto fold_peaks = [&] {
    const MemoryStats now = memory_stats(Device::cpu());
    run_peak_total = std::max(run_peak_total, now.total.peak);
    for (int c = 0; c < kMemoryCategoryCount; ++c)
      run_peak_by_category[size_t(c)] = std::max(run_peak_by_category[size_t(c)], now.by_category[size_t(c)].peak);
  };
  profiler.start();
  int64_t step = start_step;
  for (; step < total_steps; ++step) {
    const auto t_step = Clock::now();
    const int64_t epoch = step / steps_per_epoch, in_epoch = step % steps_per_epoch;
    if (epoch != cached_epoch) {
      order = train::epoch_order(n, o.seed, epoch, o.shuffle);
      cached_epoch = epoch;
    }
    model.params.zero_grad();
    double loss_sum = 0, t_data = 0, t_fwd = 0, t_bwd = 0;
    int64_t tokens = 0, samples = 0, micro = 0;
    const int64_t first_batch = in_epoch * A, last_batch = std::min(batches_per_epoch, first_batch + A);
    const int64_t micro_batches = last_batch - first_batch;
    for (int64_t b = first_batch; b < last_batch; ++b, ++micro) {
      auto t0 = Clock::now();
      TokenBatch batch;
      train::Targets targets;
      {
        ProfileScope scope("data");
        std::vector<int64_t> idx(order.begin() + b * B, order.begin() + std::min(n, (b + 1) * B));
        train::make_batch(data, idx, &batch, &targets);
      }
      t_data += seconds_since(t0);
      t0 = Clock::now();
      train::DropoutRates r = rates;
      r.micro_batch = step * A + micro;
      train::PhaseSeconds phase;
      loss_sum += train::forward_backward(model, *forward_state, batch, targets, problem_type, r, 1.0f / float(micro_batches),
                                          &phase);
      t_fwd += phase.forward;
      t_bwd += phase.backward;
      tokens += batch.real_tokens();
      samples += batch.batch();
    }
    const double loss = loss_sum / double(micro_batches);
    auto t0 = Clock::now();
    const double grad_norm = !std::isfinite(loss) ? loss
                                                   : train::clip_and_update(model.params, optimizer, schedule.lr(step),
                                                                            o.max_grad_norm);
    if (!std::isfinite(loss) || !std::isfinite(grad_norm)) {
      result.diverged = true;
      result.divergence = "step " + std::to_string(step) + ": the " +
                          (!std::isfinite(loss) ? "loss is " + std::to_string(loss)
                                                : "gradient norm is " + std::to_string(grad_norm)) +
                          "; training stopped before the update, the weights of step " + std::to_string(step) +
                          " are kept, and the last checkpoint in " + run_dir + " is untouched";
      break;
    }
    const double t_opt = seconds_since(t0);
    const double t_total = seconds_since(t_step);
    const bool profiled = profiler.recording();
    profiler.step();

    const MemoryStats mem = memory_stats(Device::cpu());
    std::map<std::string, double> m = {
        {"epoch", double(epoch)}, {"loss", loss}, {"lr", schedule.lr(step)}, {"grad_norm", grad_norm},
        {"step_ms", t_total * 1e3}, {"data_ms", t_data * 1e3}, {"forward_ms", t_fwd * 1e3},
        {"backward_ms", t_bwd * 1e3}, {"optimizer_ms", t_opt * 1e3}, {"samples", double(samples)},
        {"tokens", double(tokens)}, {"tokens_per_s", double(tokens) / t_total},
        {"samples_per_s", double(samples) / t_total}, {"profiled", profiled ? 1.0 : 0.0},
        {"memory_total_bytes", double(mem.total.current)}, {"memory_peak_bytes", double(mem.total.peak)}};
    for (int c = 0; c < kMemoryCategoryCount; ++c)
      m[std::string("memory_") + std::string(memory_category_name(MemoryCategory(c))) + "_bytes"] =
          double(mem.by_category[size_t(c)].current);
    if (o.memory_logging && step % o.memory_log_steps == 0) m["rss_bytes"] = double(read_process_memory().rss_bytes);
    logger.log_step(step, m);
    step_ms.push_back(t_total * 1e3);
    data_ms.push_back(t_data * 1e3);
    fwd_ms.push_back(t_fwd * 1e3);
    bwd_ms.push_back(t_bwd * 1e3);
    opt_ms.push_back(t_opt * 1e3);
    tok_rates.push_back(double(tokens) / t_total);
    sample_rates.push_back(double(samples) / t_total);
    epoch_loss_sum += loss;
    ++epoch_loss_count;
    epoch_tokens += tokens;
    epoch_samples += samples;
    epoch_seconds += t_total;
    if (observer.on_step) {
      const double elapsed = seconds_since(run_start);
      const double done = double(step - start_step + 1);
      observer.on_step({step + 1, total_steps, epoch, loss, schedule.lr(step), grad_norm, double(tokens) / t_total,
                        elapsed / done * double(total_steps - step - 1)});
    }

    const bool epoch_end = in_epoch == steps_per_epoch - 1 || step == total_steps - 1;
    train::EvalScores scores;
    bool evaluated = false;
    if (has_eval && ((o.eval_every > 0 && (step + 1) % o.eval_every == 0) || (o.eval_every == 0 && epoch_end))) {
      scores = train::evaluate_trainable(model, eval_data, std::max<int64_t>(B, 32), problem_type);
      evaluated = true;
      logger.log_step(step, {{"eval_loss", scores.loss}, {"eval_accuracy", scores.accuracy},
                             {"eval_macro_f1", scores.macro_f1}, {"eval_seconds", scores.seconds}});
      note("step " + std::to_string(step + 1) + ": eval loss " + std::to_string(scores.loss) +
           (scores.accuracy >= 0 ? ", accuracy " + std::to_string(scores.accuracy) : std::string()));
    }
    if (epoch_end) {
      TrainEpochReport er;
      er.epoch = epoch;
      er.train_loss = epoch_loss_sum / double(std::max<int64_t>(1, epoch_loss_count));
      er.evaluated = evaluated;
      if (evaluated) {
        er.eval_loss = scores.loss;
        er.eval_accuracy = scores.accuracy;
        er.eval_macro_f1 = scores.macro_f1;
      }
      er.seconds = epoch_seconds;
      er.tokens_per_s = double(epoch_tokens) / epoch_seconds;
      er.samples_per_s = double(epoch_samples) / epoch_seconds;
      er.peak_bytes = memory_stats(Device::cpu()).total.peak;
      result.epochs.push_back(er);
      std::ifstream in(epochs_path);
      std::stringstream rows;
      rows << in.rdbuf();
      rows << er.epoch << "," << csv_number(er.train_loss) << "," << (evaluated ? csv_number(er.eval_loss) : "") << ","
           << (evaluated && er.eval_accuracy >= 0 ? csv_number(er.eval_accuracy) : "") << ","
           << (evaluated && er.eval_macro_f1 >= 0 ? csv_number(er.eval_macro_f1) : "") << ","
           << csv_number(er.seconds) << "," << csv_number(er.tokens_per_s) << "," << csv_number(er.samples_per_s) << ","
           << er.peak_bytes << "\n";
      model::write_file_atomically(epochs_path, rows.str());
      epoch_loss_sum = 0;
      epoch_loss_count = 0;
      epoch_tokens = epoch_samples = 0;
      epoch_seconds = 0;
      fold_peaks();
      reset_memory_peaks(Device::cpu());
    }
    const bool checkpoint = (o.save_every > 0 && (step + 1) % o.save_every == 0) || (o.save_every == 0 && epoch_end);
    if (checkpoint) {
      const nlohmann::json state = {{"step", step + 1},
                                    {"optimizer_steps", optimizer.steps()},
                                    {"train_seconds", train_seconds_before + seconds_since(run_start)},
                                    {"epoch_loss_sum", epoch_loss_sum},
                                    {"epoch_loss_count", epoch_loss_count},
                                    {"epoch_tokens", epoch_tokens},
                                    {"epoch_samples", epoch_samples},
                                    {"epoch_seconds", epoch_seconds}};
      train::save_run_checkpoint(run_dir, step + 1, model.params, optimizer, state);
    }
  }
  profiler.stop();
  result.steps = step;
  result.train_seconds = train_seconds_before + seconds_since(run_start);
  result.step_ms_median = median(step_ms);

  if (!result.diverged) {
    result.saved_model = o.save_dir.empty() ? run_dir + "/model" : o.save_dir;
    if (model.lora)
      train::save_peft_adapter(result.saved_model, model,
                               src.location.dir.empty() ? o.model : fs::absolute(src.location.dir).string());
    else
      train::save_hf_model(result.saved_model, model, src.config_json, problem_type, tokenizer_path);
  }

  // The summary, with the top ops of the profiled training steps.
  const ProfileData pdata = profiler.data();
  nlohmann::json top = nlohmann::json::array();
  const MachineCeilings ceilings = machine_ceilings(false);
  if (!pdata.events.empty()) {
    const auto rows = op_table(pdata, "op", "self", ceilings);
    for (size_t i = 0; i < rows.size() && i < 12; ++i)
      top.push_back({{"op", rows[i].key}, {"calls", rows[i].calls}, {"self_ms", rows[i].self_ns / 1e6},
                     {"percent_of_steps", rows[i].percent_of_steps},
                     {"bound", bound_name(rows[i].verdict.bound)},
                     {"achieved_fraction", rows[i].verdict.achieved_fraction}});
    if (o.profile) {
      const std::string dir = o.profiler_output_dir.empty() ? run_dir + "/traces" : o.profiler_output_dir;
      fs::create_directories(dir);
      write_chrome_trace(pdata, dir + "/train_steps.trace.json.gz");
      model::write_file_atomically(dir + "/op_table.txt", op_table_text(op_table(pdata, "op", "self", ceilings), 40) +
                                                               "\n" +
                                                               op_table_text(op_table(pdata, "module", "self", ceilings), 40));
    }
  }
  fold_peaks();
  nlohmann::json by_cat = nlohmann::json::object();
  for (int c = 0; c < kMemoryCategoryCount; ++c) {
    by_cat[std::string(memory_category_name(MemoryCategory(c)))] = run_peak_by_category[size_t(c)];
    result.peak_bytes_by_category[std::string(memory_category_name(MemoryCategory(c)))] = run_peak_by_category[size_t(c)];
  }
  result.peak_bytes = run_peak_total;
  result.step_ms_p90 = p90(step_ms);
  result.tokens_per_s_median = median(tok_rates);
  result.samples_per_s_median = median(sample_rates);
  result.trainable_parameters = model.params.count(true);
  result.total_parameters = model.params.count(false);
  nlohmann::json epochs = nlohmann::json::array();
  for (const auto& e : result.epochs)
    epochs.push_back({{"epoch", e.epoch}, {"train_loss", e.train_loss},
                      {"eval_loss", e.evaluated ? nlohmann::json(e.eval_loss) : nlohmann::json(nullptr)},
                      {"eval_accuracy", e.evaluated && e.eval_accuracy >= 0 ? nlohmann::json(e.eval_accuracy) : nlohmann::json(nullptr)},
                      {"eval_macro_f1", e.evaluated && e.eval_macro_f1 >= 0 ? nlohmann::json(e.eval_macro_f1) : nlohmann::json(nullptr)},
                      {"seconds", e.seconds}, {"tokens_per_s", e.tokens_per_s}});
  const nlohmann::json summary = {
      {"schema", "tach.train_summary/1"},
      {"run_dir", run_dir},
      {"steps", result.steps},
      {"total_steps", total_steps},
      {"resumed_from_step", result.resumed_from},
      {"exec", o.exec},
      {"diverged", result.diverged},
      {"divergence", result.divergence},
      {"train_seconds", result.train_seconds},
      {"note_on_timings", "medians over the steps this process ran (a resumed run: after the resume); wall time, "
                          "steady clock; tokens are real (unpadded) tokens"},
      {"method", o.method},
      {"step_ms_median", median(step_ms)},
      {"step_ms_p90", result.step_ms_p90},
      {"samples_per_s_median", result.samples_per_s_median},
      {"phase_ms_median", {{"data", median(data_ms)}, {"forward", median(fwd_ms)}, {"backward", median(bwd_ms)},
                           {"optimizer", median(opt_ms)}}},
      {"tokens_per_s_median", median(tok_rates)},
      {"epochs", epochs},
      {"memory_peak_bytes", {{"total", run_peak_total}, {"by_category", by_cat},
                             {"method", "tach's allocator, exact bytes, from the first step to the end (evaluation "
                                        "included); the model's own weights, gradients and AdamW moments are f32"}}},
      {"optimizer_state_bytes", optimizer.state_bytes()},
      {"parameters", model.params.count(false)},
      {"top_ops", top},
      {"profiled_steps", popts.schedule.describe()},
      {"saved_model", result.saved_model}};
  model::write_file_atomically(run_dir + "/summary.json", summary.dump(2) + "\n");
  return result;
}

}  // namespace tach
