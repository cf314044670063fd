#include "tokenizer/post_processors.h"

#include "tokenizer/normalized.h"
#include "tokenizer/unicode.h"

namespace tach::tokenizer {

namespace {

void push_special(Encoding& e, int32_t id, const std::string& token, int32_t type_id) {
  e.ids.push_back(id);
  e.tokens.push_back(token);
  e.offsets.push_back({0, 0});
  e.type_ids.push_back(type_id);
  e.special_tokens_mask.push_back(1);
  e.attention_mask.push_back(1);
  e.word_ids.push_back(-1);
  e.sequence_ids.push_back(-1);
}

// sequence: 0 for the first of a pair (or a single sequence), 1 for the second.
void append(Encoding& out, const Encoding& e, int32_t type_id, int32_t sequence) {
  for (size_t i = 0; i < e.size(); ++i) {
    out.ids.push_back(e.ids[i]);
    out.tokens.push_back(e.tokens[i]);
    out.offsets.push_back(e.offsets[i]);
    out.type_ids.push_back(type_id);
    out.special_tokens_mask.push_back(e.special_tokens_mask[i]);
    out.attention_mask.push_back(1);
    out.word_ids.push_back(e.word_ids[i]);
    out.sequence_ids.push_back(sequence);
  }
}

// ByteLevel's trim_offsets: offsets leave out the spaces a token carries at either end.
void trim_offsets(Encoding& e, const std::string& text) {
  for (auto& [a, b] : e.offsets) {
    while (a < b && a < text.size() && text[a] == ' ') ++a;
    while (b > a && b <= text.size() && text[b - 1] == ' ') --b;
  }
}

struct TemplatePiece {
  bool special;
  std::string id;  // special token name, or "A" / "B"
  int32_t type_id;
};

class Template final : public PostProcessor {
 public:
  struct Special {
    std::vector<int32_t> ids;
    std::vector<std::string> tokens;
  };
  Template(std::vector<TemplatePiece> single, std::vector<TemplatePiece> pair, std::map<std::string, Special> specials)
      : single_(std::move(single)), pair_(std::move(pair)), specials_(std::move(specials)) {}

  void process(Encoding& a, Encoding* b, bool add, const std::string&, const std::string&) const override {
    if (!add) return concatenate(a, b);
    Encoding out;
    for (const auto& p : b ? pair_ : single_) {
      if (p.special) {
        const Special& s = specials_.at(p.id);
        for (size_t i = 0; i < s.ids.size(); ++i) push_special(out, s.ids[i], s.tokens[i], p.type_id);
      } else {
        // A single-sequence template names only $A (checked when the template is read).
        const bool first = p.id == "A" || b == nullptr;
        append(out, first ? a : *b, p.type_id, first ? 0 : 1);
      }
    }
    a = std::move(out);
  }
  size_t added_tokens(bool pair) const override {
    size_t n = 0;
    for (const auto& p : pair ? pair_ : single_)
      if (p.special) n += specials_.at(p.id).ids.size();
    return n;
  }
  bool overflow_keeps_sequence_type_ids() const override { return true; }

 private:
  std::vector<TemplatePiece> single_, pair_;
  std::map<std::string, Special> specials_;
};

// BertProcessing / RobertaProcessing: [CLS] A [SEP] (B [SEP]); Roberta puts two separators
// between the sequences and gives every token type 0.
class ClsSep final : public PostProcessor {
 public:
  ClsSep(std::string cls, int32_t cls_id, std::string sep, int32_t sep_id, bool roberta, bool trim)
      : cls_(std::move(cls)), sep_(std::move(sep)), cls_id_(cls_id), sep_id_(sep_id), roberta_(roberta), trim_(trim) {}
  void process(Encoding& a, Encoding* b, bool add, const std::string& ta, const std::string& tb) const override {
    if (trim_) {
      trim_offsets(a, ta);
      if (b) trim_offsets(*b, tb);
    }
    if (!add) return concatenate(a, b);
    Encoding out;
    push_special(out, cls_id_, cls_, 0);
    append(out, a, 0, 0);
    push_special(out, sep_id_, sep_, 0);
    if (b) {
      const int32_t t = roberta_ ? 0 : 1;
      if (roberta_) push_special(out, sep_id_, sep_, 0);
      append(out, *b, t, 1);
      push_special(out, sep_id_, sep_, t);
    }
    a = std::move(out);
  }
  size_t added_tokens(bool pair) const override { return pair ? (roberta_ ? 4 : 3) : 2; }

 private:
  std::string cls_, sep_;
  int32_t cls_id_, sep_id_;
  bool roberta_, trim_;
};

class ByteLevelPost final : public PostProcessor {
 public:
  explicit ByteLevelPost(bool trim) : trim_(trim) {}
  void process(Encoding& a, Encoding* b, bool, const std::string& ta, const std::string& tb) const override {
    if (trim_) {
      trim_offsets(a, ta);
      if (b) trim_offsets(*b, tb);
    }
    concatenate(a, b);
  }
  size_t added_tokens(bool) const override { return 0; }

 private:
  bool trim_;
};

std::vector<TemplatePiece> parse_template(const JsonAt& j) {
  std::vector<TemplatePiece> out;
  j.expect_array();
  for (size_t i = 0; i < j.value.size(); ++i) {
    JsonAt p = j.at(i);
    if (p.has("SpecialToken")) {
      JsonAt s = p.at("SpecialToken");
      out.push_back({true, s.str("id"), int32_t(s.integer_or("type_id", 0))});
    } else if (p.has("Sequence")) {
      JsonAt s = p.at("Sequence");
      const std::string id = s.str("id");
      if (id != "A" && id != "B") s.at("id").fail("expected \"A\" or \"B\"");
      out.push_back({false, id, int32_t(s.integer_or("type_id", 0))});
    } else {
      p.fail("expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
  }
  return out;
}

std::pair<std::string, int32_t> token_pair(const JsonAt& j) {
  if (!j.value.is_array() || j.value.size() != 2 || !j.value[0].is_string() || !j.value[1].is_number_integer())
    j.fail("expected [\"token\", id]");
  return {j.value[0].get<std::string>(), j.value[1].get<int32_t>()};
}

}  // namespace

void concatenate(Encoding& a, Encoding* b) {
  if (!b) return;
  Encoding out;
  append(out, a, 0, 0);
  append(out, *b, 1, 1);
  a = std::move(out);
}

std::unique_ptr<PostProcessor> make_bert_processing(const std::string& cls, int32_t cls_id, const std::string& sep,
                                                    int32_t sep_id) {
  return std::make_unique<ClsSep>(cls, cls_id, sep, sep_id, false, false);
}

std::unique_ptr<PostProcessor> make_post_processor(const JsonAt& j) {
  if (j.value.is_null()) return nullptr;
  const std::string type = j.type();
  if (type == "TemplateProcessing") {
    std::map<std::string, Template::Special> specials;
    if (j.has("special_tokens")) {
      JsonAt st = j.at("special_tokens");
      for (auto it = st.value.begin(); it != st.value.end(); ++it) {
        JsonAt s{*it, st.file, st.path + "[\"" + it.key() + "\"]"};
        Template::Special sp;
        try {
          sp.ids = s.at("ids").value.get<std::vector<int32_t>>();
          sp.tokens = s.at("tokens").value.get<std::vector<std::string>>();
        } catch (const json::exception&) { s.fail("expected {\"ids\": [ints], \"tokens\": [strings]}"); }
        if (sp.ids.size() != sp.tokens.size()) s.fail("ids and tokens differ in length");
        specials[it.key()] = std::move(sp);
      }
    }
    auto single = parse_template(j.at("single"));
    auto pair = j.has("pair") ? parse_template(j.at("pair")) : single;
    for (const auto& p : single)
      if (!p.special && p.id == "B") j.at("single").fail("the single-sequence template uses $B, which only a pair has");
    for (const auto* t : {&single, &pair})
      for (const auto& p : *t)
        if (p.special && !specials.count(p.id))
          j.at("special_tokens").fail("the template uses \"" + p.id + "\", which is not defined here");
    return std::make_unique<Template>(std::move(single), std::move(pair), std::move(specials));
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    auto [sep, sep_id] = token_pair(j.at("sep"));
    auto [cls, cls_id] = token_pair(j.at("cls"));
    const bool roberta = type == "RobertaProcessing";
    return std::make_unique<ClsSep>(cls, cls_id, sep, sep_id, roberta, roberta && j.boolean_or("trim_offsets", true));
  }
  if (type == "ByteLevel") return std::make_unique<ByteLevelPost>(j.boolean_or("trim_offsets", true));
  j.at("type").fail(
      "post_processor \"" + type +
      "\" is not supported (supported: TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel)");
}

namespace {

class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  std::string decode(const std::vector<std::string>& tokens) const override {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string t = tokens[i];
      if (i > 0) t = t.rfind(prefix_, 0) == 0 ? t.substr(prefix_.size()) : " " + t;
      if (cleanup_) t = cleanup(t);
      out += t;
    }
    return out;
  }

 private:
  // tokenizers' decoders::wordpiece::cleanup.
  static std::string cleanup(std::string s) {
    static const std::pair<const char*, const char*> rules[] = {
        {" .", "."},   {" ?", "?"},           {" !", "!"},   {" ,", ","},     {" ' ", "'"},   {" n't", "n't"},
        {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
    for (const auto& [from, to] : rules) {
      const std::string f = from, t = to;
      for (size_t p = s.find(f); p != std::string::npos; p = s.find(f, p + t.size())) s.replace(p, f.size(), t);
    }
    return s;
  }
  std::string prefix_;
  bool cleanup_;
};

class ByteLevelDecoder final : public Decoder {
 public:
  std::string decode(const std::vector<std::string>& tokens) const override {
    std::string out;
    for (const auto& t : tokens)
      for (size_t i = 0; i < t.size();) {
        const size_t start = i;
        const char32_t c = next_codepoint(t, i);
        const int b = char_to_byte(c);
        if (b >= 0) out += char(b);
        else out.append(t, start, i - start);  // not from the byte table: keep as is
      }
    return out;
  }
};

class JoinDecoder final : public Decoder {
 public:
  std::string decode(const std::vector<std::string>& tokens) const override {
    std::string out;
    for (size_t i = 0; i < tokens.size(); ++i) out += (i ? " " : "") + tokens[i];
    return out;
  }
};

}  // namespace

std::unique_ptr<Decoder> make_wordpiece_decoder(const std::string& prefix, bool cleanup) {
  return std::make_unique<WordPieceDecoder>(prefix, cleanup);
}
std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }

std::unique_ptr<Decoder> make_decoder(const JsonAt& j) {
  if (j.value.is_null()) return std::make_unique<JoinDecoder>();
  const std::string type = j.type();
  if (type == "WordPiece") return make_wordpiece_decoder(j.str_or("prefix", "##"), j.boolean_or("cleanup", true));
  if (type == "ByteLevel") return make_byte_level_decoder();
  if (auto d = make_chain_decoder(j)) return d;
  j.at("type").fail("decoder \"" + type +
                    "\" is not supported yet (supported: WordPiece, ByteLevel, Metaspace, Replace, ByteFallback, Fuse, "
                    "Strip, Sequence)");
}

}  // namespace tach::tokenizer
