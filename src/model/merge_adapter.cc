#include "tach/merge.h"

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "model/checkpoint.h"
#include "model/config.h"
#include "model/family.h"
#include "model/peft_adapter.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"

namespace tach {

using namespace model;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

}  // namespace

MergeResult merge_adapter(const MergeOptions& o) {
  check(o.dtype == "keep" || o.dtype == "f32", "--dtype must be keep or f32, got " + o.dtype);
  check(!o.output.empty(), "tach merge: an output directory is needed (-o DIR)");
  const ModelLocation loc = resolve_model(o.model);
  check(loc.kind != ModelLocation::Kind::preset,
        "tach merge writes a checkpoint from a base checkpoint's files; " + o.model +
            " is a preset with synthetic weights (use tach classify --adapter to run it with the adapter)");
  check(fs::weakly_canonical(o.output) != fs::weakly_canonical(loc.dir),
        "tach merge: the output directory is the base model's own (" + loc.dir + "); write somewhere else");
  const std::string config_path = (fs::path(loc.dir) / "config.json").string();
  json config = read_json_file(config_path);
  const std::string model_type = load_config_model_type(config_path);
  const ModelFamily& family = model_family(model_type);
  const WeightStore store = open_checkpoint_weights(loc.dir);
  auto adapter = PeftAdapter::open(o.adapter);

  MergeResult r;
  const bool adapter_head = adapter->head_tensor(family.classifier_weight) != nullptr;
  bool base_head = store.find(family.classifier_weight) != nullptr;
  const bool classifier = adapter_head || base_head;
  // A task model's checkpoint keeps the body under its prefix; a bare base model's does not. A
  // classifier written from a bare base needs the prefix, or transformers would take the file
  // for a bare model and draw a new head.
  auto is_head = [&](const std::string& n) {
    for (const auto& h : family.head_modules)
      if (starts_with(n, h + ".")) return true;
    return false;
  };
  auto is_lm_head = [&](const std::string& n) {
    return !family.lm_head.empty() && starts_with(n, family.lm_head + ".");
  };
  auto is_top = [&](const std::string& n) {
    for (const auto& m : family.top_modules)
      if (starts_with(n, m + ".")) return true;
    return false;
  };
  auto out_name = [&](const std::string& n) {
    if (!classifier || is_head(n) || is_top(n) || starts_with(n, family.body_prefix) || is_lm_head(n)) return n;
    return family.body_prefix + n;
  };

  std::map<DType, int> dtype_count;
  std::vector<std::pair<std::string, Tensor>> tensors;
  for (const auto& n : store.names()) {
    const StoredTensor* st = store.find(n);
    dtype_count[st->dtype]++;
    if (adapter_head && is_head(n) && adapter->head_tensor(n)) continue;  // the adapter's replaces it
    if (adapter_head && is_lm_head(n)) {
      r.notes.push_back("dropped " + n + ": the adapter makes a sequence classifier, which has no LM head");
      continue;
    }
    Tensor t = st->load();
    Tensor merged = adapter->merged(n, t, {family.body_prefix}, o.model);
    if (merged.defined()) {
      ++r.merged_weights;
      t = o.dtype == "f32" || st->dtype == DType::f32 ? merged : merged.to(st->dtype, MemoryCategory::weights);
    } else if (o.dtype == "f32" && t.dtype() != DType::f32) {
      t = t.to(DType::f32, MemoryCategory::weights);
    }
    tensors.emplace_back(out_name(n), t.contiguous());
  }
  adapter->check_all_used(o.model);
  // The adapter's own tensors: the head it trained (modules_to_save), in the base's main dtype.
  DType main_dtype = DType::f32;
  int most = 0;
  for (const auto& [d, c] : dtype_count)
    if (c > most) most = c, main_dtype = d;
  for (const auto& n : adapter->modules_to_save_names()) {
    check(is_head(n) || store.find(n) != nullptr, "the adapter in " + o.adapter + " was made for base model '" +
                                                      adapter->base_model() + "' and does not fit '" + o.model +
                                                      "': its tensor '" + n + "' has no place in it");
    Tensor t = adapter->load_head(n);
    if (o.dtype == "keep" && main_dtype != DType::f32) t = t.to(main_dtype, MemoryCategory::weights);
    tensors.emplace_back(out_name(n), t);
    ++r.head_tensors;
  }
  r.tensors = int64_t(tensors.size());

  // config.json: a head from the adapter makes the base a classifier with the adapter's labels.
  if (adapter_head) {
    std::vector<std::string> config_labels;
    if (config.contains("id2label") && config["id2label"].is_object() && base_head)
      for (size_t i = 0; i < config["id2label"].size(); ++i)
        config_labels.push_back(config["id2label"].value(std::to_string(i), "LABEL_" + std::to_string(i)));
    r.labels = labels_with_adapter(*adapter, family.classifier_weight, config_labels);
    json id2label = json::object(), label2id = json::object();
    for (size_t i = 0; i < r.labels.size(); ++i) {
      id2label[std::to_string(i)] = r.labels[i];
      label2id[r.labels[i]] = int64_t(i);
    }
    config["id2label"] = id2label;
    config["label2id"] = label2id;
    config["architectures"] = json::array({family.classifier_architecture});
  }
  r.architecture =
      config.contains("architectures") && config["architectures"].is_array() && !config["architectures"].empty()
          ? config["architectures"][0].get<std::string>()
          : model_type;
  if (config.contains("torch_dtype") && o.dtype == "f32") config["torch_dtype"] = "float32";
  if (config.contains("dtype") && o.dtype == "f32") config["dtype"] = "float32";

  write_directory_atomically(o.output, [&](const std::string& tmp) {
    write_safetensors(tmp + "/model.safetensors", tensors,
                      {{"format", "pt"}, {"tach.merged_adapter", adapter->describe()}});
    write_file_atomically(tmp + "/config.json", config.dump(2) + "\n");
    copy_tokenizer_files(loc.dir, tmp);
  });
  r.bytes = int64_t(fs::file_size(fs::path(o.output) / "model.safetensors"));
  return r;
}

}  // namespace tach
