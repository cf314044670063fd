// TensorBoard event files: the CRC, the record framing, and the protobuf bytes of each event,
// decoded here by a minimal reader. TensorBoard's own reader checks them in tests/tensorboard/.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "metrics/tensorboard_records.h"
#include "tach/metrics.h"
#include "test_util.h"

namespace fs = std::filesystem;
using namespace tach;

namespace {

uint64_t le(const std::string& s, size_t at, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= uint64_t(uint8_t(s[at + size_t(i)])) << (8 * i);
  return v;
}

// The records of a file, each checked against its two CRCs.
std::vector<std::string> read_records(const std::string& bytes) {
  std::vector<std::string> out;
  size_t at = 0;
  while (at < bytes.size()) {
    const std::string length = bytes.substr(at, 8);
    EXPECT_EQ(le(bytes, at + 8, 4), metrics::masked_crc32c(length));
    const size_t n = le(bytes, at, 8);
    const std::string payload = bytes.substr(at + 12, n);
    EXPECT_EQ(le(bytes, at + 12 + n, 4), metrics::masked_crc32c(payload));
    out.push_back(payload);
    at += 16 + n;
  }
  EXPECT_EQ(at, bytes.size());
  return out;
}

// A protobuf message's fields: number → raw value (varints as numbers, the rest as bytes).
struct Field {
  int wire = 0;
  uint64_t number = 0;
  std::string bytes;
};
std::multimap<int, Field> fields(const std::string& m) {
  std::multimap<int, Field> out;
  size_t at = 0;
  const auto varint = [&] {
    uint64_t v = 0;
    for (int shift = 0;; shift += 7) {
      const auto b = uint8_t(m.at(at++));
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
  };
  while (at < m.size()) {
    const uint64_t key = varint();
    Field f;
    f.wire = int(key & 7);
    if (f.wire == 0) f.number = varint();
    if (f.wire == 1) f.bytes = m.substr(at, 8), at += 8;
    if (f.wire == 5) f.bytes = m.substr(at, 4), at += 4;
    if (f.wire == 2) {
      const uint64_t n = varint();
      f.bytes = m.substr(at, n), at += n;
    }
    out.emplace(int(key >> 3), f);
  }
  return out;
}

}  // namespace

TEST(TensorBoard, Crc32cKnownValues) {
  EXPECT_EQ(metrics::crc32c("123456789"), 0xE3069283u);  // the CRC-32C check value
  EXPECT_EQ(metrics::crc32c(""), 0u);
  EXPECT_EQ(metrics::crc32c(std::string(32, '\0')), 0x8A9136AAu);  // RFC 3720, 32 bytes of zeros
  const uint32_t c = metrics::crc32c("abc");
  EXPECT_EQ(metrics::masked_crc32c("abc"), ((c >> 15) | (c << 17)) + 0xA282EAD8u);
}

TEST(TensorBoard, RecordFraming) {
  const std::string r = metrics::tfrecord("hello");
  ASSERT_EQ(r.size(), 8u + 4 + 5 + 4);
  EXPECT_EQ(le(r, 0, 8), 5u);
  EXPECT_EQ(r.substr(12, 5), "hello");
  EXPECT_EQ(read_records(r), std::vector<std::string>{"hello"});
}

TEST(TensorBoard, WriterFileHoldsVersionScalarsTextAndRestart) {
  const fs::path dir = fs::path(testing::TempDir()) / "tach_tensorboard_test";
  fs::remove_all(dir);
  std::string path;
  {
    TensorBoardWriter w(dir.string());
    path = w.path();
    w.scalar("train/loss", 0.625, 7);
    w.text("config", "    {\"lr\": 1e-3}", 0);
    w.restart_at(300);
  }
  EXPECT_NE(fs::path(path).filename().string().find("tfevents"), std::string::npos);
  const auto records = read_records(tach::test::read_text(path));
  ASSERT_EQ(records.size(), 4u);

  auto version = fields(records[0]);
  EXPECT_EQ(version.find(3)->second.bytes, "brain.Event:2");
  EXPECT_EQ(version.find(1)->second.wire, 1);  // wall_time, a double

  auto scalar = fields(records[1]);
  EXPECT_EQ(scalar.find(2)->second.number, 7u);  // step
  auto value = fields(fields(scalar.find(5)->second.bytes).find(1)->second.bytes);
  EXPECT_EQ(value.find(1)->second.bytes, "train/loss");
  float f;
  std::memcpy(&f, value.find(2)->second.bytes.data(), 4);
  EXPECT_EQ(f, 0.625f);

  auto text = fields(fields(fields(records[2]).find(5)->second.bytes).find(1)->second.bytes);
  EXPECT_EQ(text.find(1)->second.bytes, "config");
  auto plugin = fields(fields(text.find(9)->second.bytes).find(1)->second.bytes);
  EXPECT_EQ(plugin.find(1)->second.bytes, "text");
  auto tensor = fields(text.find(8)->second.bytes);
  EXPECT_EQ(tensor.find(1)->second.number, 7u);  // DT_STRING
  EXPECT_EQ(tensor.find(8)->second.bytes, "    {\"lr\": 1e-3}");

  auto restart = fields(records[3]);
  EXPECT_EQ(restart.find(2)->second.number, 300u);
  EXPECT_EQ(fields(restart.find(7)->second.bytes).find(1)->second.number, 1u);  // SessionLog START
  fs::remove_all(dir);
}

TEST(TensorBoard, TrainingLoggerMirrorsGroupedTags) {
  const fs::path dir = fs::path(testing::TempDir()) / "tach_tensorboard_logger";
  fs::remove_all(dir);
  std::string path;
  {
    TensorBoardWriter w(dir.string());
    path = w.path();
    TrainingLogger logger;
    logger.mirror_to(&w);
    logger.log_step(3, {{"loss", 1.5}, {"eval_accuracy", 0.75}, {"memory_weights_bytes", 1024}});
  }
  std::vector<std::string> tags;
  const auto records = read_records(tach::test::read_text(path));
  for (size_t i = 1; i < records.size(); ++i)
    tags.push_back(
        fields(fields(fields(records[i]).find(5)->second.bytes).find(1)->second.bytes).find(1)->second.bytes);
  EXPECT_EQ(tags, (std::vector<std::string>{"eval/accuracy", "train/loss", "memory/memory_weights_bytes"}));
  fs::remove_all(dir);
}
