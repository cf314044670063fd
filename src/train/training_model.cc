#include "train/training_model.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/family.h"
#include "model/presets.h"
#include "tach/error.h"
#include "train/trainable_encoder.h"
#include "train/trainable_qwen2.h"

namespace tach::train {

namespace {

nlohmann::json read_config_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

}  // namespace

const std::vector<std::string>& TrainingModelSource::id2label() const {
  return model_type == "qwen2" ? qwen2.id2label : config.id2label;
}

const std::string& TrainingModelSource::problem_type() const {
  return model_type == "qwen2" ? qwen2.problem_type : config.problem_type;
}

int64_t TrainingModelSource::pad_token_id() const {
  return model_type == "qwen2" ? qwen2.pad_token_id : config.pad_token_id;
}

DropoutRates TrainingModelSource::dropout() const {
  DropoutRates r;
  if (model_type == "qwen2") {
    // Qwen2 has no hidden or classifier dropout; attention_dropout is 0 in every released config.
    r.attention = config_json.value("attention_dropout", 0.0f);
    return r;
  }
  r.hidden = config.hidden_dropout;
  r.attention = config.attention_dropout;
  r.classifier = config.classifier_dropout;
  return r;
}

TrainingModelSource open_training_model(const std::string& spec, uint64_t seed) {
  TrainingModelSource s;
  s.location = model::resolve_model(spec);
  if (s.location.kind == model::ModelLocation::Kind::preset) {
    s.source = "synthetic weights (seed " + std::to_string(seed) + "): ";
    if (model::model_type_of(s.location) == "qwen2") {
      model::Qwen2PresetConfig preset = model::qwen2_preset_config(s.location.preset);
      s.model_type = "qwen2";
      s.qwen2 = preset.config;
      s.config_json = nlohmann::json::parse(preset.config_json);
      s.source += preset.description;
    } else {
      model::PresetConfig preset = model::preset_config(s.location.preset);
      s.config = preset.config;
      s.model_type = s.config.model_type;
      s.config_json = nlohmann::json::parse(preset.config_json);
      s.source += preset.description;
    }
    s.binder = std::make_unique<model::WeightBinder>(model::WeightBinder::synthetic(seed));
    s.checkpoint_has_head = true;
    return s;
  }
  const std::string config_path = (std::filesystem::path(s.location.dir) / "config.json").string();
  s.model_type = model::load_config_model_type(config_path);
  s.config_json = read_config_json(config_path);
  s.store = std::make_unique<model::WeightStore>(model::open_checkpoint_weights(s.location.dir));
  if (s.model_type == "qwen2") {
    s.qwen2 = model::load_qwen2_config(config_path);
    // Qwen2Model checkpoints keep their tensors at the top level; the task models under "model.".
    s.binder = std::make_unique<model::WeightBinder>(*s.store, std::vector<std::string>{"model.", ""},
                                                     "embed_tokens.weight", config_path);
    s.checkpoint_has_head = s.store->find("score.weight") != nullptr;
  } else {
    s.config = model::load_encoder_config(config_path);
    const bool bert = s.config.family == model::EncoderFamily::bert;
    s.binder = std::make_unique<model::WeightBinder>(
        *s.store, std::vector<std::string>{bert ? "bert." : "distilbert.", bert ? "distilbert." : "bert.", ""},
        "embeddings.word_embeddings.weight", config_path);
    s.checkpoint_has_head = s.store->find("classifier.weight") != nullptr;
  }
  s.source = s.location.dir + (s.location.revision.empty() ? "" : " (revision " + s.location.revision + ")");
  return s;
}

std::unique_ptr<TrainableModel> build_trainable_model(const TrainingModelSource& source,
                                                      const std::vector<std::string>& id2label,
                                                      const std::string& problem_type, uint64_t init_seed,
                                                      std::vector<std::string>* notes) {
  if (source.model_type == "qwen2") {
    model::Qwen2Config c = source.qwen2;
    c.id2label = id2label;
    c.problem_type = problem_type;
    check(source.dropout().attention == 0.0f,
          source.location.spec + ": config.json sets attention_dropout " +
              std::to_string(source.dropout().attention) +
              "; Qwen2 training runs attention without dropout (every released Qwen2 config has 0.0)");
    return std::make_unique<TrainableQwen2>(build_trainable_qwen2(c, *source.binder, init_seed, notes));
  }
  model::EncoderConfig c = source.config;
  c.id2label = id2label;
  c.problem_type = problem_type;
  return std::make_unique<TrainableEncoder>(build_trainable_encoder(c, *source.binder, init_seed, notes));
}

}  // namespace tach::train
