// A sentence-transformers model's pipeline, read from its own files: modules.json (the module
// list), 1_Pooling/config.json (the pooling modes), Dense modules (2_Dense/config.json and its
// weights), the Normalize module, and sentence_bert_config.json (max_seq_length, do_lower_case).
#pragma once

#include <map>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ops/pooling.h"

namespace tach::model {

// A Dense module after the pooling: y = act(W x + b), W [out_features, in_features], its weights
// in PATH/model.safetensors as linear.weight and linear.bias (sentence-transformers' names).
struct DenseModule {
  std::string path;  // relative to the model directory
  int64_t in_features = 0, out_features = 0;
  bool bias = true;
  bool tanh = true;  // activation_function Tanh (sentence-transformers' default), else Identity
};

struct SentenceEmbeddingConfig {
  std::vector<ops::PoolingMode> modes = {ops::PoolingMode::mean};
  std::vector<DenseModule> dense;  // after the pooling, in order (LaBSE, sentence-t5, some distilled models)
  bool normalize = false;
  int64_t max_seq_length = 0;       // 0: none given (the model's position limit applies)
  bool do_lower_case = false;       // sentence-transformers lowercases the text before the tokenizer
  int64_t embedding_dimension = 0;  // 1_Pooling's word_embedding_dimension (0: not given)
  std::string source;               // "modules.json" or why the default was taken
  std::string dir;                  // the model directory (where Dense modules' weights are)
  // config_sentence_transformers.json's prompts (name -> text put before each input, as
  // sentence-transformers' encode(prompt_name=...)) and the one used when none is asked for.
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;
  std::string pooling_name() const;  // "mean", "cls+mean", ...
};

// nullopt when dir has no modules.json. A modules.json that names a module tach does not run
// (a second Transformer, a Dense with another activation, ...), or a pooling config with unknown
// modes or an unsupported include_prompt, is an error naming the file and the module.
std::optional<SentenceEmbeddingConfig> read_sentence_embedding_config(const std::string& dir);

// The same from text: modules.json's, and read(path relative to the model directory) for the
// files it points at (nullopt: absent). dir only names files in errors. (The fuzz target's entry.)
using FileReader = std::function<std::optional<std::string>(const std::string& relative_path)>;
SentenceEmbeddingConfig parse_sentence_embedding_config(const std::string& modules_text, const FileReader& read,
                                                        const std::string& dir);

// What sentence-transformers does with a plain transformers model: mean pooling, no normalisation.
SentenceEmbeddingConfig default_sentence_embedding_config();

}  // namespace tach::model
