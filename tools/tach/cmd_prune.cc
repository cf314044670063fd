// tach prune: a smaller checkpoint with the lowest-ranked attention heads, FFN neurons or whole
// layers removed, and what that saves.
#include <iostream>

#include "commands.h"
#include "format.h"
#include "usage.h"
#include "tach/error.h"
#include "tach/parameter_count.h"
#include "tach/prune.h"

namespace tach::cli {

namespace {

// "4.39 M -> 3.10 M (-29%)"
std::string before_after(double before, double after, const std::string& a, const std::string& b) {
  const double change = before > 0 ? 100.0 * (after - before) / before : 0;
  return a + " -> " + b + " (" + (change > 0 ? "+" : "") + fixed(change, 0) + "%)";
}

// "1 layer", "3 layers"
std::string count(int64_t n, const std::string& what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

}  // namespace

Command add_prune_command(CLI::App& app) {
  auto o = std::make_shared<PruneOptions>();
  auto heads = std::make_shared<std::string>();
  CLI::App* sub = app.add_subcommand(
      "prune", "Remove attention heads, FFN neurons or whole layers from an encoder and write the smaller checkpoint");
  sub->add_option("-m,--model", o->model, "The model: a directory or a hub id in the HF cache")->required();
  sub->add_option("-o,--output", o->output,
                  "Directory to write (config.json, model.safetensors, the tokenizer files, prune_scores.json, "
                  "prune_summary.json); an existing one is replaced only once the new one is complete")
      ->required();
  sub->add_option("--heads", *heads,
                  "Heads to remove: a fraction of each layer's heads in [0, 1) (the lowest-ranked), or a list in "
                  "config.json's pruned_heads spelling, '{\"0\": [1, 3], \"5\": [0]}'");
  sub->add_option("--ffn", o->ffn,
                  "The fraction of FFN neurons to remove in [0, 1): the same count in every layer, the "
                  "lowest-ranked of each")
      ->check(fraction_below_one("--ffn"));
  sub->add_option("--layers", o->layers,
                  "Whole layers to remove: a count (the lowest-ranked), or a list of layer indices (\"1,3\"; "
                  "\"2,\" for layer 2 alone); the rest are renumbered from 0");
  sub->add_option("--by", o->by, "How units are ranked: magnitude (the L2 norm of each unit's weights)")
      ->check(CLI::IsMember({"magnitude"}))
      ->capture_default_str();
  sub->footer(
      "A head's weights are its query, key and value rows and its attention-output columns; a neuron's its\n"
      "intermediate row and output column; a layer's all of those. Heads and neurons are ranked within their\n"
      "layer. Removed heads are listed in config.json's pruned_heads (transformers 4 reads it; transformers 5\n"
      "dropped head pruning and reads only FFN- and layer-pruned checkpoints); a narrower FFN and fewer layers\n"
      "are config.json's own sizes. Removing nothing copies the model's files unchanged. MPNet keeps its\n"
      "heads (one relative position bias table serves them all); decoders have no pruning rule yet.");
  return {sub, [o, heads] {
            if (!heads->empty()) {
              if (heads->front() == '{') o->heads_list = *heads;
              else {
                try {
                  size_t used = 0;
                  o->heads = std::stod(*heads, &used);
                  if (used != heads->size()) throw std::invalid_argument(*heads);
                } catch (const std::exception&) {
                  throw UsageError("--heads " + *heads +
                                   ": must be a fraction in [0, 1) or a list '{\"layer\": [head, ...]}'");
                }
              }
            }
            const PruneResult r = prune_model(*o);
            if (r.unchanged) {
              std::cout << "nothing to remove: copied the model's files unchanged\n  -> " << o->output << "\n";
              return 0;
            }
            std::cout << "removed " << count(r.removed_heads, "attention head") << ", "
                      << count(r.removed_neurons, "FFN neuron") << " and " << count(r.removed_layers, "layer") << " ("
                      << r.family << ", by " << o->by << ")\n";
            const PruneSize &b = r.before, &a = r.after;
            std::cout << "  layers          " << b.layers << " -> " << a.layers << "\n"
                      << "  heads           " << b.heads << " -> " << a.heads << "\n"
                      << "  FFN width       " << b.ffn_width << " -> " << a.ffn_width << "\n"
                      << "  parameters      "
                      << before_after(double(b.parameters), double(a.parameters), parameter_count_text(b.parameters),
                                      parameter_count_text(a.parameters))
                      << "\n"
                      << "  FLOPs per token "
                      << before_after(b.flops_per_token, a.flops_per_token, significant(b.flops_per_token / 1e6, 3),
                                      significant(a.flops_per_token / 1e6, 3))
                      << " MFLOP at " << r.summary_tokens << " tokens\n"
                      << "  weights         "
                      << before_after(double(b.weight_bytes), double(a.weight_bytes), human_bytes(b.weight_bytes),
                                      human_bytes(a.weight_bytes))
                      << "\n";
            for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
            std::cout << "  -> " << o->output << " (scores in prune_scores.json, sizes in prune_summary.json)\n";
            return 0;
          }};
}

}  // namespace tach::cli
