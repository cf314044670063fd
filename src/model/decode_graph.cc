#include "model/decode_graph.h"

#include <cstdlib>
#include <cstring>

#include "core/allocator.h"
#include "core/trace.h"
#include "ops/argmax.h"
#include "ops/cast.h"
#include "ops/embedding.h"
#include "ops/linear.h"
#include "tach/error.h"

namespace tach::model {

namespace {

// A RoPE table's rows at this step's positions: a gather by device ids, which the embedding op is.
void gather_rows(ops::RopeTable& step, const ops::RopeTable& all, const Tensor& positions) {
  if (!all.cos.defined()) return;
  ops::embedding_forward(step.cos, positions, all.cos, false);
  ops::embedding_forward(step.sin, positions, all.sin, false);
}

bool follows_length(const ops::RopeSettings& r, int64_t capacity) {
  return r.type == "dynamic" && capacity > r.max_positions;
}

}  // namespace

std::string DecodeGraph::unsupported_reason(const DecoderConfig& c, Device device, int64_t capacity) {
  if (!core::StreamGraph::supported(device)) return device.str() + " does not capture graphs";
  if (const char* env = std::getenv("TACH_CUDA_GRAPHS"); env && std::string(env) == "0") return "TACH_CUDA_GRAPHS=0";
  if (follows_length(c.rope, capacity) || (c.has_local_rope && follows_length(c.local_rope, capacity)))
    return "dynamic RoPE past the trained context changes its frequencies with the length";
  if (!c.causal) return "a bidirectional model does not decode";
  return "";
}

DecodeGraph::DecodeGraph(const DecoderWeights& w, const DecoderConfig& c, const ops::Linear& head, double softcap,
                         KvCache& cache, int64_t batch)
    : w_(w), c_(c), head_(head), softcap_(softcap), cache_(cache), B_(batch), device_(w.final_norm.device()) {
  const int64_t B = batch, C = c.hidden_size, half = c.head_dim / 2;
  host_state_ = Tensor::empty({1 + 2 * B}, DType::i32);
  state_ = Tensor::zeros({1 + 2 * B}, DType::i32, device_);
  ids_ = state_.narrow(0, 1, B).reshape({B, 1});
  positions_ = state_.narrow(0, 1 + B, B);

  // Tables of every position the cache can hold, made once on the host as decoder_rope makes a
  // call's (the length only matters to dynamic scaling, refused above where it would).
  Tensor every = Tensor::empty({cache.capacity}, DType::i32);
  for (int64_t p = 0; p < cache.capacity; ++p) every.data<int32_t>()[p] = int32_t(p);
  all_positions_ = decoder_rope(c, every, cache.capacity, device_);
  auto step_table = [&](const ops::RopeTable& all) {
    if (!all.cos.defined()) return ops::RopeTable{};
    return ops::RopeTable{Tensor::empty({B, half}, DType::f32, device_), Tensor::empty({B, half}, DType::f32, device_)};
  };
  rope_.global = step_table(all_positions_.global);
  rope_.local = step_table(all_positions_.local);

  // Every key a step appends is a real token: the mask's columns past the cache's length are set
  // once (a prompt's forward writes its own columns over them), and causality hides those not
  // written yet.
  int32_t* hm = cache.host_mask.data<int32_t>();
  for (int64_t b = 0; b < B; ++b)
    for (int64_t p = cache.length; p < cache.capacity; ++p) hm[b * cache.capacity + p] = 1;
  if (cache.mask.raw() != cache.host_mask.raw())
    core::copy_bytes(cache.mask.device(), cache.mask.raw(), Device::cpu(), cache.host_mask.raw(),
                     cache.host_mask.nbytes());

  pass_.rope = &rope_;
  pass_.key_mask = cache.mask.data<int32_t>();
  pass_.mask_stride = cache.capacity;
  pass_.cache = &cache;
  pass_.device_past = state_.data<int32_t>();
  t_ = inference_scratch(c, B, Tensor::empty({B, C}, w.activations, device_), device_);
  logits_ = Tensor::empty({B, c.vocab_size}, DType::f32, device_);
  if (w.activations != DType::f32) head_rows_f32_ = Tensor::empty({B, C}, DType::f32, device_);
  tokens_ = Tensor::empty({B}, DType::i32, device_);
}

DecodeGraph::~DecodeGraph() = default;

void DecodeGraph::queue_step() {
  gather_rows(rope_.global, all_positions_.global, positions_);
  gather_rows(rope_.local, all_positions_.local, positions_);
  decoder_pass(w_, c_, B_, 1, ids_, pass_, t_);
  {
    core::Span span(core::SpanKind::module, "lm_head");
    if (head_rows_f32_.defined()) ops::cast(head_rows_f32_, t_.x1);
    ops::linear_forward(logits_, head_rows_f32_.defined() ? head_rows_f32_ : t_.x1, head_);
  }
  ops::argmax_rows(tokens_, logits_, softcap_);
}

std::vector<int32_t> DecodeGraph::step(const int32_t* ids, const int32_t* positions) {
  check(cache_.length + 1 <= cache_.capacity, "the key/value cache holds " + std::to_string(cache_.capacity) +
                                                  " positions; " + std::to_string(cache_.length + 1) + " are needed");
  int32_t* s = host_state_.data<int32_t>();
  s[0] = int32_t(cache_.length);
  std::memcpy(s + 1, ids, size_t(B_) * sizeof(int32_t));
  std::memcpy(s + 1 + B_, positions, size_t(B_) * sizeof(int32_t));
  core::copy_bytes(device_, state_.raw(), Device::cpu(), host_state_.raw(), host_state_.nbytes());
  if (graph_) {
    graph_->replay();
  } else {
    // The first step runs as it will be captured, which also sizes every buffer the kernels
    // reuse and picks the GEMMs' algorithms, so that the capture allocates nothing.
    queue_step();
    if (steps_ == 0 && capture_error_.empty()) {
      try {
        graph_ = std::make_unique<core::StreamGraph>(device_, [this] { queue_step(); });
      } catch (const Error& e) { capture_error_ = e.what(); }
    }
  }
  ++steps_;
  cache_.length += 1;
  const Tensor host = tokens_.on(Device::cpu());
  return std::vector<int32_t>(host.data<int32_t>(), host.data<int32_t>() + B_);
}

std::string DecodeGraph::method() const {
  if (graph_)
    return "a CUDA graph of " + std::to_string(graph_->nodes()) +
           " nodes per step (captured at the first step, replayed after it; the step's token, position and cache "
           "length written to the device before each replay, the chosen tokens read back)";
  return "kernel by kernel (the graph's capture failed: " + capture_error_ + ")";
}

}  // namespace tach::model
