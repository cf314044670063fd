#include "test_util.h"

#include <cstdlib>

#include <gtest/gtest.h>

#include "tach/error.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

namespace tach::test {

Tensor random_normal(int64_t rows, int64_t cols, uint32_t seed, float scale) {
  Tensor t = Tensor::empty({rows, cols}, DType::f32);
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.f, scale);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = d(rng);
  return t;
}

void expect_near_scaled(const float* got, int64_t ld, const std::vector<double>& want, int64_t M, int64_t N,
                        double rel) {
  double scale = 1e-3;
  for (double v : want) scale = std::max(scale, std::fabs(v));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n)
      ASSERT_NEAR(got[m * ld + n], want[size_t(m * N + n)], rel * scale) << "m " << m << " n " << n;
}

namespace fs = std::filesystem;

TempDir::TempDir() {
  std::random_device rd;
  path_ = (fs::temp_directory_path() / ("tach-test-" + std::to_string(rd()) + std::to_string(rd()))).string();
  fs::create_directories(path_);
}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

static size_t element_bytes(const std::string& dtype) {
  if (dtype == "F64" || dtype == "I64") return 8;
  if (dtype == "F32" || dtype == "I32") return 4;
  if (dtype == "F16" || dtype == "BF16" || dtype == "I16") return 2;
  return 1;
}

std::vector<uint8_t> safetensors_bytes(const std::vector<FakeTensor>& tensors, const std::string& metadata_json) {
  std::ostringstream header;
  header << "{";
  bool first = true;
  if (!metadata_json.empty()) {
    header << "\"__metadata__\":" << metadata_json;
    first = false;
  }
  std::vector<uint8_t> data;
  for (const auto& t : tensors) {
    size_t n = 1;
    for (auto d : t.shape) n *= size_t(d);
    std::vector<uint8_t> bytes = t.bytes;
    if (bytes.empty()) {
      bytes.resize(n * element_bytes(t.dtype));
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + 3);
    }
    header << (first ? "" : ",") << "\"" << t.name << "\":{\"dtype\":\"" << t.dtype << "\",\"shape\":[";
    for (size_t i = 0; i < t.shape.size(); ++i) header << (i ? "," : "") << t.shape[i];
    header << "],\"data_offsets\":[" << data.size() << "," << data.size() + bytes.size() << "]}";
    data.insert(data.end(), bytes.begin(), bytes.end());
    first = false;
  }
  header << "}";
  std::string h = header.str();
  while (h.size() % 8) h += ' ';
  std::vector<uint8_t> out(8 + h.size() + data.size());
  const uint64_t n = h.size();
  for (int i = 0; i < 8; ++i) out[size_t(i)] = uint8_t(n >> (8 * i));
  std::memcpy(out.data() + 8, h.data(), h.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + h.size(), data.data(), data.size());
  return out;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::binary);
  f << text;
}

std::string read_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// TACH_FIXTURES_DIR overrides the path compiled in: test binaries built here and run from a copy
// of the tree elsewhere (a lent GPU machine, scripts/gpu/) find the fixtures in the copy.
std::string fixtures_dir() {
  const char* moved = std::getenv("TACH_FIXTURES_DIR");
  return moved && *moved ? moved : TACH_FIXTURES;
}
std::string shared_dir() { return TACH_SHARED_DIR; }
bool shared_available() { return fs::is_directory(shared_dir() + "/configs"); }

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) { return e.what(); }
  return "(no error)";
}

double max_relative_error(const float* a, const float* b, size_t n, double floor) {
  double worst = 0;
  for (size_t i = 0; i < n; ++i) {
    const double err = std::fabs(double(a[i]) - double(b[i])) / (std::fabs(double(b[i])) + floor);
    if (!(err <= worst)) worst = err;  // NaN propagates as the worst
  }
  return worst;
}

TokenBatch padded_batch(const std::vector<std::vector<int32_t>>& rows, int32_t pad_id, bool left) {
  return left ? TokenBatch::left_padded(rows, pad_id) : TokenBatch::from_rows(rows, pad_id);
}

std::vector<float> randn(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

void expect_finite_difference(std::vector<float>& x, const std::vector<float>& analytic,
                              const std::function<double()>& loss, const std::string& what, double abs_tol,
                              double rel_tol) {
  const float h = 1e-2f;
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + h;
    const double up = loss();
    x[i] = keep - h;
    const double down = loss();
    x[i] = keep;
    const double numeric = (up - down) / (2.0 * h);
    EXPECT_NEAR(analytic[i], numeric, abs_tol + rel_tol * std::abs(numeric)) << what << " element " << i;
  }
}

}  // namespace tach::test
