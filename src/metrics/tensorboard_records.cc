// Hand-encoded protobuf (wire format: varint keys, fixed64 doubles, fixed32 floats,
// length-delimited strings and messages) for the messages in tensorboard_records.h. Field numbers
// are those of tensorflow/core/util/event.proto and framework/summary.proto.
#include "metrics/tensorboard_records.h"

#include <array>
#include <cstring>

namespace tach::metrics {

namespace {

std::array<uint32_t, 256> crc32c_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    t[i] = c;
  }
  return t;
}

void put_fixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));  // little-endian
}

void put_fixed64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(char((v >> (8 * i)) & 0xFF));
}

// The protobuf fields a message is built of, appended in field order.
class Message {
 public:
  Message& varint(int field, uint64_t v) {
    key(field, 0);
    put_varint(v);
    return *this;
  }
  Message& fixed64_double(int field, double v) {
    key(field, 1);
    uint64_t bits;
    std::memcpy(&bits, &v, 8);
    put_fixed64(bytes_, bits);
    return *this;
  }
  Message& fixed32_float(int field, float v) {
    key(field, 5);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    put_fixed32(bytes_, bits);
    return *this;
  }
  Message& bytes(int field, std::string_view v) {
    key(field, 2);
    put_varint(v.size());
    bytes_.append(v);
    return *this;
  }
  Message& message(int field, const Message& m) { return bytes(field, m.bytes_); }
  const std::string& str() const { return bytes_; }

 private:
  void key(int field, int wire_type) { put_varint(uint64_t(field) << 3 | uint64_t(wire_type)); }
  void put_varint(uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(char((v & 0x7F) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(char(v));
  }
  std::string bytes_;
};

// Event { double wall_time = 1; int64 step = 2; ... }
Message event(double wall_time, int64_t step) {
  Message e;
  e.fixed64_double(1, wall_time);
  if (step != 0) e.varint(2, uint64_t(step));
  return e;
}

// Event.summary = 5 holding Summary { repeated Value value = 1; }
std::string with_summary_value(Message e, const Message& value) {
  Message summary;
  summary.message(1, value);
  return e.message(5, summary).str();
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  static const std::array<uint32_t, 256> table = crc32c_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xA282EAD8u;
}

std::string tfrecord(std::string_view payload) {
  std::string length;
  put_fixed64(length, payload.size());
  std::string out = length;
  put_fixed32(out, masked_crc32c(length));
  out.append(payload);
  put_fixed32(out, masked_crc32c(payload));
  return out;
}

std::string file_version_event(double wall_time) {
  return event(wall_time, 0).bytes(3, "brain.Event:2").str();  // Event.file_version = 3
}

std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value) {
  Message v;
  v.bytes(1, tag).fixed32_float(2, value);  // Summary.Value { tag = 1; simple_value = 2 }
  return with_summary_value(event(wall_time, step), v);
}

std::string text_event(double wall_time, int64_t step, std::string_view tag, std::string_view text) {
  Message plugin, metadata, shape, tensor, v;
  plugin.bytes(1, "text");                // PluginData { plugin_name = 1 }
  metadata.message(1, plugin);            // SummaryMetadata { plugin_data = 1 }
  tensor.varint(1, 7).message(2, shape);  // TensorProto { dtype = 1: DT_STRING; tensor_shape = 2: scalar }
  tensor.bytes(8, text);                  // TensorProto.string_val = 8
  v.bytes(1, tag).message(9, metadata).message(8, tensor);  // Value { tag = 1; metadata = 9; tensor = 8 }
  return with_summary_value(event(wall_time, step), v);
}

std::string session_start_event(double wall_time, int64_t step) {
  Message log;
  log.varint(1, 1);                                     // SessionLog { status = 1: START }
  return event(wall_time, step).message(7, log).str();  // Event.session_log = 7
}

}  // namespace tach::metrics
