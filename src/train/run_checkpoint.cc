#include "train/run_checkpoint.h"

#include <filesystem>
#include <fstream>

#include "core/allocator.h"
#include "model/safetensors.h"
#include "model/safetensors_writer.h"
#include "tach/error.h"

namespace tach::train {

namespace fs = std::filesystem;

namespace {

constexpr const char* kPrefix = "checkpoint-";

int64_t checkpoint_step(const fs::path& p) {
  const std::string name = p.filename().string();
  if (name.rfind(kPrefix, 0) != 0) return -1;
  const std::string digits = name.substr(std::strlen(kPrefix));
  if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
  return std::stoll(digits);
}

void restore(const model::SafetensorsFile& file, const std::string& name, const Tensor& into) {
  const model::SafetensorsEntry* e = file.find(name);
  check(e != nullptr, file.path() + ": no tensor '" + name + "'; the checkpoint does not belong to this model");
  check(e->shape == into.shape() && e->dtype == DType::f32, file.path() + ": tensor '" + name + "' is " +
                                                                shape_str(e->shape) + ", the model needs f32 " +
                                                                shape_str(into.shape()));
  Tensor t = file.tensor(*e);
  core::copy_bytes(into.device(), into.raw(), t.device(), t.raw(), into.nbytes());  // to the model's device
}

}  // namespace

void save_run_checkpoint(const std::string& run_dir, int64_t step, const ParameterTable& params,
                         const AdamWOptimizer& optimizer, const nlohmann::json& trainer_state) {
  const fs::path dir = fs::path(run_dir) / (kPrefix + std::to_string(step));
  model::write_directory_atomically(dir.string(), [&](const std::string& tmp) {
    std::vector<std::pair<std::string, Tensor>> weights;
    for (const auto& p : params.entries())  // NF4 weights are quantized again from the base on resume
      if (p.value.defined()) weights.emplace_back(p.name, p.value);
    model::write_safetensors(tmp + "/model.safetensors", weights);
    model::write_safetensors(tmp + "/optimizer.safetensors", optimizer.state());
    model::write_file_atomically(tmp + "/trainer_state.json", trainer_state.dump(2) + "\n");
  });
  // The new checkpoint is complete: older ones can go.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const int64_t s = checkpoint_step(entry.path());
    if (s >= 0 && s != step) fs::remove_all(entry.path(), ec);
  }
}

std::string latest_run_checkpoint(const std::string& run_dir) {
  std::error_code ec;
  int64_t best = -1;
  std::string path;
  for (const auto& entry : fs::directory_iterator(run_dir, ec)) {
    const int64_t s = checkpoint_step(entry.path());
    if (s > best && fs::exists(entry.path() / "trainer_state.json")) {
      best = s;
      path = entry.path().string();
    }
  }
  return path;
}

nlohmann::json load_run_checkpoint(const std::string& dir, ParameterTable& params, AdamWOptimizer& optimizer) {
  const auto weights = model::SafetensorsFile::open(dir + "/model.safetensors");
  for (auto& p : params.entries())
    if (p.value.defined()) restore(weights, p.name, p.value);
  const auto moments = model::SafetensorsFile::open(dir + "/optimizer.safetensors");
  for (const auto& [name, t] : optimizer.state()) restore(moments, name, t);
  std::ifstream in(dir + "/trainer_state.json");
  check(static_cast<bool>(in), dir + "/trainer_state.json: cannot read");
  nlohmann::json state;
  try {
    state = nlohmann::json::parse(in);
  } catch (const std::exception& e) { throw Error(dir + "/trainer_state.json: " + e.what()); }
  optimizer.restore(state.at("optimizer_steps").get<int64_t>());
  return state;
}

}  // namespace tach::train
