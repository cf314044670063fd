// TensorBoard's event files, encoded by hand: the record framing (length, masked CRC-32C of the
// length, bytes, masked CRC-32C of the bytes) and the few protobuf messages a scalar or text
// summary needs (Event, Summary, Summary.Value, SummaryMetadata, TensorProto, SessionLog).
// Five write-only messages do not justify protobuf and a code generator in the build;
// TensorBoard's own reader checks these bytes in tests/tensorboard.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace tach::metrics {

uint32_t crc32c(std::string_view bytes);  // Castagnoli, as TFRecord uses: crc32c("123456789") = 0xE3069283
uint32_t masked_crc32c(std::string_view bytes);

// One TFRecord: u64 length, u32 masked CRC of those 8 bytes, the bytes, u32 masked CRC of them.
std::string tfrecord(std::string_view payload);

// Serialized tensorflow.Event messages.
std::string file_version_event(double wall_time);  // the first record of every file: "brain.Event:2"
std::string scalar_event(double wall_time, int64_t step, std::string_view tag, float value);
std::string text_event(double wall_time, int64_t step, std::string_view tag, std::string_view text);
// SessionLog START at `step`: TensorBoard drops the points at or after `step` that earlier files
// hold, as a restarted run rewrites them (what a resumed tach train does).
std::string session_start_event(double wall_time, int64_t step);

}  // namespace tach::metrics
