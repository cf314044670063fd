#include "train/save_model.h"

#include <filesystem>

#include "model/safetensors_writer.h"
#include "tach/error.h"

namespace tach::train {

namespace fs = std::filesystem;

nlohmann::json trained_config(const TrainableModel& m, const nlohmann::json& source_config,
                              const std::string& problem_type) {
  nlohmann::json c = source_config;
  c["architectures"] = {m.architecture()};
  nlohmann::json id2label = nlohmann::json::object(), label2id = nlohmann::json::object();
  for (size_t i = 0; i < m.labels().size(); ++i) {
    id2label[std::to_string(i)] = m.labels()[i];
    label2id[m.labels()[i]] = i;
  }
  if (m.head() == Head::question_answering && c.contains("id2label") && c["id2label"].size() != 2) {
    // …ForQuestionAnswering sizes its start/end head by num_labels: a source with another head's
    // labels (a token classifier's) gets transformers' default two, or the model would not load.
    c["id2label"] = {{"0", "LABEL_0"}, {"1", "LABEL_1"}};
    c["label2id"] = {{"LABEL_0", 0}, {"LABEL_1", 1}};
    c.erase("num_labels");
  }
  if (m.head() != Head::sequence_classification && m.head() != Head::token_classification) {
    // Question answering and the masked LM have no labels of their own: the source's (or
    // transformers' default) stay.
    c["dtype"] = "float32";
    c.erase("torch_dtype");
    return c;
  }
  c["id2label"] = id2label;
  c["label2id"] = label2id;
  c.erase("num_labels");  // implied by id2label; a stale value would contradict it
  if (m.head() == Head::sequence_classification) c["problem_type"] = problem_type;
  c["dtype"] = "float32";
  c.erase("torch_dtype");
  return c;
}

void save_hf_model(const std::string& dir, const TrainableModel& m, const nlohmann::json& source_config,
                   const std::string& problem_type, const std::string& tokenizer_dir) {
  const nlohmann::json config = trained_config(m, source_config, problem_type);
  model::write_directory_atomically(dir, [&](const std::string& tmp) {
    std::vector<std::pair<std::string, Tensor>> tensors;
    for (const auto& p : m.params.entries()) tensors.emplace_back(p.name, p.value.contiguous());
    model::write_safetensors(tmp + "/model.safetensors", tensors, {{"format", "pt"}});
    model::write_file_atomically(tmp + "/config.json", config.dump(2) + "\n");
    if (!tokenizer_dir.empty()) model::copy_tokenizer_files(tokenizer_dir, tmp);
  });
}

}  // namespace tach::train
