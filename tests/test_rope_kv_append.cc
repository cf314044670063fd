// Decoding's fused RoPE and cache append (ops/rope_kv_append.h) on the CPU: the layout it requires
// is checked by name before anything is written, and its results are rope_forward's and
// kv_append's. (The GPU's one kernel against the two ops, bit for bit: test_cuda_ops_bf16.)
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "ops/rope_kv_append.h"
#include "tach/error.h"
#include "test_util.h"

namespace tach::ops {
namespace {

struct Case {
  int64_t B = 2, T = 3, H = 4, KVH = 2, D = 8, capacity = 10;
  int64_t ld() const { return (H + 2 * KVH) * D; }
  KvAppendArgs args() const {
    KvAppendArgs a;
    a.B = B, a.T = T, a.past = 2, a.capacity = capacity, a.width = KVH * D, a.ld_qkv = ld();
    a.k_col = H * D, a.v_col = (H + KVH) * D;
    return a;
  }
  RopeTable table() const {
    Tensor positions = Tensor::empty({B * T}, DType::i32);
    for (int64_t n = 0; n < B * T; ++n) positions.data<int32_t>()[n] = int32_t(2 + n % T);
    RopeSettings s;
    s.head_dim = D;
    return rope_table(positions, s, 16);
  }
};

Tensor filled(const Shape& shape, float seed) {
  Tensor t = Tensor::empty(shape, DType::f32);
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = std::sin(seed + 0.37f * float(i));
  return t;
}

TEST(RopeKvAppend, IsRopeThenTheAppendOnTheCpu) {
  const Case c;
  const RopeTable table = c.table();
  Tensor want = filled({c.B * c.T, c.ld()}, 1), got = filled({c.B * c.T, c.ld()}, 1);
  Tensor want_k = Tensor::zeros({c.B, c.capacity, c.KVH * c.D}, DType::f32), want_v = want_k.to(DType::f32);
  Tensor got_k = want_k.to(DType::f32), got_v = want_k.to(DType::f32);
  rope_forward(want, c.H, c.KVH, c.D, table);
  kv_append(want_k.data<float>(), want_v.data<float>(), want.data<float>(), c.args());
  rope_kv_append(got.raw(), got_k.raw(), got_v.raw(), c.args(), c.H, c.D, table);
  EXPECT_EQ(0, std::memcmp(got.raw(), want.raw(), got.nbytes()));
  EXPECT_EQ(0, std::memcmp(got_k.raw(), want_k.raw(), got_k.nbytes()));
  EXPECT_EQ(0, std::memcmp(got_v.raw(), want_v.raw(), got_v.nbytes()));
  // The keys in the cache are the rotated ones, not the buffer's before the call.
  const Tensor before = filled({c.B * c.T, c.ld()}, 1);
  EXPECT_NE(0, std::memcmp(got_k.data<float>() + 2 * c.KVH * c.D, before.data<float>() + c.H * c.D,
                           size_t(c.KVH * c.D) * sizeof(float)));
}

TEST(RopeKvAppend, ALayoutItCannotRotateIsRefusedByName) {
  const Case c;
  const RopeTable table = c.table();
  Tensor qkv = filled({c.B * c.T, c.ld()}, 2);
  Tensor k = Tensor::zeros({c.B, c.capacity, c.KVH * c.D}, DType::f32), v = k.to(DType::f32);
  KvAppendArgs a = c.args();
  a.k_col = c.H * c.D + 1;  // keys not right after the queries
  EXPECT_THROW(rope_kv_append(qkv.raw(), k.raw(), v.raw(), a, c.H, c.D, table), Error);
  a = c.args();
  const RopeTable short_table{table.cos.narrow(0, 0, 2), table.sin.narrow(0, 0, 2)};
  try {
    rope_kv_append(qkv.raw(), k.raw(), v.raw(), a, c.H, c.D, short_table);
    FAIL() << "a table for fewer rows was taken";
  } catch (const Error& e) { EXPECT_NE(std::string(e.what()).find("cos/sin table"), std::string::npos) << e.what(); }
  a.past = c.capacity - 1;  // no room for T rows
  EXPECT_THROW(rope_kv_append(qkv.raw(), k.raw(), v.raw(), a, c.H, c.D, table), Error);
}

TEST(RopeKvAppend, CostsTheTwoOpsLessTheKeysSecondRead) {
  const Case c;
  KvAppendArgs a = c.args();
  a.dtype = DType::bf16;
  const OpCost fused = rope_kv_append_cost(a, c.H, c.D);
  OpCost two = rope_cost(c.B * c.T, c.H + c.KVH, c.D, DType::bf16);
  two += kv_append_cost(a);
  EXPECT_EQ(fused.flops, two.flops);
  EXPECT_EQ(two.bytes_read - fused.bytes_read, double(c.B * c.T * c.KVH * c.D * 2));
}

}  // namespace
}  // namespace tach::ops
