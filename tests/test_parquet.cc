// Parquet datasets: the files `datasets` writes for a Hub dataset's split (snappy with a
// dictionary, zstd with v2 pages and several row groups, gzip with small pages), their ClassLabel
// names, what eval and train make of them, and malformed files as errors (a deterministic mutation
// sweep here; fuzz_parquet under libFuzzer goes further). The comparison with pyarrow over every
// writer option is tests/parquet/test_parquet_vs_pyarrow.py.
#include <gtest/gtest.h>

#include <random>

#include "data/records.h"
#include "tach/dataset.h"
#include "train/train_data.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach {
namespace {

using namespace std::string_literals;

std::string fixture(const std::string& name) { return test::fixtures_dir() + "/parquet/" + name; }

TEST(Parquet, ReadsEachCompressionAndLayoutDatasetsWrites) {
  for (const auto& [file, rows] : std::vector<std::pair<std::string, size_t>>{{"sst2-validation.parquet", 24},
                                                                              {"sst2-train.parquet", 40},
                                                                              {"sst2-test-gzip.parquet", 16}}) {
    DatasetOptions o;
    o.path = fixture(file);
    o.text_column = "sentence";
    const Dataset d = read_dataset(o);
    EXPECT_EQ(d.format, "parquet");
    ASSERT_EQ(d.examples.size(), rows) << file;
    EXPECT_EQ(d.columns, (std::vector<std::string>{"sentence", "label", "idx"}));
    EXPECT_EQ(d.label_names, (std::vector<std::string>{"negative", "positive"})) << "the ClassLabel's names";
    for (const auto& e : d.examples) EXPECT_TRUE(e.label == "0" || e.label == "1") << file;
  }
  DatasetOptions o;
  o.path = fixture("sst2-train.parquet");
  o.text_column = "sentence";
  const Dataset d = read_dataset(o);
  EXPECT_EQ(d.examples[1].text, "unflinchingly bleak and desperate ");
  EXPECT_EQ(d.examples[1].label, "0");
  EXPECT_EQ(d.examples[39].source_row, 40);
}

TEST(Parquet, AMissingColumnListsTheColumnsThereAre) {
  DatasetOptions o;
  o.path = fixture("sst2-validation.parquet");  // the text column is "sentence", not "text"
  const std::string e = test::error_of([&] { read_dataset(o); });
  EXPECT_NE(e.find("no text column 'text'; the columns are 'sentence', 'label', 'idx'"), std::string::npos) << e;
}

TEST(Parquet, MalformedFilesAreErrorsNeverCrashes) {
  const std::string good = test::read_text(fixture("sst2-train.parquet"));
  EXPECT_NE(test::error_of([&] { data::read_parquet("x.parquet", "PAR1"); }).find("not a Parquet file"),
            std::string::npos);
  EXPECT_NE(test::error_of([&] { data::read_parquet("x.parquet", good.substr(0, good.size() / 2)); }).find("x.parquet"),
            std::string::npos);
  // Every byte position flipped once in turn, then random multi-byte damage: records or an Error.
  std::mt19937 rng(7);
  int errors = 0, read = 0;
  auto attempt = [&](const std::string& bytes) {
    try {
      const auto r = data::read_parquet("m.parquet", bytes);
      for (const auto& row : r.rows) ASSERT_EQ(row.size(), r.columns.size());
      ++read;
    } catch (const Error&) { ++errors; }
  };
  for (size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = char(bad[i] ^ (1 << (i % 8)));
    attempt(bad);
  }
  for (int k = 0; k < 2000; ++k) {
    std::string bad = good;
    for (int j = 0; j < 4; ++j) bad[rng() % bad.size()] = char(rng());
    attempt(bad);
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(read, 0) << "damage inside values still reads";
}

// A file whose footer is `footer`: PAR1, the footer (at byte 4), its length, PAR1.
std::string with_footer(const std::string& footer) {
  std::string file = "PAR1" + footer;
  const uint32_t n = uint32_t(footer.size());
  file.append(reinterpret_cast<const char*>(&n), 4);
  return file + "PAR1";
}

// Thrift's compact protocol as a hostile footer writes it: each claimed count and length is
// checked against the bytes left, and the error names the field and its byte in the file.
TEST(Parquet, AMalformedFooterNamesTheFieldAndItsByte) {
  // Field 7 (a map, unknown to Parquet's FileMetaData) claiming 1,278,693,295 entries of two
  // i32s: libthrift computed 1278693295 * 2 in an int (undefined behaviour; fuzz_parquet's find,
  // tests/fuzz/corpus/parquet/regress-map-count-overflow.parquet) and then named no field.
  const std::string map_count = test::error_of(
      [&] { data::read_parquet("m.parquet", with_footer("\x7b\xaf\x9f\xdd\xe1\x04\x55\x02\x04\x00"s)); });
  EXPECT_NE(map_count.find("m.parquet: the Parquet footer is malformed at byte 5 (FileMetaData.field 7): a map of "
                           "1278693295 elements"),
            std::string::npos)
      << map_count;
  // A type code the protocol does not have (13) on row_groups: named, not "don't know what type".
  const std::string type = test::error_of([&] { data::read_parquet("t.parquet", with_footer("\x15\x02\x1d"s)); });
  EXPECT_NE(type.find("at byte 6 (FileMetaData.schema): the field has type code 13, which Thrift's compact "
                      "protocol does not have"),
            std::string::npos)
      << type;
  // A list of schema elements claiming more elements than the bytes left.
  const std::string list =
      test::error_of([&] { data::read_parquet("l.parquet", with_footer("\x29\xfc\xff\xff\x01\x00"s)); });
  EXPECT_NE(list.find("at byte 5 (FileMetaData.schema): a list of 32767 elements, but 1 byte is left"),
            std::string::npos)
      << list;
  // A footer that stops inside the second schema element's name.
  const std::string cut =
      test::error_of([&] { data::read_parquet("c.parquet", with_footer("\x29\x2c\x00\x48\x09"s)); });
  EXPECT_NE(cut.find("(FileMetaData.schema[1].name): a string of 9 bytes"), std::string::npos) << cut;
  // Structs nested past any Parquet schema: refused, not a deep recursion.
  const std::string deep = test::error_of([&] {
    data::read_parquet("d.parquet", with_footer("\x1c" + std::string(100, '\x1c') + std::string(101, '\0')));
  });
  EXPECT_NE(deep.find("nest deeper than 64 levels"), std::string::npos) << deep;
}

// The `huggingface` metadata with a feature's "_type" an array, not a string (fuzz_parquet's find,
// tests/fuzz/corpus/parquet/regress-classlabel-type-array.parquet): nlohmann's value() threw its
// own type_error out of the reader. The file reads, and that feature names no labels.
TEST(Parquet, MetadataOfAnotherShapeNamesNoLabels) {
  std::string bytes = test::read_text(fixture("sst2-train.parquet"));
  const size_t at = bytes.find("\"_type\": \"ClassLabel\"");
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 21, "\"_type\": [\"ClassLab\"]");  // the same length: every offset stays
  const data::Records r = data::read_parquet("odd.parquet", bytes);
  EXPECT_EQ(r.rows.size(), 40u);
  EXPECT_TRUE(r.class_names.empty());
}

TEST(Parquet, ANewHeadIsNamedByTheDatasetsClassLabels) {
  DatasetOptions o;
  o.path = fixture("sst2-train.parquet");
  o.text_column = "sentence";
  EXPECT_EQ(train::labels_from_data(read_dataset(o)), (std::vector<std::string>{"negative", "positive"}));
}

}  // namespace
}  // namespace tach
