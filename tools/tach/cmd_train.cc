// tach train: fine-tune a sequence classifier of any family tach builds on tach's own engine.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "commands.h"
#include "dataset_options.h"
#include "format.h"
#include "head_option.h"
#include "progress.h"
#include "tach/error.h"
#include "tach/model_families.h"
#include "tach/parameter_count.h"
#include "tach/plain_number.h"
#include "tach/train.h"
#include "usage.h"

namespace tach::cli {

namespace {

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c != ',') {
      cur += c;
    } else if (!cur.empty()) {
      out.push_back(cur);
      cur.clear();
    }
  }
  return out;
}

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? s + " " : s + std::string(w - s.size(), ' '); }

// --method a,b --exec c,d: every combination, then the table (also summary.json and .csv).
int run_comparison(const TrainOptions& options, const TrainObserver& obs) {
  const TrainComparison c =
      run_training_comparison(options, split_commas(options.method), split_commas(options.exec), obs);
  std::cout << "\ncomparison (" << c.rows.size() << " runs; step latency wall time per optimizer step, tokens are "
            << "real tokens, memory is tach's allocator's peak over the run)\n";
  std::cout << pad("method", 7) << pad("exec", 6) << pad("trainable", 12) << pad("total", 12) << pad("step ms p50", 12)
            << pad("p90", 9) << pad("tokens/s", 10) << pad("samples/s", 10) << pad("epoch s", 9) << pad("dev acc", 8)
            << pad("peak", 11) << pad("weights", 11) << pad("grads", 11) << pad("optimizer", 11) << "activations\n";
  for (const auto& r : c.rows) {
    const TrainResult& t = r.result;
    auto cat = [&](const char* k) {
      auto it = t.peak_bytes_by_category.find(k);
      return human_bytes(it == t.peak_bytes_by_category.end() ? 0.0 : double(it->second));
    };
    std::string acc = "-";
    for (auto it = t.epochs.rbegin(); it != t.epochs.rend(); ++it)
      if (it->evaluated && it->eval_accuracy >= 0) {
        acc = fixed(it->eval_accuracy, 4);
        break;
      }
    std::cout << pad(r.method, 7) << pad(r.exec, 6) << pad(parameter_count_text(t.trainable_parameters), 12)
              << pad(parameter_count_text(t.total_parameters), 12) << pad(fixed(t.step_ms_median, 1), 12)
              << pad(fixed(t.step_ms_p90, 1), 9) << pad(fixed(t.tokens_per_s_median, 0), 10)
              << pad(fixed(t.samples_per_s_median, 1), 10)
              << pad(t.epochs.empty() ? "-" : fixed(t.epochs.back().seconds, 1), 9) << pad(acc, 8)
              << pad(human_bytes(double(t.peak_bytes)), 11) << pad(cat("weights"), 11) << pad(cat("gradients"), 11)
              << pad(cat("optimizer_state"), 11) << cat("activations") << "\n";
  }
  std::cout << "written: " << c.dir << "/{summary.json, comparison.csv} and one run directory per row\n";
  for (const auto& r : c.rows)
    if (r.result.diverged) return 1;
  return 0;
}

std::string key_to_flag(const std::string& key) {
  std::string f = "--" + key;
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

using Options = std::shared_ptr<TrainOptions>;

// -m, -d and the data's columns, the head's labels and --task with its options.
void add_model_and_task_options(CLI::App* sub, const Options& o, const std::shared_ptr<std::string>& config_file,
                                const std::shared_ptr<std::string>& head) {
  sub->add_option("-c,--config", *config_file,
                  "YAML file of these options (keys as the flags, '_' for '-'); flags "
                  "given here override it");
  sub->add_option("-m,--model", o->model, "preset:NAME, a model directory, or ORG/NAME from the hub cache");
  sub->add_option("-k,--tokenizer", o->tokenizer, "Tokenizer file or directory (default: the model's directory)");
  sub->add_option("-d,--dataset", o->data.path,
                  "Training data: .csv, .tsv, .jsonl, .parquet, .json with splits, or a Hub dataset (glue/sst2, "
                  "hf://datasets/ORG/NAME[/CONFIG]; Parquet splits through the cache)");
  sub->add_option("--dataset-format", o->data.format,
                  "auto (from the extension), csv, tsv, jsonl, json, parquet; conll (tagged words, --task "
                  "token-classification)");
  add_dataset_column_options(sub, o->data);
  sub->add_option("--split", o->data.split, "Split of a JSON split file or a Hub dataset for training (default train)");
  sub->add_option("--max-samples", o->max_samples, "Train on the first N examples in file order (default all)");
  sub->add_flag("--shuffle,!--no-shuffle", o->shuffle,
                "Reshuffle the examples every epoch, seeded by --seed (default); --no-shuffle keeps file order");
  sub->add_option("--labels", o->labels,
                  "A new head's labels in id order, comma-separated (default: from the data; "
                  "integer labels 0..n-1 become LABEL_0..)")
      ->delimiter(',');
  sub->add_option("--problem-type", o->problem_type,
                  "A new head's problem type: single_label_classification (default), multi_label_classification (each "
                  "label cell a set: a JSON list or comma-separated names) or regression");
  sub->add_option("--task", o->task,
                  "The head that trains: sequence-classification (default; a masked-LM or bare checkpoint gets a "
                  "new classifier; a token-classification or question-answering checkpoint trains its own head, "
                  "saying so), mlm (continued pre-training on the text column; reports perplexity), "
                  "token-classification (CoNLL or JSON tagged words: tokens/ner_tags) or question-answering "
                  "(SQuAD-format data)");
  add_head_option(sub, *head, HeadUse::fine_tune);
  sub->add_option("--mlm-probability", o->mlm_probability,
                  "mlm: share of the tokens chosen for prediction, of which 80% become the mask token, 10% a random "
                  "token, 10% stay (default 0.15)");
  sub->add_flag("--label-all-tokens", o->label_all_tokens,
                "token-classification: every sub-token of a word carries its label (B- as I- after the first); "
                "default: the first sub-token only, the others ignored");
  sub->add_option("--doc-stride", o->doc_stride,
                  "question-answering: tokens shared by consecutive windows of a context longer than --max-length "
                  "(default 128)");
}

// Evaluation, the epochs and steps, AdamW and its schedule, the rows, dropout, precision, execution.
void add_schedule_options(CLI::App* sub, const Options& o) {
  sub->add_option("--eval-dataset", o->eval_data.path, "Evaluation data (same columns as --dataset)");
  sub->add_option("--eval-split", o->eval_data.split, "Split of a JSON split file or a Hub dataset for evaluation");
  sub->add_option("--eval-every", o->eval_every, "Evaluate every N optimizer steps (default 0: at each epoch's end)");
  sub->add_option("--eval-max-length", o->eval_max_length, "Truncation for evaluation (default: --max-length)");
  sub->add_option("--epochs", o->epochs, "Epochs (default 3)");
  sub->add_option("--max-steps", o->max_steps, "Optimizer steps; overrides --epochs (default 0: use epochs)");
  sub->add_option(kBatchOption, o->batch_size, "Examples per micro-batch (default 8)")
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("--gradient-accumulation-steps", o->grad_accumulation,
                  "Micro-batches per optimizer step (default 1)");
  sub->add_option("--lr", o->lr, "Peak learning rate (default 5e-5)");
  sub->add_option("--warmup-ratio", o->warmup_ratio, "Share of the steps spent warming up linearly (default 0)");
  sub->add_option("--schedule", o->schedule, "linear (warm-up, then linear decay to 0; default) or constant");
  sub->add_option("--weight-decay", o->weight_decay, "AdamW's decoupled weight decay (default 0, as the Trainer)");
  sub->add_option("--decay-scope", o->decay_scope,
                  "trainer: no decay on biases and LayerNorm weights (default); all: every parameter, as "
                  "torch.optim.AdamW(model.parameters())");
  sub->add_option("--adam-beta1", o->adam_beta1, "AdamW beta1 (default 0.9)");
  sub->add_option("--adam-beta2", o->adam_beta2, "AdamW beta2 (default 0.999)");
  sub->add_option("--adam-epsilon", o->adam_eps, "AdamW epsilon (default 1e-8)");
  sub->add_option("--max-grad-norm", o->max_grad_norm, "Clip gradients to this global L2 norm; 0 = off (default 1)");
  sub->add_option("-s,--max-length", o->max_length,
                  "Truncate examples to N tokens, specials included (default 128; question-answering: the window, "
                  "default 384 as run_qa.py, or the model's positions when fewer; more than the model's positions is "
                  "an error)");
  sub->add_option("--padding", o->padding, "longest (pad each batch to its longest; default) or max_length");
  sub->add_flag("--dropout,!--no-dropout", o->dropout,
                "Dropout as config.json sets it (default); --no-dropout turns it off in training too");
  sub->add_option("--seed", o->seed, "Seed: data order, dropout masks, a new head's weights (default 42)");
  sub->add_option("--dtype", o->dtype,
                  "f32 (default) or bf16: mixed precision, f32 master weights and optimizer, every GEMM's inputs "
                  "in bf16 with f32 accumulation (as torch.autocast); emulated, with a note, where oneDNN has no "
                  "bf16 matmul for the CPU");
  sub->add_flag("--gradient-checkpointing", o->gradient_checkpointing,
                "Keep only each layer's input in the forward and recompute the layer in the backward (same numbers, "
                "less activation memory, about one more forward of time); summary.json records both");
  sub->add_option("--exec", o->exec,
                  "eager (one op at a time, every intermediate kept; default) or fused (attention recomputes its "
                  "probabilities in the backward, bias+GELU and dropout+residual+LayerNorm in one pass each; AdamW "
                  "is one pass over all parameters in both); eager,fused with a --method list compares them");
}

// --method (full, LoRA, QLoRA) and its adapters.
void add_method_options(CLI::App* sub, const Options& o) {
  sub->add_option("--method", o->method,
                  "full (every parameter trains; default), lora (adapters beside the linears, the base frozen, the "
                  "head trained in full; saved as a PEFT adapter) or qlora (lora with the frozen layer weights in "
                  "NF4, as bitsandbytes quantizes them). A comma-separated list (with --exec eager,fused) runs every "
                  "combination and writes the comparison table");
  sub->add_option("--lora-r", o->lora_r, "LoRA rank (default 8)");
  sub->add_option("--lora-alpha", o->lora_alpha, "LoRA alpha: the adapters scale by alpha / r (default 8)");
  sub->add_option("--lora-dropout", o->lora_dropout, "Dropout on the adapters' inputs (default 0)");
  sub->add_option("--lora-target-modules", o->lora_target_modules,
                  "Linears that get adapters, by their Hugging Face names (default: every linear of the family: "
                  "decoders q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj; BERT query,key,value,dense; "
                  "DistilBERT q_lin,k_lin,v_lin,out_lin,lin1,lin2)")
      ->delimiter(',');
  sub->add_option("--modules-to-save", o->modules_to_save,
                  "Modules trained in full beside the adapters and saved with them (default the family's head: score, "
                  "classifier, or DistilBERT's pre_classifier,classifier; a "
                  "name also matches modules ending in it, as PEFT's)")
      ->delimiter(',');
  sub->add_option("--adapter", o->adapter,
                  "Continue training a peft LoRA adapter (a directory with adapter_config.json and "
                  "adapter_model.safetensors): its r, alpha, dropout, target modules, modules to save and weights "
                  "replace the --lora-* options; needs --method lora or qlora");
}

// Knowledge distillation from a trained teacher.
void add_distill_options(CLI::App* sub, const Options& o) {
  sub->add_option("--distill-from", o->distill_from,
                  "Knowledge distillation: a trained model (preset, directory or hub id; any family with this "
                  "model's head, labels and tokenizer) whose softened outputs join the loss: alpha * T^2 * "
                  "KL(softmax(teacher/T) || softmax(student/T)) + (1 - alpha) * the task loss. It runs inference "
                  "only; its time is the step's \"teacher\" phase");
  sub->add_option("--distill-temperature", o->distill_temperature,
                  "Distillation's temperature T > 0: both sides' logits are divided by it (default 2)");
  sub->add_option("--distill-alpha", o->distill_alpha,
                  "The teacher's weight in [0, 1]; the task loss gets 1 - alpha (default 0.5). Trainer-based "
                  "distillation examples that weigh the task loss by their alpha a take 1 - a here");
  sub->add_option("--distill-dtype", o->distill_dtype,
                  "The teacher's inference dtype: f32 (default), bf16, int8, nf4 (f16 on a GPU)");
}

// The run directory, checkpoints, profiling, TensorBoard, the device, threads and ranks.
void add_run_options(CLI::App* sub, const Options& o, const std::shared_ptr<std::string>& device,
                     const std::shared_ptr<bool>& no_progress) {
  sub->add_option("--runs-dir", o->runs_dir, "Where run directories go (default runs)");
  sub->add_option("--run-id", o->run_id, "Name of the run directory (default: train-<UTC time>-<model>)");
  sub->add_option("--save", o->save_dir, "Where the fine-tuned model goes (default runs/<run_id>/model)");
  sub->add_option("--save-every", o->save_every,
                  "Write a resume checkpoint every N steps (default 0: at each epoch's end)");
  sub->add_option("--resume", o->resume,
                  "Continue a run directory from its last checkpoint, with its own options (a finished run is left "
                  "as it is; one stopped after its last step saves its model)");
  sub->add_flag("--profile", o->profile, "Write Perfetto traces and op tables of the profiled steps to traces/");
  sub->add_option("--profiler-skip-first", o->profiler_skip_first,
                  "Profiler schedule: steps before the first cycle (default 0)");
  sub->add_option("--profiler-wait", o->profiler_wait, "... steps per cycle with the profiler off (default 1)");
  sub->add_option("--profiler-warmup", o->profiler_warmup, "... steps recorded and discarded (default 1)");
  sub->add_option("--profiler-active", o->profiler_active, "... steps recorded and kept (default 3)");
  sub->add_option("--profiler-repeat", o->profiler_repeat, "... cycles; 0 = until the end (default 1)");
  sub->add_option("--profiler-output-dir", o->profiler_output_dir, "Where traces go (default runs/<run_id>/traces)");
  sub->add_flag("--enable-memory-logging", o->memory_logging, "Log the process RSS in steps.jsonl");
  sub->add_option("--memory-log-steps", o->memory_log_steps, "... every N steps (default 10)");
  sub->add_flag("--tensorboard,!--no-tensorboard", o->tensorboard,
                "TensorBoard event files of every step's metrics and the evaluations in RUN_DIR/tensorboard/ "
                "(default on; --no-tensorboard turns them off)");
  sub->add_option("--device", *device,
                  "Where the step runs: cpu (default), cuda, cuda:N, or auto (the first GPU when one is usable, "
                  "else the CPU). Weights, gradients, AdamW moments and activations live there; the loss is read "
                  "once per step, and saved models and checkpoints are copied to the host to be written")
      ->check(device_name(true));
  sub->add_option("-t,--threads", o->threads,
                  "Threads; 0 = the cores other processes leave free at start (default 0; under mpirun, shared among "
                  "the machine's ranks)")
      ->check(thread_count());
  sub->add_option("--dist-timeout", o->dist_timeout,
                  "Under mpirun or srun: seconds a collective may take before the job ends, naming the rank that "
                  "stopped (default 300)");
  sub->add_option("--bucket-mb", o->bucket_mb,
                  "Under mpirun or srun: megabytes of gradients per all-reduce bucket (default 25, as DDP)");
  sub->add_option("--scaling-reference", o->scaling_reference,
                  "A one-process run directory of the same job on the same machine: summary.json gives this "
                  "run's scaling efficiency against it");
  sub->add_flag("--no-progress", *no_progress, "No progress: no bar on a terminal, no line every 10 s elsewhere");
}

// The finished run on the terminal: each epoch, the steps, where things went. Returns the exit code.
int report_result(const TrainResult& res) {
  if (res.world_size > 1)
    std::cout << res.world_size << " ranks: per-rank step times in " << res.run_dir << "/ranks/\n";
  // Distilled: the train loss is the mix of the teacher's term and the task's, said once with its
  // weights; each epoch's task loss (cross-entropy) beside it, comparable with eval loss.
  const bool distilled = res.distill_alpha >= 0;
  if (distilled)
    std::cout << "train loss = distillation mix " << plain_number(res.distill_alpha) << " x T^2 KL + "
              << plain_number(1.0 - res.distill_alpha) << " x task loss, T " << plain_number(res.distill_temperature)
              << " (eval loss: the task loss alone)\n";
  for (const auto& e : res.epochs) {
    std::cout << "epoch " << e.epoch + 1 << ": train loss " << (distilled ? "(mix) " : "") << fixed(e.train_loss, 4);
    if (distilled && e.train_task_loss >= 0)
      std::cout << ", task loss " << fixed(e.train_task_loss, 4) << ", T^2 KL " << fixed(e.train_distill_loss, 4);
    if (e.evaluated)
      std::cout << ", eval loss " << fixed(e.eval_loss, 4)
                << (e.eval_perplexity >= 0 ? ", perplexity " + fixed(e.eval_perplexity, 3) : std::string())
                << (e.eval_accuracy >= 0 ? ", eval accuracy " + fixed(e.eval_accuracy, 4) : std::string())
                << (e.eval_macro_f1 >= 0 ? ", macro-F1 " + fixed(e.eval_macro_f1, 4) : std::string());
    std::cout << ", " << fixed(e.seconds, 1) << " s, " << fixed(e.tokens_per_s, 0) << " tokens/s (real "
              << "tokens, wall time), peak memory " << human_bytes(double(e.peak_bytes));
    // As bench marks a point: its rate is the shared machine's when others took the cores.
    if (e.load.measured && e.load.contended)
      std::cout << "; CONTENDED: other processes used " << fixed(e.load.other_cores_mean, 2) << " of " << e.load.cores
                << " cores beside its " << e.load.threads << " thread(s), so its times are the shared machine's";
    std::cout << "\n";
  }
  std::cout << "steps: " << res.steps
            << (res.resumed_from >= 0 ? " (resumed after step " + std::to_string(res.resumed_from) + ")"
                                      : std::string())
            << ", median step " << fixed(res.step_ms_median, 1) << " ms, training " << fixed(res.train_seconds, 1)
            << " s (wall)\n";
  if (res.teacher_ms_median >= 0)
    std::cout << "teacher: median " << fixed(res.teacher_ms_median, 1) << " ms a step for its inference (the "
              << "\"teacher\" phase), beside the student's forward " << fixed(res.forward_ms_median, 1) << " ms\n";
  if (res.diverged) {
    std::cerr << "tach: training diverged at " << res.divergence << "\n";
    std::cout << "written: " << res.run_dir << "/{config.json, steps.jsonl, epoch_results.csv, summary.json, run.log"
              << (std::filesystem::exists(res.run_dir + "/tensorboard") ? ", tensorboard/" : "") << "}\n";
    return 1;
  }
  std::cout << "model: " << res.saved_model << "\n";
  std::cout << "written: " << res.run_dir << "/{config.json, steps.jsonl, epoch_results.csv, summary.json, run.log"
            << (std::filesystem::exists(res.run_dir + "/tensorboard") ? ", tensorboard/" : "") << "}\n";
  return 0;
}

}  // namespace

Command add_train_command(CLI::App& app) {
  auto o = std::make_shared<TrainOptions>();
  auto config_file = std::make_shared<std::string>();
  auto no_progress = std::make_shared<bool>(false);
  auto head = std::make_shared<std::string>("auto");
  auto device = std::make_shared<std::string>("cpu");
  CLI::App* sub = app.add_subcommand(
      "train", "Fine-tune a sequence classifier of any family tach builds (model_type " + model_types_text() +
                   "), or an encoder's masked LM, token classifier or question answering (--task), on a dataset "
                   "(AdamW, linear warm-up and decay, "
                   "clipping, gradient accumulation); times every step by phase; writes runs/<run_id>/{config.json, "
                   "steps.jsonl, "
                   "epoch_results.csv, summary.json, checkpoint-N/, model/}; --resume continues a killed run");
  add_model_and_task_options(sub, o, config_file, head);
  add_schedule_options(sub, o);
  add_method_options(sub, o);
  add_distill_options(sub, o);
  add_run_options(sub, o, device, no_progress);

  return {sub, [o, config_file, no_progress, head, device, sub] {
            TrainOptions options = *o;
            std::string device_note;
            options.device = training_device(*device, &device_note);
            if (!device_note.empty()) std::cout << device_note << "\n";
            bool task_from_file = false, length_from_file = false, stride_from_file = false;
            if (!config_file->empty()) {
              TrainOptions file;
              load_train_yaml(*config_file, file);
              task_from_file = file.task != TrainOptions{}.task;
              length_from_file = file.max_length != TrainOptions{}.max_length;
              stride_from_file = file.doc_stride != TrainOptions{}.doc_stride;
              merge_train_options(options, file, [sub](const std::string& key) {
                const CLI::Option* opt = sub->get_option_no_throw(key_to_flag(key));
                if (key == "shuffle") opt = sub->get_option_no_throw("--shuffle");
                if (key == "dropout") opt = sub->get_option_no_throw("--dropout");
                return opt != nullptr && opt->count() > 0;
              });
            }
            check_split_applies(options.data, "--split");
            check_split_applies(options.eval_data, "--eval-split");
            // Given on the command line at its default, a teacher's setting is still one without a teacher.
            for (const char* flag : {"--distill-temperature", "--distill-alpha", "--distill-dtype"})
              usage_check(!options.distill_from.empty() || sub->get_option(flag)->count() == 0,
                          std::string(flag) + " needs --distill-from (a teacher to distil from); without one it " +
                              "would be ignored");
            const bool task_given = task_from_file || sub->get_option("--task")->count() > 0;
            options.task = training_task(*head, options.task, task_given);
            // Neither --task nor --head: a token classifier or question-answering checkpoint trains its own head.
            options.task_default = !task_given && *head == "auto";
            // Lengths not given are defaults the run fits to a model with fewer positions (and says so);
            // one given past them is refused before the run directory. Question answering's windows are
            // run_qa.py's max_seq_length, 384, unless told.
            options.max_length_given = sub->get_option("--max-length")->count() > 0 || length_from_file;
            options.doc_stride_default = sub->get_option("--doc-stride")->count() == 0 && !stride_from_file;
            // (A question-answering task taken from the checkpoint's head gets it there.)
            if (options.task == "question-answering" && !options.max_length_given) options.max_length = 384;
            const TrainObserver obs = train_progress(*no_progress);
            if (options.method.find(',') != std::string::npos || options.exec.find(',') != std::string::npos)
              return run_comparison(options, obs);
            const TrainResult res = run_training(options, obs);
            end_train_progress(*no_progress);
            if (res.finished_already) {
              std::cout << res.run_dir << " finished already: " << res.steps << " steps, median step "
                        << fixed(res.step_ms_median, 1) << " ms, model " << res.saved_model
                        << "; nothing to resume, and nothing in it changed\n";
              return 0;
            }
            if (res.rank != 0) return res.diverged ? 1 : 0;  // under mpirun, rank 0 speaks for the job
            return report_result(res);
          }};
}

}  // namespace tach::cli
