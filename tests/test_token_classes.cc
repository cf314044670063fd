// Token classification: seqeval's entities and metrics against the seqeval package
// (tests/fixtures/token_classes/seqeval.json, from scripts/golden/make_token_class_golden.py); the
// CoNLL and JSON readers of tagged words; entities as the token-classification pipeline gives them
// (tests/fixtures/token_classes/entity_groups.json, transformers on the tiny models of
// tests/fixtures/heads).
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "tach/error.h"
#include "tach/model.h"
#include "tach/tokenizer.h"
#include "data/conll.h"
#include "tach/token_classification.h"
#include "tasks/seqeval.h"
#include "tasks/split_words.h"
#include "test_util.h"

using nlohmann::json;
using namespace tach;
using namespace tach::tasks;

namespace {

const json& seqeval_golden() {
  static const json j = json::parse(test::read_text(test::fixtures_dir() + "/token_classes/seqeval.json"));
  return j;
}

std::vector<TagSequence> sequences(const json& j) { return j.get<std::vector<TagSequence>>(); }

// Every double is the one seqeval computed, to the bit (JSON holds Python's repr).
void expect_scores(const EntityTypeScores& got, const json& want, const std::string& where) {
  for (const char* key : {"precision", "recall", "f1"}) {
    const double g = key[0] == 'p' ? got.precision : key[0] == 'r' ? got.recall : got.f1;
    if (want[key].is_null()) {
      EXPECT_TRUE(std::isnan(g)) << where << " " << key;
    } else {
      EXPECT_EQ(g, want[key].get<double>()) << where << " " << key;
    }
  }
  EXPECT_EQ(got.support, want["support"].get<int64_t>()) << where;
}

}  // namespace

TEST(Seqeval, MetricsEqualTheSeqevalPackage) {
  int compared = 0, refused = 0;
  for (const json& c : seqeval_golden()["metrics"]) {
    const std::string where = c["name"].get<std::string>() + " (" + c["scheme"].get<std::string>() + ")";
    const TagScheme scheme = parse_tag_scheme(c["scheme"]);
    if (c.contains("error")) {
      EXPECT_NE(test::error_of([&] { seqeval_scores(sequences(c["truth"]), sequences(c["predicted"]), scheme); }),
                "(no error)")
          << where << ": seqeval raised " << c["error"];
      ++refused;
      continue;
    }
    const SeqevalResult r = seqeval_scores(sequences(c["truth"]), sequences(c["predicted"]), scheme);
    ASSERT_EQ(r.per_type.size(), c["per_type"].size()) << where;
    for (size_t i = 0; i < r.per_type.size(); ++i) {
      EXPECT_EQ(r.per_type[i].type, c["per_type"][i]["type"]) << where;
      expect_scores(r.per_type[i], c["per_type"][i], where + " " + r.per_type[i].type);
    }
    expect_scores(r.micro, c["micro"], where + " micro");
    expect_scores(r.macro, c["macro"], where + " macro");
    expect_scores(r.weighted, c["weighted"], where + " weighted");
    if (c.contains("accuracy")) { EXPECT_EQ(r.token_accuracy, c["accuracy"].get<double>()) << where; }
    ++compared;
  }
  EXPECT_GT(compared, 300);
  EXPECT_GT(refused, 50);
}

TEST(Seqeval, ConllevalChunksEqualGetEntities) {
  for (const json& c : seqeval_golden()["chunks"]) {
    const std::vector<Chunk> got = conlleval_chunks(c["tags"].get<TagSequence>());
    ASSERT_EQ(got.size(), c["chunks"].size()) << c["tags"].dump();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].type, c["chunks"][i][0]) << c["tags"].dump();
      EXPECT_EQ(got[i].first, c["chunks"][i][1]) << c["tags"].dump();
      EXPECT_EQ(got[i].last, c["chunks"][i][2]) << c["tags"].dump();
    }
  }
}

TEST(Seqeval, StrictEntitiesEqualTheSchemesTokens) {
  for (const json& c : seqeval_golden()["strict_entities"]) {
    const std::vector<TaggedEntity> got =
        strict_entities(c["tags"].get<TagSequence>(), parse_tag_scheme(c["scheme"]), 0, "test");
    const std::string where = c["scheme"].get<std::string>() + " " + c["tags"].dump();
    ASSERT_EQ(got.size(), c["entities"].size()) << where;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].type, c["entities"][i][0]) << where;
      EXPECT_EQ(got[i].start, c["entities"][i][1]) << where;
      EXPECT_EQ(got[i].end, c["entities"][i][2]) << where;
    }
  }
}

TEST(Seqeval, ErrorsNameTheTagTheSchemeAndWhere) {
  const std::string bad_prefix = test::error_of([] {
    seqeval_scores({{"O", "B-PER"}, {"O", "S-PER"}}, {{"O", "B-PER"}, {"O", "O"}}, TagScheme::iob2);
  });
  EXPECT_NE(bad_prefix.find("'S-PER'"), std::string::npos) << bad_prefix;
  EXPECT_NE(bad_prefix.find("sentence 2, token 2"), std::string::npos) << bad_prefix;
  EXPECT_NE(bad_prefix.find("IOB2"), std::string::npos) << bad_prefix;
  EXPECT_NE(test::error_of([] {
              seqeval_scores({{"O"}}, {{"O", "O"}}, TagScheme::conlleval);
            }).find("sentence 1"),
            std::string::npos);
  EXPECT_NE(test::error_of([] { seqeval_scores({{""}}, {{"O"}}, TagScheme::conlleval); }).find("empty tag"),
            std::string::npos);
  EXPECT_THROW(parse_tag_scheme("IOB3"), UsageError);
  EXPECT_EQ(parse_tag_scheme("bilou"), TagScheme::bilou);
  EXPECT_EQ(parse_tag_scheme("conlleval"), TagScheme::conlleval);
}

// ---- CoNLL-style text and JSON records ----

TEST(TaggedData, ConllSentencesDocstartAndColumns) {
  const std::string text =
      "\xEF\xBB\xBF-DOCSTART- -X- -X- O\r\n"
      "\r\n"
      "EU NNP B-NP B-ORG\r\n"
      "rejects VBZ B-VP O\n"
      "German JJ B-NP B-MISC\n"
      "\n\n"
      "Peter NNP B-NP B-PER\n"
      "Blackburn\tNNP  B-NP\tI-PER\n"
      "-DOCSTART- -X- -X- O\n"
      "BRUSSELS NNP B-NP B-LOC";
  const auto s = data::read_conll("x.conll", text, -1);
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(s[0].words, (std::vector<std::string>{"EU", "rejects", "German"}));
  EXPECT_EQ(s[0].tags, (std::vector<std::string>{"B-ORG", "O", "B-MISC"}));
  EXPECT_EQ(s[0].source, 3);
  EXPECT_EQ(s[1].tags, (std::vector<std::string>{"B-PER", "I-PER"}));
  EXPECT_EQ(s[2].words, (std::vector<std::string>{"BRUSSELS"}));
  // --tag-column 1: the part-of-speech column
  EXPECT_EQ(data::read_conll("x.conll", text, 1)[0].tags, (std::vector<std::string>{"NNP", "VBZ", "JJ"}));
  EXPECT_EQ(data::read_conll("x.conll", text, -2)[0].tags, (std::vector<std::string>{"B-NP", "B-VP", "B-NP"}));
}

TEST(TaggedData, MalformedConllLinesNameTheFileAndLine) {
  const std::string one_column = test::error_of([] { data::read_conll("ner.txt", "EU B-ORG\nrejects\n", -1); });
  EXPECT_NE(one_column.find("ner.txt:2"), std::string::npos) << one_column;
  EXPECT_NE(one_column.find("'rejects'"), std::string::npos) << one_column;
  const std::string short_line = test::error_of([] { data::read_conll("ner.txt", "EU NNP B-ORG\nEU O\n", 2); });
  EXPECT_NE(short_line.find("ner.txt:2"), std::string::npos) << short_line;
  // the tag column may not be the word's
  EXPECT_NE(test::error_of([] { data::read_conll("ner.txt", "EU B-ORG\n", 0); }), "(no error)");
}

// A TSV of sentences (GLUE's layout) is not CoNLL: read as CoNLL it was one sentence of every
// row's words, tagged with the labels.
TEST(TaggedData, TableOfSentencesIsNotConll) {
  const std::string e = test::error_of(
      [] { data::read_conll("dev.tsv", "sentence\tlabel\nit 's a charming journey . \t1\nbleak \t0\n", -1); });
  EXPECT_NE(e.find("dev.tsv:2"), std::string::npos) << e;
  EXPECT_NE(e.find("a sentence per line"), std::string::npos) << e;
  EXPECT_NE(e.find("'sentence label'"), std::string::npos) << e;
  EXPECT_NE(e.find("one word per line with its tag"), std::string::npos) << e;
  // tab-separated CoNLL columns (single words) still read
  EXPECT_EQ(data::read_conll("ner.tsv", "EU\tB-ORG\nrejects\tO\n", -1)[0].words.size(), 2u);
}

TEST(TaggedData, JsonRecordsWithNamesOrIds) {
  data::TaggedJsonOptions o;
  o.tag_names = {"O", "B-PER", "I-PER"};
  const auto lines =
      data::read_tagged_json("d.jsonl",
                             "{\"id\": \"0\", \"tokens\": [\"Ada\", \"Lovelace\"], \"ner_tags\": [1, 2]}\n\n"
                             "{\"tokens\": [\"x\"], \"ner_tags\": [\"O\"]}\n",
                             true, o);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].tags, (std::vector<std::string>{"B-PER", "I-PER"}));
  EXPECT_EQ(lines[1].source, 3);
  const auto splits = data::read_tagged_json(
      "d.json", "{\"train\": [], \"test\": [{\"tokens\": [\"a\"], \"ner_tags\": [0]}]}", false, o);
  ASSERT_EQ(splits.size(), 1u);
  EXPECT_EQ(splits[0].tags[0], "O");
  EXPECT_EQ(data::read_tagged_json("d.json", "[{\"tokens\": [\"a\"], \"ner_tags\": [\"B-X\"]}]", false, {})[0].tags[0],
            "B-X");

  const std::string out_of_range =
      test::error_of([&] { data::read_tagged_json("d.jsonl", "{\"tokens\": [\"a\"], \"ner_tags\": [3]}", true, o); });
  EXPECT_NE(out_of_range.find("d.jsonl:1"), std::string::npos) << out_of_range;
  EXPECT_NE(out_of_range.find("3 tag names"), std::string::npos) << out_of_range;
  const std::string no_names =
      test::error_of([] { data::read_tagged_json("d.jsonl", "{\"tokens\": [\"a\"], \"ner_tags\": [0]}", true, {}); });
  EXPECT_NE(no_names.find("integer tags"), std::string::npos) << no_names;
  const std::string lengths = test::error_of(
      [&] { data::read_tagged_json("d.jsonl", "{\"tokens\": [\"a\", \"b\"], \"ner_tags\": [0]}", true, o); });
  EXPECT_NE(lengths.find("2 words"), std::string::npos) << lengths;
  const std::string missing =
      test::error_of([&] { data::read_tagged_json("d.jsonl", "{\"words\": [\"a\"], \"tags\": [0]}", true, o); });
  EXPECT_NE(missing.find("no key 'tokens'"), std::string::npos) << missing;
  EXPECT_NE(missing.find("'words'"), std::string::npos) << missing;
}

TEST(TaggedData, FilesByExtensionAndEmptyFilesRefused) {
  test::TempDir dir;
  test::write_text(dir.file("a.conll"), "EU B-ORG\n\nx O\n");
  test::write_text(dir.file("b.json"), "[{\"tokens\": [\"a\"], \"ner_tags\": [\"O\"]}]");
  test::write_text(dir.file("empty.txt"), "\n-DOCSTART- O\n\n");
  EXPECT_EQ(data::read_tagged_file(dir.file("a.conll"), "auto", -1, {}).size(), 2u);
  EXPECT_EQ(data::read_tagged_file(dir.file("b.json"), "auto", -1, {}).size(), 1u);
  EXPECT_NE(test::error_of([&] { data::read_tagged_file(dir.file("empty.txt"), "auto", -1, {}); }).find("no sentences"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { data::read_tagged_file(dir.file("a.conll"), "csv", -1, {}); }).find("'csv'"),
            std::string::npos);
}

// ---- the token-classification pipeline's entities ----

namespace {

std::string token_class_dir() { return test::fixtures_dir() + "/token_classes"; }

// A model of tests/fixtures/heads, or a skip when the heads' fixtures are absent.
std::unique_ptr<EncoderModel> ner_model(const std::string& name) {
  const std::string dir = test::fixtures_dir() + "/heads/" + name;
  if (!std::filesystem::exists(dir + "/config.json")) return nullptr;
  return load_model(dir);
}

}  // namespace

TEST(EntityGroups, EqualTheTokenClassificationPipeline) {
  const json golden = json::parse(test::read_text(token_class_dir() + "/entity_groups.json"));
  const auto tokenizer = Tokenizer::load(token_class_dir() + "/tokenizer-wordpiece/tokenizer.json");
  const auto unk = unknown_token_id(token_class_dir() + "/tokenizer-wordpiece/tokenizer.json", *tokenizer);
  ASSERT_EQ(unk, tokenizer->token_to_id("[UNK]"));
  const bool marks_subwords = tokenizer_marks_subwords(token_class_dir() + "/tokenizer-wordpiece");
  EXPECT_TRUE(marks_subwords);
  const auto join = [&](const std::vector<std::string>& t) { return tokenizer->decode_tokens(t); };
  int groups_compared = 0;
  for (const auto& [name, rows] : golden["models"].items()) {
    const auto model = ner_model(name);
    if (!model) GTEST_SKIP() << "no tests/fixtures/heads/" << name;
    const ModelInfo& info = model->info();
    ASSERT_EQ(info.head, Head::token_classification) << name;
    for (const json& row : rows) {
      const std::string text = row["text"];
      EncodeOptions eo;
      eo.truncation = Truncation{};
      eo.truncation->max_length = size_t(info.max_positions);
      const Encoding enc = tokenizer->encode(text, eo);
      ASSERT_EQ(enc.ids, row["ids"].get<std::vector<int32_t>>()) << text;
      const Tensor logits = model->token_logits(TokenBatch::from_rows({enc.ids}, info.pad_token_id));
      const auto tokens = token_entities(text, enc, logits.data<float>(), info.labels, unk, marks_subwords);
      const auto shown = without_outside(tokens);
      const json& want = row["none"];
      ASSERT_EQ(shown.size(), want.size()) << name << ": " << text;
      for (size_t i = 0; i < shown.size(); ++i) {
        EXPECT_EQ(shown[i].entity, want[i]["entity"]) << name << ": " << text << " token " << i;
        EXPECT_EQ(shown[i].index, want[i]["index"].get<int64_t>()) << text;
        EXPECT_EQ(shown[i].word, want[i]["word"]) << text;
        EXPECT_EQ(shown[i].start, want[i]["start"].get<int64_t>()) << text;
        EXPECT_EQ(shown[i].end, want[i]["end"].get<int64_t>()) << text;
        // tach's logits equal transformers' within 1e-4 (test_heads); the softmax follows them
        EXPECT_NEAR(shown[i].score, want[i]["score"].get<double>(), 1e-4) << text;
      }
      const auto groups = without_outside(group_entities(tokens, join));
      const json& want_groups = row["simple"];
      ASSERT_EQ(groups.size(), want_groups.size()) << name << ": " << text;
      for (size_t i = 0; i < groups.size(); ++i) {
        EXPECT_EQ(groups[i].entity_group, want_groups[i]["entity_group"]) << name << ": " << text << " group " << i;
        EXPECT_EQ(groups[i].word, want_groups[i]["word"]) << text;
        EXPECT_EQ(groups[i].start, want_groups[i]["start"].get<int64_t>()) << text;
        EXPECT_EQ(groups[i].end, want_groups[i]["end"].get<int64_t>()) << text;
        EXPECT_NEAR(groups[i].score, want_groups[i]["score"].get<double>(), 1e-4) << text;
        ++groups_compared;
      }
      // first, average, max: words first, then groups of words
      for (const Aggregation a : {Aggregation::first, Aggregation::average, Aggregation::max}) {
        const auto words = group_entities(word_entities(tokens, a, info.labels, join), join);
        const auto got = without_outside(words);
        const json& want_words = row[aggregation_name(a)];
        ASSERT_EQ(got.size(), want_words.size()) << name << ": " << text << " " << aggregation_name(a);
        for (size_t i = 0; i < got.size(); ++i) {
          const std::string where = name + ": " + text + " " + aggregation_name(a) + " group " + std::to_string(i);
          EXPECT_EQ(got[i].entity_group, want_words[i]["entity_group"]) << where;
          EXPECT_EQ(got[i].word, want_words[i]["word"]) << where;
          EXPECT_EQ(got[i].start, want_words[i]["start"].get<int64_t>()) << where;
          EXPECT_EQ(got[i].end, want_words[i]["end"].get<int64_t>()) << where;
          EXPECT_NEAR(got[i].score, want_words[i]["score"].get<double>(), 1e-4) << where;
          ++groups_compared;
        }
      }
    }
  }
  EXPECT_GT(groups_compared, 20);
}

TEST(EntityGroups, UnknownTokenAndSubwordMarksFromTheTokenizerFiles) {
  const std::string tokenizers = test::fixtures_dir() + "/tokenizers";
  const auto wordpiece = Tokenizer::load(tokenizers + "/tiny-wordpiece");
  EXPECT_EQ(unknown_token_id(tokenizers + "/tiny-wordpiece", *wordpiece), wordpiece->token_to_id("[UNK]"));
  EXPECT_TRUE(tokenizer_marks_subwords(tokenizers + "/tiny-wordpiece/tokenizer.json"));
  const std::string unigram = tokenizers + "/unigram-xlmr/tokenizer-published.json";
  EXPECT_EQ(unknown_token_id(unigram, *Tokenizer::load(unigram)), std::optional<int32_t>(3));
  EXPECT_FALSE(tokenizer_marks_subwords(unigram));
  const std::string bpe = tokenizers + "/modernbert-bpe";
  EXPECT_EQ(unknown_token_id(bpe, *Tokenizer::load(bpe)), std::nullopt);
  EXPECT_FALSE(tokenizer_marks_subwords(bpe));
  // tokenizer_config.json's unk_token comes first, as transformers reads it
  test::TempDir dir;
  test::write_text(dir.file("tokenizer.json"), test::read_text(tokenizers + "/tiny-wordpiece/tokenizer.json"));
  test::write_text(dir.file("tokenizer_config.json"), "{\"unk_token\": {\"content\": \"hello\", \"lstrip\": false}}");
  EXPECT_EQ(unknown_token_id(dir.path(), *wordpiece), wordpiece->token_to_id("hello"));
}

TEST(EntityGroups, BTagsStartGroupsAndOtherLabelsContinue) {
  // Hand-made tokens: the grouping rule alone (get_tag: a label without B-/I- continues its type).
  const auto tok = [](const std::string& entity, float score, const std::string& word, int64_t s, int64_t e) {
    TokenEntity t;
    t.entity = entity;
    t.score = score;
    t.word = word;
    t.start = s;
    t.end = e;
    return t;
  };
  const std::vector<TokenEntity> tokens{tok("B-PER", 0.5f, "ada", 0, 3),     tok("I-PER", 0.25f, "love", 4, 8),
                                        tok("B-PER", 1.0f, "bob", 9, 12),    tok("O", 0.9f, "in", 13, 15),
                                        tok("I-LOC", 0.5f, "paris", 16, 21), tok("LOC", 0.5f, "x", 21, 22),
                                        tok("MISC", 0.5f, "y", 23, 24)};
  const auto join = [](const std::vector<std::string>& t) {
    std::string s;
    for (const auto& w : t) s += (s.empty() ? "" : " ") + w;
    return s;
  };
  const auto groups = without_outside(group_entities(tokens, join));
  ASSERT_EQ(groups.size(), 4u);
  EXPECT_EQ(groups[0].entity_group, "PER");
  EXPECT_EQ(groups[0].word, "ada love");
  EXPECT_EQ(groups[0].score, 0.375f);
  EXPECT_EQ(groups[0].end, 8);
  EXPECT_EQ(groups[1].word, "bob");
  EXPECT_EQ(groups[2].entity_group, "LOC");
  EXPECT_EQ(groups[2].word, "paris x");
  EXPECT_EQ(groups[3].entity_group, "MISC");
}

// ---- words to sub-tokens (is_split_into_words=True) ----

TEST(SplitWords, EqualTransformersIsSplitIntoWords) {
  const json golden = json::parse(test::read_text(token_class_dir() + "/split_words.json"));
  std::map<std::string, std::unique_ptr<Tokenizer>> tokenizers;
  int compared = 0;
  for (const json& c : golden["cases"]) {
    const std::string path = test::fixtures_dir() + "/" + c["tokenizer"].get<std::string>();
    auto& tok = tokenizers[path];
    if (!tok) tok = Tokenizer::load(path);
    const auto words = c["words"].get<std::vector<std::string>>();
    const tasks::WordSplitter splitter(*tok, c["add_prefix_space"].get<bool>());
    const tasks::WordTokens got = splitter.split(words, c["max_length"].get<int64_t>());
    const std::string where = c["tokenizer"].get<std::string>() +
                              (c["add_prefix_space"].get<bool>() ? " (prefix space) " : " ") + c["words"].dump() +
                              " max " + c["max_length"].dump();
    EXPECT_EQ(got.ids, c["ids"].get<std::vector<int32_t>>()) << where;
    EXPECT_EQ(got.word_ids, c["word_ids"].get<std::vector<int32_t>>()) << where;
    // each word's first sub-token is where its id first appears among the word ids
    for (size_t w = 0; w < words.size(); ++w) {
      const auto it = std::find(got.word_ids.begin(), got.word_ids.end(), int32_t(w));
      EXPECT_EQ(got.first_token[w], it == got.word_ids.end() ? -1 : int64_t(it - got.word_ids.begin())) << where;
    }
    ++compared;
  }
  EXPECT_GE(compared, 40);
  EXPECT_TRUE(tasks::run_ner_adds_prefix_space("roberta"));
  EXPECT_FALSE(tasks::run_ner_adds_prefix_space("modernbert"));
}
