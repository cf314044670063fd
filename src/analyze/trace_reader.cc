#include "analyze/trace_reader.h"

#include <zlib.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <istream>
#include <sstream>
#include <streambuf>
#include <unordered_set>
#include <vector>

#include "tach/error.h"

namespace tach::analyze {
namespace {

using nlohmann::json;

// A streambuf over gzread: gzip decoded as the parser asks for bytes, plain files passed through.
// Errors are kept, not thrown through the parser, so that a truncated gzip stream is reported as
// such rather than as the JSON it cut short.
class GzipStreamBuf : public std::streambuf {
 public:
  explicit GzipStreamBuf(const std::string& path) : path_(path) {
    file_ = gzopen(path.c_str(), "rb");
    check(file_ != nullptr, path + ": cannot open (" + std::string(std::strerror(errno)) + ")");
    gzbuffer(file_, 1 << 17);
  }
  ~GzipStreamBuf() override {
    if (file_) gzclose(file_);
  }
  GzipStreamBuf(const GzipStreamBuf&) = delete;
  GzipStreamBuf& operator=(const GzipStreamBuf&) = delete;

  const std::string& error() const { return error_; }
  int64_t bytes_read() const { return bytes_; }

 protected:
  int_type underflow() override {
    if (gptr() < egptr()) return traits_type::to_int_type(*gptr());
    if (!error_.empty()) return traits_type::eof();
    const int n = gzread(file_, buffer_.data(), static_cast<unsigned>(buffer_.size()));
    int errnum = Z_OK;
    const char* message = gzerror(file_, &errnum);
    if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
      // Z_BUF_ERROR at the end: the gzip stream stopped before its end (a copy cut short).
      error_ = errnum == Z_BUF_ERROR ? "the gzip stream is truncated (the file was cut short)"
                                     : std::string("gzip error: ") + (message ? message : "unknown");
      if (n <= 0) return traits_type::eof();
    }
    if (n <= 0) return traits_type::eof();
    bytes_ += n;
    setg(buffer_.data(), buffer_.data(), buffer_.data() + n);
    return traits_type::to_int_type(*gptr());
  }

 private:
  std::string path_;
  gzFile file_ = nullptr;
  std::array<char, 1 << 18> buffer_{};
  std::string error_;
  int64_t bytes_ = 0;
};

// The SAX handler: builds each trace event (and each top-level field other than traceEvents) as a
// small JSON value and hands it on, so nothing larger than one event is ever held.
class TraceSax {
 public:
  explicit TraceSax(const TraceCallbacks& callbacks) : callbacks_(callbacks) {}

  bool null() { return value(json(nullptr)); }
  bool boolean(bool v) { return value(json(v)); }
  bool number_integer(json::number_integer_t v) { return value(json(v)); }
  bool number_unsigned(json::number_unsigned_t v) { return value(json(v)); }
  bool number_float(json::number_float_t v, const json::string_t&) { return value(json(v)); }
  bool string(json::string_t& v) { return value(json(std::move(v))); }
  bool binary(json::binary_t&) { return value(json(nullptr)); }

  bool start_object(std::size_t) { return skip_container() || open(json::object()); }
  bool start_array(std::size_t) { return skip_container() || open(json::array()); }
  bool end_object() { return end_skipped() || close(); }
  bool end_array() { return end_skipped() || close(); }
  bool key(json::string_t& k) {
    if (skip_until_ >= 0) return true;
    if (building_ && in_event_ && depth_ == event_depth()) {
      event_key_ = k;
      skip_next_ = !kept(callbacks_.event_keys, k);
    } else if (building_ && in_event_ && depth_ == event_depth() + 1 && event_key_ == "args") {
      skip_next_ = !kept(callbacks_.arg_keys, k);
    }
    if (depth_ == 1 && root_is_object_) {
      top_key_ = k;
      in_events_array_ = false;
    }
    key_ = std::move(k);
    return true;
  }
  bool parse_error(std::size_t position, const std::string&, const nlohmann::detail::exception& e) {
    position_ = position;
    message_ = e.what();
    return false;
  }

  bool saw_events() const { return saw_events_; }
  bool root_seen() const { return root_seen_; }
  std::size_t error_position() const { return position_; }
  const std::string& error_message() const { return message_; }

 private:
  // Depth at which an event object sits: 3 under {"traceEvents": [ {...} ]}, 2 under [ {...} ].
  int event_depth() const { return root_is_object_ ? 3 : 2; }

  static bool kept(const std::unordered_set<std::string>& keys, const std::string& k) {
    return keys.empty() || keys.count(k) > 0;
  }
  // A value whose key the caller does not want is parsed but never built (most of an event's
  // bytes: strides, concrete inputs, Python ids), which saves its allocations.
  bool skip_container() {
    if (skip_until_ >= 0 || skip_next_) {
      ++depth_;
      if (skip_until_ < 0) skip_until_ = depth_;
      skip_next_ = false;
      return true;
    }
    return false;
  }
  bool end_skipped() {
    if (skip_until_ < 0) return false;
    if (depth_ == skip_until_) skip_until_ = -1;
    --depth_;
    return true;
  }

  bool open(json&& container) {
    ++depth_;
    if (depth_ == 1) {
      root_seen_ = true;
      root_is_object_ = container.is_object();
      if (!root_is_object_) saw_events_ = true;  // a bare array of events
      return true;
    }
    if (depth_ == 2 && root_is_object_ && top_key_ == "traceEvents") {
      if (!container.is_array()) return true;  // built and handed on as a field below
      in_events_array_ = true;
      saw_events_ = true;
      return true;
    }
    if (depth_ == event_depth() && in_events()) {
      building_ = true;
      in_event_ = true;
      current_ = std::move(container);
      stack_.assign(1, &current_);
      return true;
    }
    if (depth_ == 2 && root_is_object_) {  // a top-level field's value
      building_ = true;
      in_event_ = false;
      current_ = std::move(container);
      stack_.assign(1, &current_);
      return true;
    }
    if (building_) stack_.push_back(add(std::move(container)));
    return true;
  }

  bool close() {
    const int depth = depth_--;
    if (!building_) return true;
    stack_.pop_back();
    if (!stack_.empty()) return true;
    building_ = false;
    if (depth == event_depth() && in_events()) {
      if (callbacks_.event) callbacks_.event(std::move(current_));
    } else if (callbacks_.field) {
      callbacks_.field(top_key_, std::move(current_));
    }
    current_ = json();
    return true;
  }

  bool value(json&& v) {
    if (skip_until_ >= 0) return true;
    if (skip_next_) {
      skip_next_ = false;
      return true;
    }
    if (building_) {
      add(std::move(v));
    } else if (depth_ == 1 && root_is_object_ && callbacks_.field) {
      callbacks_.field(top_key_, std::move(v));
    } else if (depth_ == 0) {
      root_seen_ = true;  // a bare scalar: not a trace
    }
    return true;
  }

  bool in_events() const { return root_is_object_ ? in_events_array_ : true; }

  json* add(json&& v) {
    json* top = stack_.back();
    if (top->is_array()) {
      top->push_back(std::move(v));
      return &top->back();
    }
    json& slot = (*top)[key_];
    slot = std::move(v);
    return &slot;
  }

  const TraceCallbacks& callbacks_;
  int depth_ = 0;
  bool root_seen_ = false, root_is_object_ = false, in_events_array_ = false, saw_events_ = false;
  bool building_ = false, in_event_ = false, skip_next_ = false;
  int skip_until_ = -1;  // the depth of a skipped container, while inside it
  std::string event_key_;
  std::string top_key_, key_;
  json current_;
  std::vector<json*> stack_;
  std::size_t position_ = 0;
  std::string message_;
};

void parse(const std::string& name, std::istream& in, const TraceCallbacks& callbacks, const GzipStreamBuf* gz) {
  TraceSax sax(callbacks);
  bool ok = false;
  try {
    ok = json::sax_parse(in, &sax);
  } catch (const nlohmann::json::exception& e) { throw Error(name + ": not a trace (" + e.what() + ")"); }
  if (gz && !gz->error().empty()) throw Error(name + ": " + gz->error());
  if (!ok) {
    const bool cut_short = sax.error_message().find("unexpected end of input") != std::string::npos;
    if (cut_short && sax.root_seen())
      throw Error(name + ": the JSON stops at byte " + std::to_string(sax.error_position()) +
                  " before the trace's end (truncated: the profiler was stopped mid-write, or a copy was cut short)");
    throw Error(name + ": not a trace: malformed JSON at byte " + std::to_string(sax.error_position()) + " (" +
                sax.error_message() + ")");
  }
  check(sax.saw_events(), name + ": not a trace: a JSON document without traceEvents (torch.profiler's " +
                              "export_chrome_trace and tensorboard_trace_handler write *.pt.trace.json[.gz])");
}

}  // namespace

void read_trace_file(const std::string& path, const TraceCallbacks& callbacks) {
  GzipStreamBuf buffer(path);
  std::istream in(&buffer);
  parse(path, in, callbacks, &buffer);
}

void read_trace_text(const std::string& name, const std::string& text, const TraceCallbacks& callbacks) {
  std::istringstream in(text);
  parse(name, in, callbacks, nullptr);
}

}  // namespace tach::analyze
