// Fill-mask as transformers' FillMaskPipeline (pipelines/fill_mask.py) does it: softmax over the
// vocabulary at each mask, the top k, each decoded alone and in the text.
#include "tach/fill_mask.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <numeric>

#include "tach/error.h"

namespace tach {

namespace fs = std::filesystem;
using json = nlohmann::json;

namespace {

json read_json_or_empty(const fs::path& path) {
  if (!fs::is_regular_file(path)) return json::object();
  std::ifstream in(path);
  try {
    return json::parse(in);
  } catch (const json::exception& e) { throw Error(path.string() + ": not valid JSON: " + e.what()); }
}

// A special token as tokenizer_config.json and special_tokens_map.json write it: "[MASK]" or
// {"content": "[MASK]", ...}. "" when absent.
std::string special_token(const json& config, const std::string& key) {
  if (!config.is_object() || !config.contains(key)) return "";
  const json& v = config[key];
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"].get<std::string>();
  return "";
}

// transformers 5 skips the clean-up for a BPE model (tokenization_utils_tokenizers.py, _decode).
bool bpe_model(const fs::path& dir, const fs::path& tokenizer_json) {
  if (fs::is_regular_file(tokenizer_json)) {
    const json j = read_json_or_empty(tokenizer_json);
    return j.contains("model") && j["model"].is_object() && j["model"].value("type", std::string()) == "BPE";
  }
  return fs::is_regular_file(dir / "merges.txt");
}

// PreTrainedTokenizerBase.clean_up_tokenization: the same replacements in the same order.
std::string clean_up_tokenization(std::string text) {
  static const std::pair<const char*, const char*> kReplacements[] = {
      {" .", "."},     {" ?", "?"},   {" !", "!"},   {" ,", ","},     {" ' ", "'"},
      {" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kReplacements) {
    const std::string f(from), t(to);
    std::string out;
    size_t at = 0;
    for (size_t hit; (hit = text.find(f, at)) != std::string::npos; at = hit + f.size())
      out += text.substr(at, hit - at) + t;
    text = out + text.substr(at);
  }
  return text;
}

std::string quoted_text(const std::string& text) {
  constexpr size_t kShown = 60;
  if (text.size() <= kShown) return "\"" + text + "\"";
  size_t cut = kShown;  // never inside a UTF-8 sequence
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return "\"" + text.substr(0, cut) + "...\"";
}

}  // namespace

MaskTokens read_mask_tokens(const std::string& tokenizer_path, const Tokenizer& tokenizer) {
  const fs::path given(tokenizer_path);
  const fs::path dir = fs::is_directory(given) ? given : given.parent_path();
  const fs::path tokenizer_json = fs::is_directory(given) ? given / "tokenizer.json" : given;
  const json config = read_json_or_empty(dir / "tokenizer_config.json");
  const json specials = read_json_or_empty(dir / "special_tokens_map.json");
  auto named = [&](const std::string& key) {
    const std::string t = special_token(config, key);
    return t.empty() ? special_token(specials, key) : t;
  };
  MaskTokens out;
  out.mask_token = named("mask_token");
  if (out.mask_token.empty())
    for (const char* guess : {"[MASK]", "<mask>"})
      if (tokenizer.token_to_id(guess)) {
        out.mask_token = guess;
        break;
      }
  const auto mask_id = out.mask_token.empty() ? std::nullopt : tokenizer.token_to_id(out.mask_token);
  if (!mask_id)
    throw Error(tokenizer_path + ": the tokenizer has no mask token" +
                (out.mask_token.empty() ? std::string(" ([MASK] or <mask>)")
                                        : " (its files name " + out.mask_token + ", which is not in its vocabulary)") +
                ", so it cannot fill masks; give a masked-LM checkpoint's tokenizer with --tokenizer");
  out.mask_id = *mask_id;
  if (const std::string pad = named("pad_token"); !pad.empty()) out.pad_id = tokenizer.token_to_id(pad);
  out.clean_up_spaces =
      config.is_object() && config.value("clean_up_tokenization_spaces", false) && !bpe_model(dir, tokenizer_json);
  return out;
}

std::string decode_as_transformers(const Tokenizer& tokenizer, const MaskTokens& tokens,
                                   const std::vector<int32_t>& ids, bool skip_special_tokens) {
  std::string text = tokenizer.decode(ids, skip_special_tokens);
  return tokens.clean_up_spaces ? clean_up_tokenization(std::move(text)) : text;
}

std::vector<int64_t> mask_positions(const std::vector<int32_t>& ids, const MaskTokens& tokens,
                                    const std::string& text) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] == tokens.mask_id) out.push_back(int64_t(i));
  usage_check(!out.empty(), "the text " + quoted_text(text) + " has no mask token (" + tokens.mask_token + "): put " +
                                tokens.mask_token + " where a token should be predicted");
  return out;
}

std::vector<std::vector<FillMaskCandidate>> fill_mask_candidates(const Tokenizer& tokenizer, const MaskTokens& tokens,
                                                                 const std::vector<int32_t>& ids,
                                                                 const std::vector<int64_t>& positions,
                                                                 const Tensor& mask_logits, int64_t top_k) {
  check(mask_logits.dtype() == DType::f32 && mask_logits.dim() == 2 &&
            mask_logits.size(0) == int64_t(positions.size()) && mask_logits.device().kind == DeviceKind::cpu,
        "fill-mask: expected f32 logits [" + std::to_string(positions.size()) + ", vocabulary] on the host, got " +
            mask_logits.describe());
  check(top_k >= 1, "fill-mask: top_k must be at least 1");
  const Tensor logits = mask_logits.contiguous();
  const int64_t V = logits.size(1);
  const int64_t k = std::min(top_k, V);
  // Several masks: the pipeline keeps special tokens (the other masks among them) in the sequences.
  const bool single_mask = positions.size() == 1;
  std::vector<std::vector<FillMaskCandidate>> out;
  std::vector<int32_t> order(static_cast<size_t>(V), 0);
  for (size_t m = 0; m < positions.size(); ++m) {
    check(positions[m] >= 0 && positions[m] < int64_t(ids.size()), "fill-mask: mask position out of the text");
    const float* row = logits.data<float>() + int64_t(m) * V;
    // Softmax with the row's maximum subtracted, as torch computes it (in double here: the
    // scores are then within f32 rounding of torch's).
    const double peak = *std::max_element(row, row + V);
    double sum = 0;
    for (int64_t v = 0; v < V; ++v) sum += std::exp(double(row[v]) - peak);
    std::iota(order.begin(), order.end(), 0);
    // Best first; ties go to the lower id.
    std::partial_sort(order.begin(), order.begin() + k, order.end(),
                      [&](int32_t a, int32_t b) { return row[a] != row[b] ? row[a] > row[b] : a < b; });
    std::vector<FillMaskCandidate> candidates;
    for (int64_t i = 0; i < k; ++i) {
      FillMaskCandidate c;
      c.token = order[size_t(i)];
      c.score = float(std::exp(double(row[c.token]) - peak) / sum);
      c.token_str = decode_as_transformers(tokenizer, tokens, {c.token}, false);
      std::vector<int32_t> filled;
      for (size_t t = 0; t < ids.size(); ++t) {
        const int32_t id = int64_t(t) == positions[m] ? c.token : ids[t];
        if (!tokens.pad_id || id != *tokens.pad_id) filled.push_back(id);
      }
      c.sequence = decode_as_transformers(tokenizer, tokens, filled, single_mask);
      candidates.push_back(std::move(c));
    }
    out.push_back(std::move(candidates));
  }
  return out;
}

std::vector<FillMaskResult> fill_mask(const Model& model, const Tokenizer& tokenizer, const MaskTokens& tokens,
                                      const std::vector<std::string>& texts, int64_t top_k, int64_t batch_size) {
  const ModelInfo& info = model.info();
  check(info.head == Head::masked_lm,
        info.spec + " (" + info.architecture + ") runs " +
            (info.head == Head::none ? std::string("no head") : "a " + std::string(head_name(info.head)) + " head") +
            ": fill-mask needs a masked LM's head, as a *ForMaskedLM checkpoint has it");
  usage_check(!texts.empty(), "no texts: give --text with a " + tokens.mask_token + " in it");
  usage_check(batch_size >= 1, "fill-mask: batch size " + std::to_string(batch_size) + ": must be at least 1");
  std::vector<FillMaskResult> out;
  std::vector<std::vector<int32_t>> type_ids;
  for (const std::string& text : texts) {
    FillMaskResult r;
    r.text = text;
    // As the pipeline calls the tokenizer: special tokens added, nothing truncated.
    const Encoding e = tokenizer.encode(text);
    r.ids = e.ids;
    r.mask_positions = mask_positions(r.ids, tokens, text);
    usage_check(info.max_positions <= 0 || int64_t(r.ids.size()) <= info.max_positions,
                "the text " + quoted_text(text) + " is " + std::to_string(r.ids.size()) + " tokens, more than the " +
                    std::to_string(info.max_positions) + " positions of " + info.spec);
    type_ids.push_back(e.type_ids);
    out.push_back(std::move(r));
  }
  // batch_size texts per forward, padded on the right; the head runs at the masks alone.
  for (size_t first = 0; first < out.size(); first += size_t(batch_size)) {
    const size_t end = std::min(out.size(), first + size_t(batch_size));
    std::vector<std::vector<int32_t>> rows, types;
    std::vector<std::vector<int64_t>> at;
    for (size_t i = first; i < end; ++i) {
      rows.push_back(out[i].ids);
      types.push_back(type_ids[i]);
      at.push_back(out[i].mask_positions);
    }
    const TokenBatch batch =
        TokenBatch::from_rows(rows, info.pad_token_id, info.type_vocab_size > 0 ? types : decltype(types){});
    const Tensor logits = model.token_logits_at(batch, at);  // [masks in the batch, V]
    const int64_t V = logits.size(1);
    int64_t row = 0;
    for (size_t i = first; i < end; ++i) {
      const int64_t M = int64_t(out[i].mask_positions.size());
      out[i].masks =
          fill_mask_candidates(tokenizer, tokens, out[i].ids, out[i].mask_positions, logits.narrow(0, row, M), top_k);
      row += M;
    }
    check(row == logits.size(0) && V > 0, "fill-mask: the model returned " + std::to_string(logits.size(0)) +
                                              " rows of logits for " + std::to_string(row) + " masks");
  }
  return out;
}

}  // namespace tach
