// Greedy decoding's choice: the index of each row's largest logit, the first of equal ones (as
// torch.argmax and std::max_element), after Gemma's final-logit softcap where the model has one
// (cap * tanh(x / cap) in double, rounded to f32, as the logits tach returns are: monotonic, but
// rounding can make two logits equal). On a GPU only the B indices come back to the host, not
// the B x vocabulary logits.
#pragma once

#include "ops/op_cost.h"
#include "tach/tensor.h"

namespace tach::ops {

// logits: [B, V] f32  out: [B] i32, on one device. softcap 0: none.
void argmax_rows(Tensor& out, const Tensor& logits, double softcap = 0);
OpCost argmax_rows_cost(int64_t B, int64_t V);

// Kernels.
void argmax_rows_cpu(int32_t* out, const float* logits, int64_t B, int64_t V, double softcap);
void argmax_rows_cuda(int device, int32_t* out, const float* logits, int64_t B, int64_t V, double softcap);

}  // namespace tach::ops
