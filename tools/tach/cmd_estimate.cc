// tach estimate: the memory a model needs, broken down, and whether it fits here; with
// --models a,b,c --table, the memory requirement and compatibility tables.
#include <iostream>
#include <sstream>

#include "commands.h"
#include "format.h"
#include "tach/error.h"
#include "tach/estimate.h"

namespace tach::cli {

namespace {

struct EstimateFlags {
  EstimateInput in;
  std::vector<std::string> models;
  bool table = false;
};

std::string gb(double b) { return fixed(b / 1e9, 2) + " GB"; }

int run_table(const EstimateFlags& f) {
  // The two tables: requirements (inference in 16-bit, training in 16-bit with Adam), then
  // which of them fit the chosen device.
  std::vector<std::string> models = f.models;
  if (models.empty()) models.push_back(f.in.model);
  std::cout << "Model memory requirements (batch " << f.in.batch << " x " << f.in.seq_len << " tokens)\n\n";
  std::ostringstream rows;
  size_t w = 28;
  for (const auto& m : models) w = std::max(w, m.size() + 2);
  std::cout << std::string("Model").append(w - 5, ' ') << "Inference (" << f.in.dtype << ")   Training (" << f.in.dtype
            << "+AdamW)\n"
            << std::string(w + 40, '-') << "\n";
  std::vector<std::pair<std::string, MemoryEstimate>> checks;
  for (const auto& m : models) {
    EstimateInput inf = f.in, train = f.in;
    inf.model = train.model = m;
    inf.mode = "inference";
    train.mode = "train-full";
    const MemoryEstimate ei = estimate_memory(inf), et = estimate_memory(train);
    std::cout << std::string(m).append(w - m.size(), ' ') << gb(double(ei.total_bytes)) << std::string(14, ' ')
              << gb(double(et.total_bytes)) << "\n";
    checks.push_back({m + " (inference)", ei});
    checks.push_back({m + " (training)", et});
  }
  const MemoryEstimate& any = checks.front().second;
  std::cout << "\nModel compatibility check\n\nAvailable memory on " << f.in.device << ": "
            << gb(double(any.available_bytes)) << " (" << any.available_source << ", minus a "
            << fixed(f.in.margin * 100, 0) << "% margin)\n\n"
            << std::string("Model").append(w + 8, ' ') << "Required     Status\n"
            << std::string(w + 35, '-') << "\n";
  for (const auto& [name, e] : checks)
    std::cout << std::string(name).append(w + 13 - std::min(name.size(), w + 12), ' ') << gb(double(e.total_bytes))
              << "     " << (e.fits ? "fits" : "too large") << " (largest batch that fits: " << e.largest_batch_that_fits
              << ")\n";
  return 0;
}

int run_estimate(const EstimateFlags& f) {
  if (f.table || f.models.size() > 1) return run_table(f);
  const MemoryEstimate e = estimate_memory(f.in);
  std::cout << "model      " << e.model << " (" << e.architecture << "), " << human_count(double(e.parameters))
            << " parameters" << (e.trainable_parameters ? ", " + human_count(double(e.trainable_parameters)) + " trained" : "")
            << "\n"
            << "setting    " << f.in.mode << ", " << f.in.dtype << ", batch " << f.in.batch << " x " << f.in.seq_len
            << " tokens" << (f.in.gradient_checkpointing ? ", gradient checkpointing" : "") << "\n\n";
  size_t w = 8;
  for (const auto& l : e.lines) w = std::max(w, l.name.size());
  for (const auto& l : e.lines)
    std::cout << "  " << std::string(l.name).append(w - l.name.size(), ' ') << "  " << human_bytes(double(l.bytes))
              << std::string(12 - std::min<size_t>(11, human_bytes(double(l.bytes)).size()), ' ') << l.how << "\n";
  std::cout << "  " << std::string("total").append(w - 5, ' ') << "  " << human_bytes(double(e.total_bytes))
            << "   at the peak phase: " << e.peak_phase << "\n\n"
            << "available  " << human_bytes(double(e.available_bytes)) << " on " << f.in.device << " ("
            << e.available_source << ", minus a " << fixed(f.in.margin * 100, 0) << "% margin)\n"
            << "verdict    " << (e.fits ? "fits" : "does not fit") << "; the largest batch that fits at "
            << f.in.seq_len << " tokens: " << e.largest_batch_that_fits << "\n";
  return e.fits ? 0 : 3;
}

}  // namespace

Command add_estimate_command(CLI::App& app) {
  auto f = std::make_shared<EstimateFlags>();
  f->in.model = "preset:distilbert-base-uncased";
  CLI::App* sub = app.add_subcommand("estimate", "Memory a model needs (weights, gradients, optimizer, activations, KV "
                                                 "cache, LoRA, NF4) and whether it fits; exit code 3 when it does not");
  sub->add_option("-m,--model", f->in.model, "Model: preset:NAME, a directory, or a hub id (only config.json is read)")
      ->capture_default_str();
  sub->add_option("--models", f->models, "Several models, comma-separated: prints the memory requirement and compatibility tables")->delimiter(',');
  sub->add_flag("--table", f->table, "Requirement and compatibility tables (inference and training with AdamW)");
  sub->add_option("--dtype", f->in.dtype, "f32, bf16 or f16")->capture_default_str();
  sub->add_option("-b,--batch", f->in.batch, "Rows")->capture_default_str();
  sub->add_option("-s,--seq-len", f->in.seq_len, "Tokens per row")->capture_default_str();
  sub->add_option("--mode", f->in.mode, "inference, train-full, train-lora or train-qlora")->capture_default_str();
  sub->add_option("--optimizer", f->in.optimizer, "adamw (2 f32 states per trained parameter)")->capture_default_str();
  sub->add_option("--lora-rank", f->in.lora_rank, "LoRA rank")->capture_default_str();
  sub->add_option("--lora-targets", f->in.lora_targets, "LoRA targets, comma-separated: q k v o gate up down")
      ->delimiter(',');
  sub->add_flag("--gradient-checkpointing", f->in.gradient_checkpointing, "Keep only each layer's input for the backward");
  sub->add_option("--generate-tokens", f->in.generate_tokens, "Decoders: new tokens, for the KV cache")->capture_default_str();
  sub->add_option("--device", f->in.device, "cpu, cuda or cuda:N: where it must fit")->capture_default_str();
  sub->add_option("--margin", f->in.margin, "Fraction of the available memory kept free")->capture_default_str();
  return {sub, [f] { return run_estimate(*f); }};
}

}  // namespace tach::cli
