#include "bench/task_eval_setup.h"

#include "bench/bench_internal.h"
#include "model/checkpoint.h"
#include "model/family.h"
#include "tach/error.h"
#include "tach/runtime.h"

namespace tach::bench {

bool evaluates_head(const BenchConfig& config, Head head, const std::string& architecture_suffix) {
  if (config.head != "auto") {
    const std::optional<Head> named = parse_head(config.head);
    return named && *named == head;
  }
  const std::string name = model::summarize_architecture(model::resolve_model(config.model)).name;
  return name.size() >= architecture_suffix.size() &&
         name.compare(name.size() - architecture_suffix.size(), architecture_suffix.size(), architecture_suffix) == 0;
}

void prepare_task_eval(BenchConfig& config, const std::string& needs_dataset, std::vector<std::string>& notes) {
  usage_check(!config.dataset.path.empty(), needs_dataset);
  usage_check(config.eval_batch_size > 0, "the evaluation batch size must be positive");
  usage_check(config.threads.size() <= 1, "tach eval runs its pass with one thread count: give -t once");
  const std::string auto_note = resolve_auto_device(config);
  if (!auto_note.empty()) notes.push_back(auto_note);
  if (!config.threads.empty() && config.threads.front() > 0) set_threads(int(config.threads.front()));
}

std::unique_ptr<Model> load_eval_model(const BenchConfig& config, const std::string& device, const std::string& dtype) {
  LoadOptions lo;
  lo.device = parse_device(device);
  lo.compute = parse_compute_dtype(dtype);
  lo.allow_tf32 = config.allow_tf32;  // a bench run's accuracy pass at its points' precision
  lo.seed = config.seed;
  lo.adapter = config.adapter;
  lo.head = parse_head(config.head);
  return load_model(config.model, lo);
}

std::unique_ptr<Model> load_first_eval_model(const BenchConfig& config, Head head, const std::string& metrics,
                                             std::vector<std::string>& notes) {
  auto model = load_eval_model(config, config.devices.front(), config.dtypes.front());
  const ModelInfo& info = model->info();
  check(info.head == head, config.model + " runs a " + head_name(info.head) + " head (" + info.architecture +
                               "): " + metrics + " need a " +
                               (head == Head::token_classification ? std::string("token classifier")
                                                                   : std::string(head_name(head)) + " model") +
                               " (--head " + head_name(head) + " builds a new one)");
  notes.insert(notes.end(), info.notes.begin(), info.notes.end());
  return model;
}

}  // namespace tach::bench
