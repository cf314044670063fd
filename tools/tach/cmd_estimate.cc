// tach estimate: the memory a model needs, broken down, and whether it fits here; with
// --models a,b,c --table, the memory requirement and compatibility tables.
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "commands.h"
#include "format.h"
#include "head_option.h"
#include "tach/parameter_count.h"
#include "tach/error.h"
#include "tach/estimate.h"
#include "usage.h"

namespace tach::cli {

namespace {

struct EstimateFlags {
  EstimateInput in;
  std::string head = "auto";
  std::vector<std::string> models;
  bool table = false;
  bool json = false;
};

std::string gb(double b) { return fixed(b / 1e9, 2) + " GB"; }

nlohmann::json to_json(const MemoryEstimate& e, const EstimateInput& in) {
  nlohmann::json lines = nlohmann::json::array();
  for (const auto& l : e.lines) lines.push_back({{"name", l.name}, {"bytes", l.bytes}, {"how", l.how}});
  return {{"model", e.model},
          {"architecture", e.architecture},
          {"note", e.note},
          {"parameters", e.parameters},
          {"trainable_parameters", e.trainable_parameters},
          {"setting",
           {{"mode", in.mode},
            {"dtype", in.dtype},
            {"batch", in.batch},
            {"seq_len", e.seq_len},
            {"seq_len_note", e.seq_len_note},
            {"gradient_checkpointing", in.gradient_checkpointing},
            {"generate_tokens", in.generate_tokens},
            {"lora_rank", in.lora_rank},
            {"lora_targets", e.lora_targets}}},
          {"lines", lines},
          {"total_bytes", e.total_bytes},
          {"peak_phase", e.peak_phase},
          {"available_bytes", e.available_bytes},
          {"available_source", e.available_source},
          {"fits", e.fits},
          {"largest_batch_that_fits", e.largest_batch_that_fits},
          {"unit", "bytes"},
          {"method", "tach's memory model (docs/cli.md, tach estimate): derived from config.json, nothing is loaded"}};
}

// The table profiling guides show: one row per model, its memory for inference, full training
// with AdamW, and LoRA and QLoRA training; then which of them fit the chosen device.
int run_table(const EstimateFlags& f) {
  std::vector<std::string> models = f.models;
  if (models.empty()) models.push_back(f.in.model);
  const std::vector<std::pair<std::string, std::string>> modes = {{"inference", "Inference"},
                                                                  {"train-full", "Train AdamW"},
                                                                  {"train-lora", "Train LoRA"},
                                                                  {"train-qlora", "Train QLoRA"}};
  std::vector<std::vector<MemoryEstimate>> all;
  for (const auto& m : models) {
    std::vector<MemoryEstimate> row;
    for (const auto& [mode, title] : modes) {
      EstimateInput in = f.in;
      in.model = m;
      in.mode = mode;
      row.push_back(estimate_memory(in));
    }
    all.push_back(std::move(row));
  }
  // Exit status 3 as `tach estimate -m M --mode MODE` gives it for each model alone: a model that
  // does not fit in --mode (default inference); the other modes' rows inform, they do not decide.
  std::vector<std::string> too_large;
  for (size_t i = 0; i < models.size(); ++i) {
    EstimateInput in = f.in;
    in.model = models[i];
    const auto k = std::find_if(modes.begin(), modes.end(), [&](const auto& m) { return m.first == f.in.mode; });
    if (!(k != modes.end() ? all[i][size_t(k - modes.begin())] : estimate_memory(in)).fits)
      too_large.push_back(models[i]);
  }
  const int status = too_large.empty() ? 0 : 3;
  if (f.json) {
    nlohmann::json j = nlohmann::json::array();
    for (size_t i = 0; i < models.size(); ++i)
      for (size_t k = 0; k < modes.size(); ++k) {
        EstimateInput in = f.in;
        in.model = models[i];
        in.mode = modes[k].first;
        j.push_back(to_json(all[i][k], in));
      }
    std::cout << j.dump(2) << "\n";
    return status;
  }
  std::cout << "Model memory requirements (" << f.in.dtype << " weights and activations, batch " << f.in.batch << " x "
            << f.in.seq_len << " tokens; LoRA rank " << f.in.lora_rank
            << " on the default targets; QLoRA: NF4 base)\n\n";
  size_t w = 28;
  for (const auto& m : models) w = std::max(w, m.size() + 2);
  std::cout << std::string("Model").append(w - 5, ' ') << "Parameters  ";
  for (const auto& [mode, title] : modes) std::cout << std::string(title).append(14 - title.size(), ' ');
  std::cout << "\n" << std::string(w + 12 + 14 * modes.size(), '-') << "\n";
  for (size_t i = 0; i < models.size(); ++i) {
    const std::string params = parameter_count_text(all[i][0].parameters);
    std::cout << std::string(models[i]).append(w - models[i].size(), ' ') << params
              << std::string(12 - std::min<size_t>(11, params.size()), ' ');
    for (const auto& e : all[i]) {
      const std::string g = gb(double(e.total_bytes));
      std::cout << g << std::string(14 - std::min<size_t>(13, g.size()), ' ');
    }
    std::cout << "\n";
  }
  for (size_t i = 0; i < models.size(); ++i)
    if (!all[i][0].note.empty()) std::cout << "note: " << models[i] << ": " << all[i][0].note << "\n";
  for (size_t i = 0; i < models.size(); ++i)  // a row length other than the header's, and why
    if (!all[i][0].seq_len_note.empty())
      std::cout << "note: " << models[i] << ": " << all[i][0].seq_len << " tokens per row (" << all[i][0].seq_len_note
                << ")\n";
  const MemoryEstimate& any = all.front().front();
  std::cout << "\nModel compatibility check\n\nAvailable memory on " << f.in.device << ": "
            << gb(double(any.available_bytes)) << " (" << any.available_source << ", minus a "
            << fixed(f.in.margin * 100, 0) << "% margin)\n\n"
            << std::string("Model").append(w + 8, ' ') << "Required     Status\n"
            << std::string(w + 35, '-') << "\n";
  for (size_t i = 0; i < models.size(); ++i)
    for (size_t k = 0; k < modes.size(); ++k) {
      const MemoryEstimate& e = all[i][k];
      const std::string name = models[i] + " (" + modes[k].first + ")";
      std::cout << std::string(name).append(w + 13 - std::min(name.size(), w + 12), ' ') << gb(double(e.total_bytes))
                << "     " << (e.fits ? "fits" : "too large")
                << " (largest batch that fits: " << e.largest_batch_that_fits << ")\n";
    }
  if (status) {
    std::string names;
    for (const auto& m : too_large) names += (names.empty() ? "" : ", ") + m;
    std::cout << "\nexit status 3: " << names << " does not fit for " << f.in.mode << " (--mode)\n";
  }
  return status;
}

int run_estimate(const EstimateFlags& f) {
  if (f.table || f.models.size() > 1) return run_table(f);
  const MemoryEstimate e = estimate_memory(f.in);
  if (f.json) {
    std::cout << to_json(e, f.in).dump(2) << "\n";
    return e.fits ? 0 : 3;
  }
  std::cout << "model      " << e.model << " (" << e.architecture << "), " << parameter_count_text(e.parameters)
            << " parameters"
            << (e.trainable_parameters ? ", " + parameter_count_text(e.trainable_parameters) + " trained" : "") << "\n";
  if (!e.note.empty()) std::cout << "note       " << e.note << "\n";
  std::cout << "setting    " << f.in.mode << ", " << f.in.dtype << ", batch " << f.in.batch << " x " << e.seq_len
            << " tokens" << (e.seq_len_note.empty() ? "" : " (" + e.seq_len_note + ")")
            << (f.in.gradient_checkpointing ? ", gradient checkpointing" : "");
  if (!e.lora_targets.empty()) {
    std::string targets;
    for (const auto& t : e.lora_targets) targets += (targets.empty() ? "" : ",") + t;
    std::cout << ", LoRA r " << f.in.lora_rank << " on " << targets
              << (f.in.lora_targets.empty() ? " (every linear, as tach train's default)" : "");
  }
  std::cout << "\n\n";
  size_t w = 8;
  for (const auto& l : e.lines) w = std::max(w, l.name.size());
  for (const auto& l : e.lines)
    std::cout << "  " << std::string(l.name).append(w - l.name.size(), ' ') << "  " << human_bytes(double(l.bytes))
              << std::string(12 - std::min<size_t>(11, human_bytes(double(l.bytes)).size()), ' ') << l.how << "\n";
  std::cout << "  " << std::string("total").append(w - 5, ' ') << "  " << human_bytes(double(e.total_bytes))
            << "   at the peak phase: " << e.peak_phase << "\n\n"
            << "available  " << human_bytes(double(e.available_bytes)) << " on " << f.in.device << " ("
            << e.available_source << ", minus a " << fixed(f.in.margin * 100, 0) << "% margin)\n"
            << "verdict    " << (e.fits ? "fits" : "does not fit") << "; the largest batch that fits at " << e.seq_len
            << " tokens: " << e.largest_batch_that_fits << "\n";
  return e.fits ? 0 : 3;
}

}  // namespace

Command add_estimate_command(CLI::App& app) {
  auto f = std::make_shared<EstimateFlags>();
  f->in.model = "preset:distilbert-base-uncased";
  CLI::App* sub = app.add_subcommand("estimate",
                                     "Memory a model needs (weights, gradients, optimizer, activations, KV "
                                     "cache, LoRA, NF4) and whether it fits; exit code 3 when it does not");
  sub->add_option(
         "-m,--model", f->in.model,
         "Model: preset:NAME (also the config-only llama-3.1-70b, mixtral-8x7b, qwen1.5-moe-a2.7b, deepseek-v3), a "
         "directory, or a hub id; only config.json is read, of any decoder (MoE and MLA included)")
      ->capture_default_str();
  sub->add_option("--models", f->models,
                  "Several models, comma-separated: prints the memory requirement and compatibility tables")
      ->delimiter(',');
  sub->add_flag("--table", f->table,
                "Requirement and compatibility tables: inference, full training with AdamW, LoRA and QLoRA per model; "
                "exit code 3 when a model does not fit in --mode, as each alone with -m would give");
  sub->add_flag("--json", f->json, "Print the estimate (or the table's estimates) as JSON, every line in bytes");
  sub->add_option("--dtype", f->in.dtype,
                  "f32, bf16, f16, int8 or nf4 (inference: the linears in int8, or their weights in 4-bit NF4)")
      ->capture_default_str()
      ->check(compute_dtype_name("--dtype"));
  sub->add_option(kBatchOption, f->in.batch, "Rows")
      ->capture_default_str()
      ->check(positive_count("batch size", "batch sizes"));
  sub->add_option("-s,--seq-len", f->in.seq_len,
                  "Tokens per row (default 128; 384 for a question-answering model, MLPerf's BERT shape; or a "
                  "model's longest row where it takes fewer)")
      ->capture_default_str()
      ->check(positive_count("sequence length", "sequence lengths"));
  sub->add_option("--mode", f->in.mode, "inference, train-full, train-lora or train-qlora")
      ->capture_default_str()
      ->check(one_of("--mode", {"inference", "train-full", "train-lora", "train-qlora"}));
  sub->add_option("--optimizer", f->in.optimizer, "adamw (2 f32 states per trained parameter)")
      ->capture_default_str()
      ->check(one_of("--optimizer", {"adamw"}));
  sub->add_option("--lora-rank", f->in.lora_rank, "LoRA rank")
      ->capture_default_str()
      ->check(positive_count("LoRA rank", "LoRA ranks"));
  sub->add_option("--lora-targets", f->in.lora_targets,
                  "LoRA targets, comma-separated, of q k v o gate up down (default: every linear of a layer, as tach "
                  "train --method lora adapts them: q,k,v,o,up,down, and gate in a decoder)")
      ->delimiter(',');
  sub->add_flag("--gradient-checkpointing", f->in.gradient_checkpointing,
                "Keep only each layer's input for the backward");
  sub->add_option("--generate-tokens", f->in.generate_tokens,
                  "Decoders: new tokens, for the KV cache (prompt + new tokens must fit the positions)")
      ->capture_default_str()
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return !text.empty() && text[0] == '-' ? "new tokens " + text + ": the count cannot be negative" : "";
          },
          "NONNEGATIVE", "non_negative_count"));
  sub->add_option("--device", f->in.device, "cpu, cuda or cuda:N: where it must fit")
      ->capture_default_str()
      ->check(device_name(false));
  sub->add_option("--available", f->in.available_bytes,
                  "Memory to fit into in place of the device's free memory, e.g. 80GiB or 80GB: plan for a GPU "
                  "this machine lacks (with --device cuda, the estimate of a run there)")
      ->transform(CLI::AsSizeValue(true))
      // transform() puts a validator first: the sign is read before the size is converted.
      ->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            return !text.empty() && text[0] == '-' ? "--available " + text + ": a memory size cannot be negative" : "";
          },
          "SIZE", "non_negative_size"))
      ->check(CLI::Validator(
          [](std::string& bytes) -> std::string {
            return bytes == "0" ? "--available 0: give the memory to fit into, more than 0 bytes" : "";
          },
          "SIZE", "positive_size"));
  sub->add_option("--margin", f->in.margin, "Fraction of the available memory kept free")
      ->capture_default_str()
      ->check(fraction_below_one("--margin"));
  add_head_option(sub, f->head, HeadUse::as_published);
  return {sub, [f, sub] {
            f->in.seq_len_is_default = sub->get_option("--seq-len")->count() == 0;
            f->in.head = head_to_load(f->head, HeadUse::as_published);
            return run_estimate(*f);
          }};
}

}  // namespace tach::cli
