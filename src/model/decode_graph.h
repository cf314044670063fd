// A greedy decoding step captured once as a CUDA graph and replayed at every later step.
//
// A step of a small decoder is a few hundred short kernels; launched one by one from the host
// their launch costs exceed their run time (Qwen2.5-0.5B: ~290 launches, a 5 ms step against a
// 0.33 ms memory floor on an H100). What changes from step to step lives in device memory, so
// that the captured kernels read it rather than their arguments: the cache length (the key/value
// append's row, the attention's keys), each row's token and position (the embedding row, RoPE's
// rows of a table of every position). The host writes those, [1 + 2B] i32, with one copy before
// a replay, and reads back the B chosen tokens (the argmax runs on the device) after it.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/stream_graph.h"
#include "model/decoder.h"

namespace tach::model {

class DecodeGraph {
 public:
  // Why the graph cannot serve this model on `device` ("" when it can): a device that does not
  // capture, TACH_CUDA_GRAPHS=0, or RoPE whose frequencies change with the length (dynamic scaling
  // past the trained context), which a table made once cannot follow.
  static std::string unsupported_reason(const DecoderConfig& c, Device device, int64_t capacity);

  // Made before the prompt's forward (or after it): the cache's mask columns past its length are
  // marked real, since every step appends a real token (causality hides the ones not written
  // yet). head: the LM head on the model's device; softcap: Gemma's final-logit cap (0: none).
  DecodeGraph(const DecoderWeights& w, const DecoderConfig& c, const ops::Linear& head, double softcap, KvCache& cache,
              int64_t batch);
  ~DecodeGraph();

  // ids, positions: [B] on the host, each row's last token and its position. Runs one step (the
  // first one eagerly and then captures it; replays after that), appends to the cache and
  // returns each row's next token.
  std::vector<int32_t> step(const int32_t* ids, const int32_t* positions);
  // How the steps ran, for the report: the graph's size, or why they ran eagerly.
  std::string method() const;

 private:
  void queue_step();  // the step's device work, in the order the graph holds it

  const DecoderWeights& w_;
  const DecoderConfig& c_;
  const ops::Linear& head_;
  double softcap_;
  KvCache& cache_;
  int64_t B_;
  Device device_;
  Tensor host_state_, state_;  // [1 + 2B] i32: the cache length, each row's token, each row's position
  Tensor ids_, positions_;     // views of state_: [B, 1] and [B]
  DecoderRope all_positions_;  // [capacity, D/2] tables of every position the cache holds
  DecoderRope rope_;           // [B, D/2]: this step's rows of them
  DecoderPass pass_;
  DecoderLayerTensors t_;
  Tensor logits_, tokens_;  // [B, V] f32, [B] i32
  // [B, C] f32: the final norm's 16-bit rows cast for the LM head, which writes f32 logits from f32
  // rows (its GEMV rounds them back to the weights' dtype as it reads: exact); undefined when the
  // activations are f32.
  Tensor head_rows_f32_;
  std::unique_ptr<core::StreamGraph> graph_;
  std::string capture_error_;
  int64_t steps_ = 0;
};

}  // namespace tach::model
