// What every per-token head's eval pass (token classification, question answering) does before it
// reads its data: the usage checks, the device resolved, the threads set, and the first pass's
// model loaded and checked to run the head the metrics need.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "tach/bench.h"
#include "tach/model.h"

namespace tach::bench {

// Whether the run evaluates `head`: --head names it, or (--head auto) the model's architecture ends
// in `architecture_suffix` ("ForTokenClassification", "ForQuestionAnswering"). Reads the model's
// config only, loading nothing.
bool evaluates_head(const BenchConfig& config, Head head, const std::string& architecture_suffix);

// Checks the options one pass needs (a dataset, `needs_dataset` says which kind), resolves
// `auto` devices and sets the threads; notes for the user are appended to `notes`.
void prepare_task_eval(BenchConfig& config, const std::string& needs_dataset, std::vector<std::string>& notes);

// The model of one pass (device, dtype) with the run's seed, adapter and --head.
std::unique_ptr<Model> load_eval_model(const BenchConfig& config, const std::string& device, const std::string& dtype);

// The first pass's model, refused unless it runs `head`; `metrics` names what needs it ("SQuAD's
// scores", "seqeval's metrics"). What loading said (a head built new, as transformers' "newly
// initialized" note says, a head's tensors left out) is appended to `notes`, for the terminal and
// the summary.
std::unique_ptr<Model> load_first_eval_model(const BenchConfig& config, Head head, const std::string& metrics,
                                             std::vector<std::string>& notes);

}  // namespace tach::bench
