#include "train/training_model.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/presets.h"
#include "tach/error.h"

namespace tach::train {

TrainingModelSource open_training_model(const std::string& spec, uint64_t seed) {
  TrainingModelSource s;
  s.location = model::resolve_model(spec);
  if (s.location.kind == model::ModelLocation::Kind::preset) {
    check(!model::is_qwen2_preset(s.location.preset),
          spec + ": training runs BERT and DistilBERT sequence classifiers in this version; Qwen2 training is not "
                 "built yet");
    model::PresetConfig preset = model::preset_config(s.location.preset);
    s.config = preset.config;
    s.config_json = nlohmann::json::parse(preset.config_json);
    s.source = "synthetic weights (seed " + std::to_string(seed) + "): " + preset.description;
    s.binder = std::make_unique<model::WeightBinder>(model::WeightBinder::synthetic(seed));
    s.checkpoint_has_head = true;
    return s;
  }
  const std::string config_path = (std::filesystem::path(s.location.dir) / "config.json").string();
  check(model::load_config_model_type(config_path) != "qwen2",
        spec + ": training runs BERT and DistilBERT sequence classifiers in this version; Qwen2 training is not "
               "built yet");
  s.config = model::load_encoder_config(config_path);
  std::ifstream in(config_path);
  std::stringstream text;
  text << in.rdbuf();
  s.config_json = nlohmann::json::parse(text.str());
  s.store = std::make_unique<model::WeightStore>(model::open_checkpoint_weights(s.location.dir));
  const bool bert = s.config.family == model::EncoderFamily::bert;
  s.binder = std::make_unique<model::WeightBinder>(
      *s.store, std::vector<std::string>{bert ? "bert." : "distilbert.", bert ? "distilbert." : "bert.", ""},
      "embeddings.word_embeddings.weight", config_path);
  s.checkpoint_has_head = s.store->find("classifier.weight") != nullptr;
  s.source = s.location.dir + (s.location.revision.empty() ? "" : " (revision " + s.location.revision + ")");
  return s;
}

}  // namespace tach::train
