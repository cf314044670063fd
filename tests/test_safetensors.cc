#include <gtest/gtest.h>

#include <cstring>

#include "model/safetensors.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::model {
namespace {

// A file from a literal header and a data section, for the malformed cases.
std::vector<uint8_t> raw_file(const std::string& header, size_t data_bytes) {
  std::vector<uint8_t> out(8 + header.size() + data_bytes, 0xab);
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(uint64_t(header.size()) >> (8 * i));
  std::memcpy(out.data() + 8, header.data(), header.size());
  return out;
}

// Expects parsing to fail with a message containing `needle`.
void expect_error(const std::vector<uint8_t>& bytes, const std::string& needle) {
  try {
    parse_safetensors(bytes.data(), bytes.size(), "x.safetensors");
    FAIL() << "expected an error containing: " << needle;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("x.safetensors: ", 0), 0u) << "error must name the file: " << e.what();
  }
}

TEST(Safetensors, ReadsTensorsAndMetadataZeroCopy) {
  test::TempDir dir;
  std::vector<uint8_t> w(2 * 3 * 4);
  const float vals[6] = {1, 2, 3, 4, 5, 6};
  std::memcpy(w.data(), vals, sizeof vals);
  test::write_file(dir.file("m.safetensors"),
                   test::safetensors_bytes({{"w", "F32", {2, 3}, w}, {"b", "BF16", {4}, {}}}, R"({"format":"pt"})"));
  SafetensorsFile f = SafetensorsFile::open(dir.file("m.safetensors"));
  EXPECT_EQ(f.header().metadata.at("format"), "pt");
  ASSERT_EQ(f.header().entries.size(), 2u);
  const SafetensorsEntry* e = f.find("w");
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->shape, (Shape{2, 3}));
  Tensor t = f.tensor(*e);
  EXPECT_TRUE(t.is_view_of_borrowed());  // header padded to 8 bytes: aligned, no copy
  EXPECT_EQ(t.data<float>()[5], 6.0f);
  EXPECT_EQ(f.find("missing"), nullptr);
}

TEST(Safetensors, UnalignedDataIsCopiedNotMisread) {
  test::TempDir dir;
  // A header of odd length puts the data at an odd offset.
  const std::string header = R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  ASSERT_NE((8 + header.size()) % 4, 0u);
  std::vector<uint8_t> bytes = raw_file(header, 0);
  const float vals[2] = {3.5f, -1.25f};
  bytes.insert(bytes.end(), reinterpret_cast<const uint8_t*>(vals), reinterpret_cast<const uint8_t*>(vals) + 8);
  test::write_file(dir.file("u.safetensors"), bytes);
  SafetensorsFile f = SafetensorsFile::open(dir.file("u.safetensors"));
  Tensor t = f.tensor(*f.find("w"));
  EXPECT_FALSE(t.is_view_of_borrowed());
  EXPECT_EQ(t.data<float>()[0], 3.5f);
  EXPECT_EQ(t.data<float>()[1], -1.25f);
}

TEST(Safetensors, EmptyTensorListIsValid) {
  auto bytes = raw_file("{}", 0);
  EXPECT_TRUE(parse_safetensors(bytes.data(), bytes.size(), "e").entries.empty());
}

TEST(SafetensorsMalformed, TooShortForLength) { expect_error({1, 2, 3}, "too short"); }

TEST(SafetensorsMalformed, HeaderLengthPastEnd) {
  auto bytes = raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 4);
  bytes[0] = 0xff;
  bytes[1] = 0xff;
  expect_error(bytes, "runs past the end");
}

TEST(SafetensorsMalformed, HeaderLengthLies) {
  // A huge declared length with a tiny file: a lying header must not allocate or read.
  std::vector<uint8_t> bytes(16, ' ');
  uint64_t n = 1ull << 62;
  std::memcpy(bytes.data(), &n, 8);
  expect_error(bytes, "runs past the end");
}

TEST(SafetensorsMalformed, NotJson) { expect_error(raw_file("{\"w\": [1, 2", 0), "not valid JSON"); }
// Found by fuzz_safetensors: a number too large for a double makes the JSON library throw
// out_of_range rather than parse_error.
TEST(SafetensorsMalformed, NumberOverflowInHeader) {
  expect_error(raw_file(R"({"w":{"dtype":"U8","shape":[3e888888],"data_offsets":[0,3]}})", 3), "not valid JSON");
}
TEST(SafetensorsMalformed, NotAnObject) { expect_error(raw_file("[1, 2, 3]", 0), "does not start with '{'"); }

TEST(SafetensorsMalformed, UnknownDtype) {
  expect_error(raw_file(R"({"w":{"dtype":"F7","shape":[1],"data_offsets":[0,1]}})", 1), "unknown dtype \"F7\"");
}

TEST(SafetensorsMalformed, BadShape) {
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4), "non-negative integers");
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":"3","data_offsets":[0,4]}})", 4), "shape must be an array");
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296,16],"data_offsets":[0,4]}})", 4),
               "too large");
}

TEST(SafetensorsMalformed, MissingAndUnknownFields) {
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":[1]}})", 4), "missing \"data_offsets\"");
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4), "unknown field");
  expect_error(raw_file(R"({"w":3})", 0), "expected an object");
}

TEST(SafetensorsMalformed, ByteCountDisagreesWithShape) {
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12), "needs 16 bytes");
}

TEST(SafetensorsMalformed, OffsetsReversed) {
  expect_error(raw_file(R"({"w":{"dtype":"U8","shape":[0],"data_offsets":[4,0]}})", 4), "before begin");
}

TEST(SafetensorsMalformed, RangePastDataSection) {
  // Header promises 16 bytes, the file holds 8: a truncated download.
  expect_error(raw_file(R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", 8), "run past the data section");
}

TEST(SafetensorsMalformed, Overlap) {
  expect_error(raw_file(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                        R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})",
                        12),
               "overlap");
}

TEST(SafetensorsMalformed, GapAndTrailingBytes) {
  expect_error(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8), "belong to no tensor");
  expect_error(raw_file(R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", 9), "last 5 bytes");
}

TEST(SafetensorsMalformed, MetadataMustBeStrings) {
  expect_error(raw_file(R"({"__metadata__":{"format":1}})", 0), "__metadata__[\"format\"] must be a string");
  expect_error(raw_file(R"({"__metadata__":[1]})", 0), "__metadata__ must be an object");
}

TEST(SafetensorsMalformed, MissingFileNamesPath) {
  try {
    SafetensorsFile::open("/nonexistent/model.safetensors");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/model.safetensors: cannot open"), std::string::npos);
  }
}

TEST(SafetensorsMalformed, EveryTruncationOfAValidFileIsRejectedCleanly) {
  const auto good = test::safetensors_bytes({{"a", "F32", {3}, {}}, {"b", "F16", {2, 2}, {}}});
  for (size_t n = 0; n < good.size(); ++n) {
    EXPECT_THROW(parse_safetensors(good.data(), n, "t"), Error) << "truncated to " << n << " bytes";
  }
  EXPECT_NO_THROW(parse_safetensors(good.data(), good.size(), "t"));
}

}  // namespace
}  // namespace tach::model
