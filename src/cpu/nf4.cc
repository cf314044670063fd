#include "cpu/nf4.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "core/parallel.h"
#include "tach/error.h"

namespace tach::cpu {

namespace {

// The NF4 values as the QLoRA paper defines them (Dettmers et al. 2023, appendix E): the
// 2^4 quantiles of N(0, 1) normalised to [-1, 1], asymmetric so that zero is exact.
constexpr std::array<float, 16> kNf4 = {-1.0f,
                                        -0.6961928009986877f,
                                        -0.5250730514526367f,
                                        -0.39491748809814453f,
                                        -0.28444138169288635f,
                                        -0.18477343022823334f,
                                        -0.09105003625154495f,
                                        0.0f,
                                        0.07958029955625534f,
                                        0.16093020141124725f,
                                        0.24611230194568634f,
                                        0.33791524171829224f,
                                        0.44070982933044434f,
                                        0.5626170039176941f,
                                        0.7229568362236023f,
                                        1.0f};

// torch.linspace(start, end, steps) in f32 as ATen computes it: the first half counts up from
// start, the second half down from end, so both ends are exact; each a fused multiply-add, as
// ATen's vectorized kernel rounds (checked against bitsandbytes' table in test_nf4).
std::vector<float> linspace(float start, float end, int64_t steps) {
  std::vector<float> v(static_cast<size_t>(steps));
  const float step = (end - start) / float(steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    v[size_t(i)] = i < halfway ? std::fma(step, float(i), start) : std::fma(-step, float(steps - i - 1), end);
  return v;
}

// The signed dynamic map of "8-bit Approximations for Parallelism in Deep Learning" (Dettmers
// 2016) with 7 exponent bits, as bitsandbytes builds it (create_dynamic_map): for exponent i,
// 2^i means of a linear grid on [0.1, 1], scaled by 10^(i-6), both signs; then 0 and 1; sorted.
std::array<float, 256> make_dynamic_code_book() {
  std::vector<float> data;
  for (int i = 0; i < 7; ++i) {
    const std::vector<float> b = linspace(0.1f, 1.0f, (int64_t(1) << i) + 1);
    const float scale = float(std::pow(10.0, double(i - 6)));
    for (size_t k = 0; k + 1 < b.size(); ++k) {
      const float mean = (b[k] + b[k + 1]) / 2.0f;
      data.push_back(scale * mean);
      data.push_back(-(scale * mean));
    }
  }
  data.push_back(0.0f);
  data.push_back(1.0f);
  std::sort(data.begin(), data.end());
  std::array<float, 256> out{};
  std::copy(data.begin(), data.end(), out.begin());
  return out;
}

// The index of the code value nearest to x in an ascending code book (ties to the lower).
uint8_t nearest(const float* code, int n, float x) {
  const float* hi = std::lower_bound(code, code + n, x);
  if (hi == code) return 0;
  if (hi == code + n) return uint8_t(n - 1);
  const float* lo = hi - 1;
  return uint8_t((x - *lo) <= (*hi - x) ? lo - code : hi - code);
}

}  // namespace

const float* nf4_code_book() { return kNf4.data(); }

const float* dynamic_code_book() {
  static const std::array<float, 256> book = make_dynamic_code_book();
  return book.data();
}

int64_t Nf4Tensor::bytes() const { return int64_t(codes.nbytes() + qabsmax.nbytes() + absmax2.nbytes()) + 4; }

void Nf4Tensor::absmax(float* out) const {
  const uint8_t* q = qabsmax.data<uint8_t>();
  const float* a2 = absmax2.data<float>();
  const float* code = dynamic_code_book();
  for (int64_t b = 0; b < qabsmax.numel(); ++b) out[b] = code[q[b]] * a2[b / kNf4Block2] + offset;
}

Nf4Tensor quantize_nf4(const float* w, int64_t rows, int64_t cols) {
  const int64_t n = rows * cols;
  check(n % kNf4Block == 0, "NF4: a weight of " + std::to_string(n) + " elements is not a whole number of 64-blocks");
  const int64_t blocks = n / kNf4Block;
  Nf4Tensor t;
  t.rows = rows, t.cols = cols;
  t.codes = Tensor::empty({n / 2}, DType::u8, Device::cpu(), MemoryCategory::weights);
  t.qabsmax = Tensor::empty({blocks}, DType::u8, Device::cpu(), MemoryCategory::weights);
  t.absmax2 =
      Tensor::empty({(blocks + kNf4Block2 - 1) / kNf4Block2}, DType::f32, Device::cpu(), MemoryCategory::weights);
  std::vector<float> absmax(static_cast<size_t>(blocks));
  uint8_t* codes = t.codes.data<uint8_t>();
  // Midpoints between neighbouring NF4 values: torch.bucketize against them, as bitsandbytes
  // does, sends a value exactly on a midpoint to the lower code.
  std::array<float, 15> bounds;
  for (int i = 0; i < 15; ++i) bounds[size_t(i)] = (kNf4[size_t(i)] + kNf4[size_t(i) + 1]) / 2;
  core::parallel_for(blocks, 64, [&](int64_t b0, int64_t b1) {
    for (int64_t b = b0; b < b1; ++b) {
      const float* x = w + b * kNf4Block;
      float m = 0;
      for (int64_t i = 0; i < kNf4Block; ++i) m = std::max(m, std::fabs(x[i]));
      absmax[size_t(b)] = m;
      const float inv = 1.0f / std::max(m, 1e-38f);  // the reciprocal, then a product, as bnb
      for (int64_t i = 0; i < kNf4Block; i += 2) {
        uint8_t q[2];
        for (int j = 0; j < 2; ++j) {
          const float s = std::clamp(x[i + j] * inv, -1.0f, 1.0f);
          q[j] = uint8_t(std::lower_bound(bounds.begin(), bounds.end(), s) - bounds.begin());
        }
        codes[(b * kNf4Block + i) / 2] = uint8_t(q[0] << 4 | q[1]);
      }
    }
  });
  // Double quantization of the absmax values.
  double sum = 0;
  for (float a : absmax) sum += a;
  t.offset = float(sum / double(blocks));
  const float* code = dynamic_code_book();
  uint8_t* qa = t.qabsmax.data<uint8_t>();
  float* a2 = t.absmax2.data<float>();
  for (int64_t c = 0; c * kNf4Block2 < blocks; ++c) {
    const int64_t end = std::min(blocks, (c + 1) * kNf4Block2);
    float m = 0;
    for (int64_t b = c * kNf4Block2; b < end; ++b) m = std::max(m, std::fabs(absmax[size_t(b)] - t.offset));
    a2[c] = m;
    for (int64_t b = c * kNf4Block2; b < end; ++b) {
      const float normed = m > 0 ? (absmax[size_t(b)] - t.offset) / m : 0.0f;
      qa[b] = nearest(code, 256, normed);
    }
  }
  return t;
}

void dequantize_nf4_rows(const Nf4Tensor& t, int64_t row0, int64_t row1, float* out) {
  // Elements [e0, e1) of the row-major weight; a 64-block may straddle rows when cols % 64 != 0.
  const int64_t e0 = row0 * t.cols, e1 = row1 * t.cols;
  const uint8_t* codes = t.codes.data<uint8_t>();
  const uint8_t* qa = t.qabsmax.data<uint8_t>();
  const float* a2 = t.absmax2.data<float>();
  const float* code2 = dynamic_code_book();
  for (int64_t e = e0; e < e1;) {
    const int64_t b = e / kNf4Block;
    const float absmax = code2[qa[b]] * a2[b / kNf4Block2] + t.offset;
    const int64_t end = std::min(e1, (b + 1) * kNf4Block);
    int64_t i = e;
    if (i & 1) {  // a block starting mid-byte: its low nibble first
      out[i - e0] = kNf4[codes[i / 2] & 15] * absmax;
      ++i;
    }
    for (; i + 1 < end; i += 2) {
      const uint8_t byte = codes[i / 2];
      out[i - e0] = kNf4[byte >> 4] * absmax;
      out[i + 1 - e0] = kNf4[byte & 15] * absmax;
    }
    if (i < end) out[i - e0] = kNf4[codes[i / 2] >> 4] * absmax;
    e = end;
  }
}

int64_t Nf4Matrix::bytes() const {
  int64_t b = 0;
  for (const auto& p : parts) b += p.bytes();
  return b;
}

void Nf4Matrix::dequantize_rows(int64_t row0, int64_t row1, float* out) const {
  int64_t base = 0;
  for (const auto& p : parts) {
    const int64_t lo = std::max(row0, base), hi = std::min(row1, base + p.rows);
    if (lo < hi) dequantize_nf4_rows(p, lo - base, hi - base, out + (lo - row0) * cols);
    base += p.rows;
  }
}

Nf4Matrix quantize_nf4_matrix(const float* w, const std::vector<int64_t>& part_rows, int64_t cols) {
  Nf4Matrix m;
  m.cols = cols;
  for (int64_t r : part_rows) {
    m.parts.push_back(quantize_nf4(w + m.rows * cols, r, cols));
    m.rows += r;
  }
  return m;
}

}  // namespace tach::cpu
