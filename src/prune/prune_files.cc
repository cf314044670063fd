#include "prune/prune_files.h"

#include <cmath>
#include <cstring>
#include <filesystem>

#include "model/checkpoint.h"
#include "model/safetensors_writer.h"

namespace tach::prune {

namespace fs = std::filesystem;
using json = nlohmann::json;

Tensor take_rows(const Tensor& t, const std::vector<int64_t>& keep) {
  Shape shape = t.shape();
  const size_t row = t.nbytes() / size_t(shape[0]);
  shape[0] = int64_t(keep.size());
  Tensor out = Tensor::empty(shape, t.dtype(), Device::cpu(), MemoryCategory::workspace);
  const char* src = static_cast<const char*>(t.raw());
  for (size_t i = 0; i < keep.size(); ++i)
    std::memcpy(static_cast<char*>(out.raw()) + i * row, src + size_t(keep[i]) * row, row);
  return out;
}

Tensor take_columns(const Tensor& t, const std::vector<int64_t>& keep) {
  const int64_t R = t.size(0), K = t.size(1);
  const size_t e = t.nbytes() / size_t(R * K);
  Tensor out = Tensor::empty({R, int64_t(keep.size())}, t.dtype(), Device::cpu(), MemoryCategory::workspace);
  const char* src = static_cast<const char*>(t.raw());
  char* dst = static_cast<char*>(out.raw());
  for (int64_t r = 0; r < R; ++r)
    for (size_t i = 0; i < keep.size(); ++i, dst += e) std::memcpy(dst, src + (size_t(r * K + keep[i])) * e, e);
  return out;
}

json scores_json(const UnitScores& s, const PrunePlan& p, const std::string& by, const std::string& head_unit) {
  auto nullable = [](const std::vector<double>& v) {
    json a = json::array();
    for (double x : v) a.push_back(std::isnan(x) ? json(nullptr) : json(x));
    return a;
  };
  json j = {{"by", by}, {"layers", s.layers}, {"removed_layers", p.removed_layers}};
  if (head_unit != "head") j["head_unit"] = head_unit;
  j["heads"] = json::array();
  for (const auto& h : s.heads) j["heads"].push_back(nullable(h));
  j["neurons"] = s.neurons;
  j["removed_heads"] = p.removed_heads;
  return j;
}

json size_json(const PruneSize& s) {
  return {{"parameters", s.parameters},
          {"flops_per_token", s.flops_per_token},
          {"weight_bytes", s.weight_bytes},
          {"layers", s.layers},
          {"heads", s.heads},
          {"ffn_width", s.ffn_width}};
}

namespace {

// prune_summary.json: the sizes, and --by importance's calibration (what the scores were computed on).
void write_reports(const std::string& tmp, const json& scores, const PruneResult& r) {
  model::write_file_atomically(tmp + "/prune_scores.json", scores.dump(1) + "\n");
  json summary = {{"before", size_json(r.before)}, {"after", size_json(r.after)}};
  if (scores.contains("calibration")) summary["calibration"] = scores["calibration"];
  model::write_file_atomically(tmp + "/prune_summary.json", summary.dump(1) + "\n");
}

}  // namespace

void write_unchanged(const std::string& model_dir, const std::string& output, const json& scores, PruneResult& r) {
  r.unchanged = true;
  r.after = r.before;
  model::write_directory_atomically(output, [&](const std::string& tmp) {
    for (const auto& entry : fs::directory_iterator(model_dir))
      if (entry.is_regular_file()) fs::copy_file(entry.path(), fs::path(tmp) / entry.path().filename());
    write_reports(tmp, scores, r);
  });
}

void write_pruned(const std::string& model_dir, const std::string& output,
                  const std::vector<std::pair<std::string, Tensor>>& tensors, const json& config, const json& scores,
                  const std::function<PruneSize(int64_t weight_bytes)>& after_size, PruneResult& r) {
  model::write_directory_atomically(output, [&](const std::string& tmp) {
    model::write_safetensors(tmp + "/model.safetensors", tensors, {{"format", "pt"}});
    model::write_file_atomically(tmp + "/config.json", config.dump(2) + "\n");
    model::copy_tokenizer_files(model_dir, tmp);
    r.after = after_size(model::safetensors_bytes(tmp));
    write_reports(tmp, scores, r);
  });
}

}  // namespace tach::prune
