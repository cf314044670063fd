// The pieces of data-parallel training that need no second rank: which layer a parameter belongs
// to, a rank's rows of a global batch, and the gradient buckets' order and readiness. The ranks
// themselves are tested under mpirun (tests/cli/train_data_parallel.sh).
#include <gtest/gtest.h>

#include "dist/communicator.h"
#include "dist/gradient_reducer.h"
#include "train/data_parallel.h"

namespace tach {
namespace {

TEST(DataParallel, LayerOfEveryFamilysNames) {
  EXPECT_EQ(train::layer_of("bert.encoder.layer.3.attention.self.query.weight"), 3);
  EXPECT_EQ(train::layer_of("distilbert.transformer.layer.11.ffn.lin1.weight"), 11);
  EXPECT_EQ(train::layer_of("model.layers.0.self_attn.q_proj.weight"), 0);
  EXPECT_EQ(train::layer_of("base_model.model.model.layers.27.mlp.down_proj.lora_A.default.weight"), 27);
  EXPECT_EQ(train::layer_of("bert.embeddings.word_embeddings.weight"), -1);
  EXPECT_EQ(train::layer_of("mpnet.encoder.relative_attention_bias.weight"), -1);
  EXPECT_EQ(train::layer_of("classifier.weight"), -1);
  EXPECT_EQ(train::layer_of("model.player.1.weight"), -1);  // "layer" must be a whole name part
}

TEST(DataParallel, RanksInterleaveAndCoverEveryRowOnce) {
  const std::vector<int64_t> global = {10, 11, 12, 13, 14};  // a ragged last batch: 5 rows, 2 ranks
  EXPECT_EQ(train::rank_rows(global, 0, 2), (std::vector<int64_t>{10, 12, 14}));
  EXPECT_EQ(train::rank_rows(global, 1, 2), (std::vector<int64_t>{11, 13}));
  EXPECT_TRUE(train::rank_rows({7}, 1, 2).empty());  // a rank may sit a batch out
}

TEST(DataParallel, BucketsStartInTheBackwardsOrder) {
  dist::Communicator& one = dist::Communicator::world();  // one process: sums are the values themselves
  ASSERT_FALSE(one.distributed());
  std::vector<float> embed(100, 1.f), l0(60, 2.f), l1(60, 3.f), head(4, 4.f);
  // 125 floats (500 bytes) per bucket: layers 1 and 0 in one; the tensors outside the layers never
  // share a bucket with a layer's (they are final only at the end).
  dist::GradientReducer reducer(
      one, {{embed.data(), 100, -1}, {l0.data(), 60, 0}, {l1.data(), 60, 1}, {head.data(), 4, -1}}, 500);
  EXPECT_EQ(reducer.bucket_count(), 2);
  EXPECT_DOUBLE_EQ(reducer.bucket_bytes(), 4.0 * 224);
  reducer.begin();
  reducer.layer_done(1);
  reducer.layer_done(0);
  const dist::ReduceTimes t = reducer.finish();
  EXPECT_EQ(t.buckets, 2);
  EXPECT_DOUBLE_EQ(t.bytes, 4.0 * 224);
  EXPECT_EQ(l1[0], 3.f);  // summed over one rank: unchanged
  EXPECT_EQ(embed[99], 1.f);
}

}  // namespace
}  // namespace tach
