#include "train/training_model.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "model/family.h"
#include "model/presets.h"
#include "tach/error.h"
#include "tach/plain_number.h"
#include "train/trainable_encoder.h"
#include "train/trainable_decoder.h"

namespace tach::train {

namespace {

nlohmann::json read_config_json(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str());
}

// …ForTokenClassification's dropout before `score` in the causal decoder families (Llama, Mistral,
// Qwen2, Qwen3): the first of classifier_dropout and hidden_dropout the config sets (null is unset).
float causal_token_classifier_dropout(const nlohmann::json& config) {
  for (const char* key : {"classifier_dropout", "hidden_dropout"})
    if (config.contains(key) && config[key].is_number()) return config[key].get<float>();
  return 0.1f;
}

}  // namespace

bool TrainingModelSource::is_decoder() const { return family->decoder != nullptr; }

const std::vector<std::string>& TrainingModelSource::id2label() const {
  return is_decoder() ? decoder.id2label : config.id2label;
}

const std::string& TrainingModelSource::problem_type() const {
  return is_decoder() ? decoder.problem_type : config.problem_type;
}

int64_t TrainingModelSource::vocab_size() const { return is_decoder() ? decoder.vocab_size : config.vocab_size; }

int64_t TrainingModelSource::pad_token_id() const { return is_decoder() ? decoder.pad_token_id : config.pad_token_id; }

DropoutRates TrainingModelSource::dropout(Head task) const {
  DropoutRates r;
  if (is_decoder()) {
    // The decoders have no hidden dropout; attention_dropout is 0 in every released config. A causal
    // decoder's token classifier drops out its input as …ForTokenClassification does:
    // classifier_dropout, else hidden_dropout, else 0.1.
    r.attention = decoder.attention_dropout;
    if (task == Head::token_classification && decoder.causal) r.head = causal_token_classifier_dropout(config_json);
    return r;
  }
  r.hidden = config.hidden_dropout;
  r.attention = config.attention_dropout;
  r.classifier = config.classifier_dropout;
  // The per-token heads' dropout, as the family's row says (model/family.h).
  const model::EncoderFamily* e = family->encoder;
  if (task == Head::token_classification)
    r.head = e && e->token_head_hidden_dropout ? config.hidden_dropout : config.classifier_dropout;
  if (task == Head::question_answering && e && e->qa_dropout_key) r.head = config_json.value(e->qa_dropout_key, 0.1f);
  return r;
}

TrainingModelSource open_training_model(const std::string& spec, uint64_t seed) {
  TrainingModelSource s;
  s.location = model::resolve_model(spec);
  if (s.location.kind == model::ModelLocation::Kind::preset) {
    s.source = "synthetic weights (seed " + std::to_string(seed) + "): ";
    s.model_type = model::model_type_of(s.location);
    s.family = &model::model_family(s.model_type);
    if (s.is_decoder()) {
      model::DecoderPresetConfig preset = model::decoder_preset_config(s.location.preset);
      s.decoder = preset.config;
      s.config_json = nlohmann::json::parse(preset.config_json);
      s.source += preset.description;
    } else {
      model::PresetConfig preset = model::preset_config(s.location.preset);
      s.config = preset.config;
      s.model_type = s.config.model_type;
      s.config_json = nlohmann::json::parse(preset.config_json);
      s.source += preset.description;
    }
    s.binder = std::make_unique<model::WeightBinder>(
        model::WeightBinder::synthetic(seed, s.is_decoder() && s.decoder.norm_plus_one));
    s.checkpoint_has_head = true;
    // Synthetic weights exist for every head; a preset without one named is a classifier.
    if (!s.is_decoder() && s.config.checkpoint_head == Head::none)
      s.config.checkpoint_head = Head::sequence_classification;
    s.checkpoint_head = s.is_decoder() ? Head::sequence_classification : s.config.checkpoint_head;
    return s;
  }
  const std::string config_path = (std::filesystem::path(s.location.dir) / "config.json").string();
  s.model_type = model::load_config_model_type(config_path);
  s.family = &model::model_family(s.model_type);
  s.config_json = read_config_json(config_path);
  s.store = std::make_unique<model::WeightStore>(model::open_checkpoint_weights(s.location.dir));
  if (s.is_decoder()) s.decoder = model::load_decoder_config(config_path);
  else s.config = model::load_encoder_config(config_path);
  // Bare models keep their tensors at the top level; the task models under the body prefix.
  // (…ForQuestionAnswering's body may sit under a prefix of its own: model/family.h.)
  std::vector<std::string> prefixes = model::task_body_prefixes(*s.family);
  prefixes.push_back("");
  s.binder = std::make_unique<model::WeightBinder>(*s.store, prefixes, s.family->probe, config_path);
  s.checkpoint_has_head = s.store->find(s.family->classifier_weight) != nullptr;
  if (!s.is_decoder()) {
    // A classifier's tensors under a bare architecture are taken as one (as inference does); a
    // token classifier's "classifier" is not a sequence classifier.
    if (s.config.checkpoint_head == Head::none && s.checkpoint_has_head)
      s.config.checkpoint_head = Head::sequence_classification;
    s.checkpoint_head = s.config.checkpoint_head;
    s.checkpoint_has_head = s.checkpoint_head == Head::sequence_classification;
  } else {
    // config.json's architecture names the head (ModernBERT's token classifier and question
    // answering also keep a `classifier`); a classifier under a bare architecture is one.
    s.checkpoint_head = s.decoder.checkpoint_head;
    if (s.checkpoint_head == Head::none && s.checkpoint_has_head) s.checkpoint_head = Head::sequence_classification;
    s.checkpoint_has_head = s.checkpoint_head == Head::sequence_classification;
  }
  s.source = s.location.dir + (s.location.revision.empty() ? "" : " (revision " + s.location.revision + ")");
  return s;
}

namespace {

// Whether the family trains `task`: every head of its row (the encoders', ModernBERT's; a causal
// decoder's token classifier and question answering where its row has them).
bool trains(const model::ModelFamily& f, Head task) {
  if (task == Head::sequence_classification) return true;
  const std::string& architecture = task == Head::token_classification ? f.token_classifier_architecture
                                    : task == Head::question_answering ? f.question_answering_architecture
                                                                       : f.masked_lm_architecture;
  return !architecture.empty();
}

// The refusal of a task the family does not train, naming the ones it does.
std::string not_trained(const model::ModelFamily& f, Head task) {
  std::string tasks;
  for (const Head h :
       {Head::sequence_classification, Head::token_classification, Head::question_answering, Head::masked_lm})
    if (trains(f, h)) tasks += std::string(tasks.empty() ? "" : ", ") + (h == Head::masked_lm ? "mlm" : head_name(h));
  const std::string trained =
      "; --task " + tasks + (tasks.find(',') == std::string::npos ? " trains" : " train") + " them";
  if (task == Head::masked_lm && f.masked_lm_architecture.empty())
    return std::string(f.name) + " are causal language models with no masked-LM head" + trained;
  return "training the " + std::string(head_name(task)) + " head of " + f.name + " is not built" + trained;
}

std::unique_ptr<TrainableModel> build_for_family(const TrainingModelSource& source,
                                                 const std::vector<std::string>& id2label,
                                                 const std::string& problem_type, uint64_t init_seed,
                                                 std::vector<std::string>* notes, Head task, Device device) {
  if (source.is_decoder()) {
    check(trains(*source.family, task), not_trained(*source.family, task));
    model::DecoderConfig c = source.decoder;
    c.id2label = id2label;
    c.problem_type = problem_type;
    check(source.dropout().attention == 0.0f,
          source.location.spec + ": config.json sets attention_dropout " + plain_number(source.dropout().attention) +
              "; decoder training runs attention without dropout (every released decoder config has 0.0)");
    check(c.other_dropout.empty(), source.location.spec + ": config.json sets " + c.other_dropout +
                                       "; tach trains ModernBERT without dropout (its published configs have 0.0)");
    return std::make_unique<TrainableDecoder>(
        build_trainable_decoder(c, *source.family, *source.binder, init_seed, notes, device, task));
  }
  model::EncoderConfig c = source.config;
  c.id2label = id2label;
  c.problem_type = problem_type;
  return std::make_unique<TrainableEncoder>(
      build_trainable_encoder(c, *source.family, *source.binder, init_seed, notes, task, source.location.dir, device));
}

}  // namespace

std::unique_ptr<TrainableModel> build_trainable_model(const TrainingModelSource& source,
                                                      const std::vector<std::string>& id2label,
                                                      const std::string& problem_type, uint64_t init_seed,
                                                      std::vector<std::string>* notes, Head task, Device device) {
  // The families bind and initialise in host memory; each parameter lands on `device` as it is
  // added. A GPU that is not here is refused before any of that work.
  check(device.kind == DeviceKind::cpu || cuda_available(),
        "training on " + device.str() + ": no CUDA device here (" + cuda_unavailable_reason() + ")");
  return build_for_family(source, id2label, problem_type, init_seed, notes, task, device);
}

}  // namespace tach::train
