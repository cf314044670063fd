// Finding a model and its tensors: a preset, a local directory, or a hub id resolved in the
// Hugging Face cache; then the safetensors files in it (single or sharded).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tach/tensor.h"

namespace tach::model {

struct ModelLocation {
  enum class Kind { preset, local, hub };
  Kind kind = Kind::local;
  std::string spec;      // as the user wrote it
  std::string dir;       // the directory holding config.json (empty for presets)
  std::string preset;    // for presets: the name after "preset:"
  std::string revision;  // for hub ids: the commit the snapshot is
};

// $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
std::string hf_hub_cache_dir();

// "preset:NAME", a directory, or "ORG/NAME[@REV]" looked up in the hub cache. A model that is
// not found is an error that lists every place looked at.
ModelLocation resolve_model(const std::string& spec);

// A tensor a checkpoint holds, loaded on demand (so a shape error costs no I/O).
struct StoredTensor {
  DType dtype = DType::f32;
  Shape shape;
  std::string file;  // which file holds it (for messages)
  std::function<Tensor()> load;
};

class WeightStore {
 public:
  void add(const std::string& name, StoredTensor t);
  const StoredTensor* find(const std::string& name) const;
  std::vector<std::string> names() const;
  size_t size() const { return tensors_.size(); }
  std::string description;                      // "model.safetensors (f32)", "synthetic (seed 0)"
  std::map<std::string, std::string> metadata;  // safetensors __metadata__, merged
  // Every file's pages out of the resident set (see MappedFile::drop_resident_pages); views
  // into the files stay valid. Call once the weights that are copied (packed) are built.
  void drop_resident_pages() const;
  std::vector<std::function<void()>> page_droppers;  // one per file

 private:
  std::map<std::string, StoredTensor> tensors_;
};

// Opens model.safetensors, or the shards listed by model.safetensors.index.json. A directory
// with only pytorch_model.bin (or *.pt, *.pth) gets an error: pickle is not read.
WeightStore open_checkpoint_weights(const std::string& dir);
// The bytes of the *.safetensors files in dir: a model's size on disk.
int64_t safetensors_bytes(const std::string& dir);

}  // namespace tach::model
