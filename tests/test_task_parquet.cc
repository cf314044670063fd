// The per-token tasks' data as the Hub publishes it, in Parquet (tests/parquet/make_task_fixtures.py
// wrote the files with `datasets` and pyarrow from the JSONL fixtures): SQuAD's answers struct of
// two lists, conll2003's tokens and ner_tags lists with the tags' ClassLabel names, and the list
// levels themselves (empty and null lists, null elements, a list in a struct; pages v1 and v2).
#include <gtest/gtest.h>

#include <random>

#include <nlohmann/json.hpp>

#include "data/conll.h"
#include "data/records.h"
#include "data/squad.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach {
namespace {

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/" + name; }

TEST(TaskParquet, ListColumnsAsPyarrowWroteThem) {
  for (const char* file : {"lists-v1.parquet", "lists-v2.parquet"}) {
    const std::string bytes = test::read_text(fixture(std::string("parquet/") + file));
    const data::Records r = data::read_parquet(file, bytes, true);
    ASSERT_EQ(r.columns, (std::vector<std::string>{"n", "name", "s.x"})) << file;
    EXPECT_EQ(r.list_columns, (std::vector<std::string>{"n", "s.x"}));
    const std::vector<std::vector<std::string>> want = {
        {"[1,2]", "a", "[\"p\",\"q\"]"}, {"[]", "b", "[]"},        {"", "", ""},
        {"[null,3]", "d", ""},           {"[-4]", "e", "[\"r\"]"}, {"[5,6,7]", "f", "[\"é\",null]"}};
    EXPECT_EQ(r.rows, want) << file;
    // Without lists the reader is as it was: the flat column only, the nested ones named.
    const data::Records flat = data::read_parquet(file, bytes);
    EXPECT_EQ(flat.columns, std::vector<std::string>{"name"});
    EXPECT_EQ(flat.skipped_columns, (std::vector<std::string>{"n", "s"}));
    const nlohmann::json row = data::record_object(r, 5);
    EXPECT_EQ(row.dump(), R"({"n":[5,6,7],"name":"f","s":{"x":["é",null]}})");
  }
}

// The Hub's SQuAD files read as the same questions as the flat JSONL they were written from.
TEST(TaskParquet, SquadParquetIsTheSameQuestionsAsItsJsonl) {
  const SquadData parquet = read_squad(fixture("parquet/squad-v2.parquet"));
  const SquadData jsonl = read_squad(fixture("question_answering/squad-v2.jsonl"));
  EXPECT_EQ(parquet.layout, "flat Parquet");
  EXPECT_EQ(parquet.v2, jsonl.v2);
  ASSERT_EQ(parquet.questions.size(), jsonl.questions.size());
  bool unanswerable = false;
  for (size_t i = 0; i < jsonl.questions.size(); ++i) {
    const SquadQuestion &p = parquet.questions[i], &j = jsonl.questions[i];
    EXPECT_EQ(p.id, j.id);
    EXPECT_EQ(p.title, j.title);
    EXPECT_EQ(p.context, j.context);
    EXPECT_EQ(p.question, j.question);
    EXPECT_EQ(p.answers, j.answers) << p.id;
    EXPECT_EQ(p.answer_starts, j.answer_starts) << p.id;
    EXPECT_EQ(p.where, "row " + std::to_string(i + 1));
    unanswerable = unanswerable || p.answers.empty();
  }
  EXPECT_TRUE(unanswerable) << "the fixture has a question without an answer (empty lists)";
}

// A Parquet file that is not SQuAD's layout is named by its row and field.
TEST(TaskParquet, ParquetWithoutSquadsColumnsIsNamed) {
  const std::string e = test::error_of([] { read_squad(fixture("parquet/sst2-validation.parquet")); });
  EXPECT_NE(e.find("sst2-validation.parquet: row 1: no \"context\" field"), std::string::npos) << e;
}

// conll2003's layout: integer tags named by the file's ClassLabel (not the model's id2label,
// which the caller passes), unless the names were given on purpose.
TEST(TaskParquet, TaggedParquetNamesItsTagsByItsClassLabel) {
  data::TaggedJsonOptions o;
  o.tag_names = {"O", "B-PER", "I-PER", "B-LOC", "I-LOC"};  // a model's id2label: another order
  const auto parquet = data::read_tagged_file(fixture("parquet/ner.parquet"), "auto", -1, o);
  data::TaggedJsonOptions file_order = o;
  file_order.tag_names = {"I-LOC", "B-LOC", "I-PER", "B-PER", "O"};  // the Parquet file's ClassLabel names
  const auto jsonl = data::read_tagged_file(fixture("token_classes/ner.jsonl"), "auto", -1, file_order);
  ASSERT_EQ(parquet.size(), jsonl.size());
  for (size_t i = 0; i < jsonl.size(); ++i) {
    EXPECT_EQ(parquet[i].words, jsonl[i].words) << i;
    EXPECT_EQ(parquet[i].tags, jsonl[i].tags) << i;
    EXPECT_EQ(parquet[i].source, int64_t(i) + 1);
  }
  o.tag_names_given = true;  // --tag-names: what the user says the ids mean
  const auto given = data::read_tagged_file(fixture("parquet/ner.parquet"), "parquet", -1, o);
  const auto model_order = data::read_tagged_file(fixture("token_classes/ner.jsonl"), "auto", -1, o);
  for (size_t i = 0; i < given.size(); ++i) EXPECT_EQ(given[i].tags, model_order[i].tags) << i;
  data::TaggedJsonOptions other;
  other.tags_key = "labels";
  const std::string e =
      test::error_of([&] { data::read_tagged_file(fixture("parquet/ner.parquet"), "auto", -1, other); });
  EXPECT_NE(e.find("ner.parquet: row 1: no key 'labels'; the record has 'id', 'ner_tags', 'tokens'"), std::string::npos)
      << e;
}

// Damaged list pages and levels: records or an Error, never a crash or a read out of bounds.
TEST(TaskParquet, DamagedListFilesAreErrorsNeverCrashes) {
  for (const char* file : {"parquet/lists-v1.parquet", "parquet/lists-v2.parquet", "parquet/squad-v2.parquet"}) {
    const std::string good = test::read_text(fixture(file));
    std::mt19937 rng(11);
    int errors = 0, read = 0;
    auto attempt = [&](const std::string& bytes) {
      try {
        const auto r = data::read_parquet("m.parquet", bytes, true);
        for (size_t i = 0; i < r.rows.size(); ++i) {
          ASSERT_EQ(r.rows[i].size(), r.columns.size());
          (void)data::record_object(r, i);
        }
        ++read;
      } catch (const Error&) { ++errors; }
    };
    for (size_t i = 0; i < good.size(); ++i) {
      std::string bad = good;
      bad[i] = char(bad[i] ^ (1 << (i % 8)));
      attempt(bad);
    }
    for (int k = 0; k < 1000; ++k) {
      std::string bad = good;
      for (int j = 0; j < 4; ++j) bad[rng() % bad.size()] = char(rng());
      attempt(bad);
    }
    EXPECT_GT(errors, 0) << file;
    EXPECT_GT(read, 0) << file;
  }
}

}  // namespace
}  // namespace tach
