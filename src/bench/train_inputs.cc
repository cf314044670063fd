// The dataset of a training sweep: read, labelled against the model's head, tokenized per length.
#include <algorithm>

#include "bench/bench_internal.h"
#include "tach/error.h"
#include "train/training_model.h"

namespace tach::bench {

TrainInputs read_train_inputs(const BenchConfig& config) {
  TrainInputs in;
  DatasetOptions d = config.dataset;
  if (d.split.empty()) d.split = "train";  // JSON split files: steps train on "train", as tach train's do
  in.dataset = read_dataset(d);
  check(!in.dataset.examples.empty(), config.dataset.path + ": no examples to train on");
  if (config.limit > 0 && int64_t(in.dataset.examples.size()) > config.limit)
    in.dataset.examples.resize(size_t(config.limit));
  in.name = "dataset " + config.dataset.path + (in.dataset.split.empty() ? "" : " (split " + in.dataset.split + ")");
  // The head's labels and the tokenizer: the model is opened for its config, not built.
  const train::TrainingModelSource src = train::open_training_model(config.model, config.seed);
  in.problem_type = src.problem_type().empty() ? "single_label_classification" : src.problem_type();
  in.labels = src.checkpoint_has_head
                  ? src.id2label()
                  : train::labels_from_data(in.dataset, in.problem_type == "multi_label_classification");
  if (!src.checkpoint_has_head && in.problem_type == "regression") in.labels = {"LABEL_0"};
  in.pad_id = int32_t(std::max<int64_t>(0, src.pad_token_id()));
  in.with_types = src.family && src.family->encoder && src.family->encoder->token_types;
  std::string path = config.tokenizer;
  if (path.empty()) {
    check(!src.location.dir.empty(),
          missing_tokenizer_message(config.model, src.family ? src.family->tokenizer_hint : ""));
    path = src.location.dir;
  }
  in.tokenizer = Tokenizer::load(path);
  return in;
}

const train::TrainData& TrainInputs::data_for(int64_t seq_len) const {
  auto it = by_length.find(seq_len);
  if (it == by_length.end())
    it = by_length
             .emplace(seq_len, train::prepare_train_data(dataset, *tokenizer, labels, problem_type, seq_len, false,
                                                         pad_id, with_types))
             .first;
  return it->second;
}

}  // namespace tach::bench
