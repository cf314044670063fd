// tach prune: a smaller checkpoint with the lowest-ranked attention heads, FFN neurons or whole
// layers removed, and what that saves.
#include <iostream>

#include "commands.h"
#include "dataset_options.h"
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
      "prune", "Remove attention heads, FFN neurons or whole layers from a model and write the smaller checkpoint");
  sub->add_option("-m,--model", o->model, "The model: a directory or a hub id in the HF cache")->required();
  sub->add_option("-o,--output", o->output,
                  "Directory to write (config.json, model.safetensors, the tokenizer files, prune_scores.json, "
                  "prune_summary.json); an existing one is replaced only once the new one is complete")
      ->required();
  sub->add_option("--heads", *heads,
                  "Heads to remove: a fraction of each layer's heads in [0, 1) (the lowest-ranked; a decoder's in "
                  "whole key/value groups), or an encoder's list in config.json's pruned_heads spelling, "
                  "'{\"0\": [1, 3], \"5\": [0]}'");
  sub->add_option("--ffn", o->ffn,
                  "The fraction of FFN neurons to remove in [0, 1): the same count in every layer, the "
                  "lowest-ranked of each")
      ->check(fraction_below_one("--ffn"));
  sub->add_option("--layers", o->layers,
                  "Whole layers to remove: a count (the lowest-ranked), or a list of layer indices (\"1,3\"; "
                  "\"2,\" for layer 2 alone); the rest are renumbered from 0");
  sub->add_option("--by", o->by,
                  "How units are ranked: magnitude (the L2 norm of each unit's weights) or importance (first-order: "
                  "how much the loss of the model's own head on -d's examples changes were the unit removed)")
      ->check(one_of("--by", {"magnitude", "importance"}))
      ->capture_default_str();
  // --by importance: the calibration data, read as tach train reads its training data.
  sub->add_option("-d,--dataset", o->data.path,
                  "--by importance: calibration data for the model's own head, as tach train --task reads it: a "
                  "sequence classifier's labelled rows (.csv, .tsv, .jsonl, .parquet, .json with splits, a Hub "
                  "dataset such as glue/sst2), a token classifier's tagged words (CoNLL, JSON), question "
                  "answering's SQuAD-format questions, a masked or causal LM's texts");
  sub->add_option("--dataset-format", o->data.format, "auto (from the extension), csv, tsv, jsonl, json, parquet");
  add_dataset_column_options(sub, o->data);
  sub->add_option("--split", o->data.split, "Split of a JSON split file or a Hub dataset (default train)");
  sub->add_option("--calibration-samples", o->calibration_samples,
                  "--by importance: score on the first N examples in file order (all when fewer; a SQuAD "
                  "question's context may give several windows)")
      ->capture_default_str()
      ->check(positive_count("--calibration-samples", "--calibration-samples values"));
  sub->add_option("-k,--tokenizer", o->tokenizer,
                  "--by importance: tokenizer file or directory (default: the model's directory)");
  sub->add_option("-s,--max-length", o->max_length,
                  "--by importance: truncate the examples to this many tokens (never past the model's positions); "
                  "question answering: the windows' length")
      ->capture_default_str()
      ->check(positive_count("--max-length", "--max-length values"));
  sub->add_option("--doc-stride", o->doc_stride,
                  "--by importance, question answering: tokens a long context's windows share (default 128, or "
                  "half the window when that is less)")
      ->check(positive_count("--doc-stride", "--doc-stride values"));
  sub->footer(
      "BERT, DistilBERT, RoBERTa and XLM-R encoders: a head's weights are its query, key and value rows and\n"
      "its attention-output columns; a neuron's its intermediate row and output column; a layer's all of\n"
      "those. Heads and neurons are ranked within their layer. Removed heads are listed in config.json's\n"
      "pruned_heads (transformers 4 reads it; transformers 5 dropped head pruning and reads only FFN- and\n"
      "layer-pruned checkpoints); a narrower FFN and fewer layers are config.json's own sizes. Removing\n"
      "nothing copies the model's files unchanged. MPNet keeps its heads (one relative position bias table\n"
      "serves them all). The pruned model trains like any other, each layer with the heads it kept: tach\n"
      "train on it is the recovery fine-tuning (optionally --distill-from the unpruned model), and the model\n"
      "it saves keeps pruned_heads.\n"
      "\n"
      "Llama, Mistral, Qwen2, Qwen3 and Gemma 3 decoders: heads go as whole key/value groups (a key/value head\n"
      "and the query heads sharing it; its q, k and v rows, biases included, and its o_proj columns), the same\n"
      "count in every layer, as config.json has one num_attention_heads and num_key_value_heads: --heads takes\n"
      "a fraction, rounded to whole groups (said when it rounds), not a list; head_dim is written, so\n"
      "transformers 5 reads the narrower attention as an ordinary config. A neuron is its gate and up rows and\n"
      "its down column. Layers: layer_types is sliced, or written where the family's rule would give a kept\n"
      "layer another kind (sliding or full attention). ModernBERT: FFN neurons (both halves of Wi) and layers\n"
      "but layer 0 (transformers builds it without an attention norm); not heads (its config has no head_dim,\n"
      "so fewer heads would be wider ones).\n"
      "\n"
      "--by importance (Michel et al. 2019) gates each unit (xi = 1) and scores it by |dL/dxi|, averaged over\n"
      "the calibration rows: L is the loss of the model's own head, the one tach train lowers, on each row of\n"
      "-d read as tach train --task reads it, with tach's forward and backward in f32, dropout off. A sequence\n"
      "classifier: cross-entropy, MSE or BCE by its problem_type on each labelled row. A token classifier:\n"
      "cross-entropy over a sentence's labelled tokens (each word's first sub-token). Question answering:\n"
      "(CE(start) + CE(end)) / 2 on each window of -s tokens a context is cut into (--doc-stride apart). A\n"
      "masked LM: cross-entropy at the masked tokens, masked as tach train's first epoch masks them with its\n"
      "default --seed 42 (15% of the tokens), so the scores are the same on every run; a text with none\n"
      "masked is not scored. A head's gate multiplies its context (the attention output projection's input),\n"
      "a neuron's its FFN activation, a layer's its whole contribution (out = in + xi (layer(in) - in)): so a\n"
      "layer's score is the loss change of removing it, LayerNorms included, not the sum of its units'.\n"
      "Padding is left out. Scores are not normalised per layer (heads and neurons are ranked within their\n"
      "layer, where a scale changes nothing). A decoder's key/value group is gated on its query heads'\n"
      "contexts together, as it is removed. A causal LM (Llama, Mistral, Qwen2, Qwen3 …ForCausalLM): the\n"
      "next-token cross-entropy on -d's texts (--text-column). A bare model has no loss: rank it --by\n"
      "magnitude. prune_scores.json's \"calibration\" names the data, the rows, the head\n"
      "and its loss (and the masked LM's masks).");
  return {sub, [o, heads, sub] {
            for (const char* option : {"--calibration-samples", "-k", "-s", "--doc-stride", "--dataset-format",
                                       "--split", "--text-column", "--text-pair-column", "--label-column", "--header"})
              usage_check(
                  o->by == "importance" || sub->count(option) == 0,
                  sub->get_option(option)->get_name() + " is for --by importance; --by " + o->by + " reads no data");
            check_split_applies(o->data, "--split");
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
            // What --by importance scored, line by line: the data, its examples, the head's loss.
            if (!r.calibration.empty()) {
              std::string text = r.calibration;
              for (size_t at = 0; (at = text.find('\n', at)) != std::string::npos; at += 3) text.replace(at, 1, "\n  ");
              std::cout << "importance " << text << "\n";
            }
            if (r.unchanged) {
              for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
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
