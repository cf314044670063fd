// The norms' and dropout's training entry points on CUDA against the CPU: LayerNorm's training
// forward (mean and rstd saved), the fused dropout-add-LayerNorm, the pre-norm form with its
// statistics, LayerNorm's backward; RMSNorm's forward saving rstd, its per-head form saving its
// input, both backwards; dropout both ways with the CPU's mask exactly. Gradients start non-zero
// (the kernels accumulate), frozen and bias-free norms skip theirs, and the parameter gradients
// must come out bitwise equal from two runs (no atomics).
#include <cstring>
#include <string>
#include <vector>

#include "../cuda_compare.h"
#include "ops/dropout.h"
#include "ops/layer_norm.h"
#include "ops/rms_norm.h"

namespace tach::test {
namespace {

using namespace tach::ops;

class CudaTrainNorms : public CudaTest {};

// A device tensor of NaNs: an element a kernel leaves unwritten shows as an infinite error.
Tensor gpu_poisoned(const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::f32, kGpu);
  poison(t);
  return t;
}

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.numel() == b.numel() && std::memcmp(on_cpu(a).raw(), on_cpu(b).raw(), a.nbytes()) == 0;
}

// Rows: one, an odd count, more than one chunk of the parameter sums (64 rows) and not a multiple
// of it. Widths: under a warp, odd, BERT's, and not a multiple of 32 or 128.
const std::vector<int64_t> kRows = {1, 37, 300};
const std::vector<int64_t> kWidths = {7, 33, 768, 1000};

TEST_F(CudaTrainNorms, DropoutDrawsTheCpuMaskExactly) {
  const int64_t n = 100003;  // several blocks' grid-stride loops, not a multiple of the block
  const Tensor x = random_tensor({n}, 1);
  for (const float p : {0.1f, 0.5f, 0.0f}) {
    SCOPED_TRACE("p = " + std::to_string(p));
    const uint64_t key = dropout_key(42, 3, 7);
    Tensor want = Tensor::empty({n}, DType::f32);
    dropout_forward(want, x, p, key);
    Tensor got = gpu_poisoned({n});
    dropout_forward(got, on_gpu(x), p, key);
    // Exact: the same keep/drop decision and the same single multiply per element.
    EXPECT_TRUE(bitwise_equal(got, want));
    const Tensor host = on_cpu(got);
    int64_t mismatched = 0, dropped = 0;
    for (int64_t i = 0; i < n; ++i) {
      const bool dropped_here = host.data<float>()[i] == 0.0f;
      dropped += dropped_here;
      mismatched += dropped_here == dropout_keeps(key, i, p);
    }
    EXPECT_EQ(mismatched, 0) << "the device's mask differs from dropout_keeps";
    if (p > 0) { EXPECT_NEAR(double(dropped) / double(n), p, 0.01); }

    // The backward draws the same mask again; in place on the device here.
    const Tensor dout = random_tensor({n}, 2);
    Tensor dwant = Tensor::empty({n}, DType::f32);
    dropout_backward(dwant, dout, p, key);
    Tensor dgot = on_gpu(dout);
    dropout_backward(dgot, dgot, p, key);
    EXPECT_TRUE(bitwise_equal(dgot, dwant));
  }
}

TEST_F(CudaTrainNorms, LayerNormTrainingForwardSavesTheCpuStatistics) {
  for (const int64_t N : kRows)
    for (const int64_t C : kWidths)
      for (const bool with_beta : {true, false}) {
        SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + (with_beta ? " +beta" : ""));
        const Tensor x = random_tensor({N, C}, 10, 2.0f), gamma = random_tensor({C}, 11);
        const Tensor beta = with_beta ? random_tensor({C}, 12) : Tensor();
        Tensor out = Tensor::empty({N, C}, DType::f32), mean = Tensor::empty({N}, DType::f32),
               rstd = Tensor::empty({N}, DType::f32);
        layer_norm_forward_train(out, x, gamma, beta, 1e-5f, mean, rstd);
        Tensor gout = gpu_poisoned({N, C}), gmean = gpu_poisoned({N}), grstd = gpu_poisoned({N});
        layer_norm_forward_train(gout, on_gpu(x), on_gpu(gamma), with_beta ? on_gpu(beta) : Tensor(), 1e-5f, gmean,
                                 grstd);
        // Row sums in another order (a block reduction against the CPU's vector loop): f32 rounding.
        EXPECT_LT(scaled_error(on_cpu(gout), out), kElementwiseTol);
        EXPECT_LT(scaled_error(on_cpu(gmean), mean), kElementwiseTol);
        EXPECT_LT(scaled_error(on_cpu(grstd), rstd), kElementwiseTol);
      }
}

TEST_F(CudaTrainNorms, DropoutAddLayerNormMatchesCpuWithTheSameMask) {
  for (const int64_t N : kRows)
    for (const int64_t C : {int64_t(33), int64_t(768)})
      for (const float p : {0.1f, 0.0f}) {
        SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + " p " + std::to_string(p));
        const Tensor branch = random_tensor({N, C}, 20), x = random_tensor({N, C}, 21, 2.0f);
        const Tensor gamma = random_tensor({C}, 22), beta = random_tensor({C}, 23);
        const uint64_t key = dropout_key(5, 1, 4);
        Tensor sum = Tensor::empty({N, C}, DType::f32), out = Tensor::empty({N, C}, DType::f32);
        Tensor mean = Tensor::empty({N}, DType::f32), rstd = Tensor::empty({N}, DType::f32);
        dropout_add_layer_norm_forward(sum, out, branch, x, gamma, beta, 1e-12f, p, key, mean, rstd);
        Tensor gsum = gpu_poisoned({N, C}), gout = gpu_poisoned({N, C}), gmean = gpu_poisoned({N}),
               grstd = gpu_poisoned({N});
        dropout_add_layer_norm_forward(gsum, gout, on_gpu(branch), on_gpu(x), on_gpu(gamma), on_gpu(beta), 1e-12f, p,
                                       key, gmean, grstd);
        const Tensor hsum = on_cpu(gsum);
        // The mask exactly: a dropped element leaves sum == x bit for bit, on both sides.
        int64_t mismatched = 0;
        for (int64_t i = 0; i < N * C; ++i)
          mismatched += (hsum.data<float>()[i] == x.data<float>()[i]) != (sum.data<float>()[i] == x.data<float>()[i]);
        EXPECT_EQ(mismatched, 0);
        // sum: one multiply and one add per element, either of which may be fused (FMA) on one side.
        EXPECT_LT(scaled_error(hsum, sum), 1e-6);
        // Row statistics in another order: f32 rounding.
        EXPECT_LT(scaled_error(on_cpu(gout), out), kElementwiseTol);
        EXPECT_LT(scaled_error(on_cpu(gmean), mean), kElementwiseTol);
        EXPECT_LT(scaled_error(on_cpu(grstd), rstd), kElementwiseTol);
      }
}

// ModernBERT's training forward: h += delta, out = LayerNorm(h), the statistics saved.
TEST_F(CudaTrainNorms, PreLayerNormSavesTheCpuStatistics) {
  const int64_t N = 37, C = 1000;
  const Tensor gamma = random_tensor({C}, 30), delta = random_tensor({N, C}, 31);
  for (const bool with_delta : {true, false}) {
    SCOPED_TRACE(with_delta ? "+delta" : "no delta");
    Tensor h = random_tensor({N, C}, 32), hg = on_gpu(h);
    Tensor out = Tensor::empty({N, C}, DType::f32), mean = Tensor::empty({N}, DType::f32),
           rstd = Tensor::empty({N}, DType::f32);
    pre_layer_norm_forward(out, h, with_delta ? delta : Tensor(), gamma, Tensor(), 1e-5f, mean, rstd);
    Tensor gout = gpu_poisoned({N, C}), gmean = gpu_poisoned({N}), grstd = gpu_poisoned({N});
    pre_layer_norm_forward(gout, hg, with_delta ? on_gpu(delta) : Tensor(), on_gpu(gamma), Tensor(), 1e-5f, gmean,
                           grstd);
    EXPECT_LT(scaled_error(on_cpu(hg), h), 1e-7) << "the residual stream h += delta: one add, exact";
    EXPECT_LT(scaled_error(on_cpu(gout), out), kElementwiseTol);
    EXPECT_LT(scaled_error(on_cpu(gmean), mean), kElementwiseTol);
    EXPECT_LT(scaled_error(on_cpu(grstd), rstd), kElementwiseTol);
  }
}

// What a LayerNorm's parameters are in a case: trained with a bias, trained without one, frozen.
enum class Params { gamma_and_beta, gamma_only, frozen };

TEST_F(CudaTrainNorms, LayerNormBackwardAccumulatesAsTheCpu) {
  for (const int64_t N : kRows)
    for (const int64_t C : kWidths)
      for (const Params params : {Params::gamma_and_beta, Params::gamma_only, Params::frozen}) {
        SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + " params " + std::to_string(int(params)));
        const Tensor x = random_tensor({N, C}, 40, 2.0f), gamma = random_tensor({C}, 41), beta = random_tensor({C}, 42);
        Tensor out = Tensor::empty({N, C}, DType::f32), mean = Tensor::empty({N}, DType::f32),
               rstd = Tensor::empty({N}, DType::f32);
        layer_norm_forward_train(out, x, gamma, beta, 1e-5f, mean, rstd);
        const Tensor dout = random_tensor({N, C}, 43);
        // Gradients start non-zero: both kernels add to them.
        const Tensor dinp0 = random_tensor({N, C}, 44), dgamma0 = random_tensor({C}, 45),
                     dbeta0 = random_tensor({C}, 46);
        const bool train_gamma = params != Params::frozen, train_beta = params == Params::gamma_and_beta;
        Tensor dinp = dinp0.to(DType::f32), dgamma = dgamma0.to(DType::f32), dbeta = dbeta0.to(DType::f32);
        layer_norm_backward(dinp, train_gamma ? dgamma : Tensor(), train_beta ? dbeta : Tensor(), dout, x, gamma, mean,
                            rstd);
        const Tensor gx = on_gpu(x), gdout = on_gpu(dout), ggamma = on_gpu(gamma), gm = on_gpu(mean), gr = on_gpu(rstd);
        auto run_gpu = [&](Tensor& gdinp, Tensor& gdgamma, Tensor& gdbeta) {
          gdinp = on_gpu(dinp0), gdgamma = on_gpu(dgamma0), gdbeta = on_gpu(dbeta0);
          layer_norm_backward(gdinp, train_gamma ? gdgamma : Tensor(), train_beta ? gdbeta : Tensor(), gdout, gx,
                              ggamma, gm, gr);
        };
        Tensor gdinp, gdgamma, gdbeta;
        run_gpu(gdinp, gdgamma, gdbeta);
        // dinp: two row sums in another order, then a difference of them: 1e-4. dgamma and dbeta
        // sum over rows in the CPU's order, but x̂ may be rounded differently (FMA): 1e-4 too.
        EXPECT_LT(scaled_error(on_cpu(gdinp), dinp), kReductionTol);
        EXPECT_LT(scaled_error(on_cpu(gdgamma), dgamma), kReductionTol) << "frozen: must stay as it was";
        EXPECT_LT(scaled_error(on_cpu(gdbeta), dbeta), kReductionTol) << "no bias: must stay as it was";
        if (!train_gamma) { EXPECT_TRUE(bitwise_equal(gdgamma, on_gpu(dgamma0))); }
        if (!train_beta) { EXPECT_TRUE(bitwise_equal(gdbeta, on_gpu(dbeta0))); }
        Tensor again_dinp, again_dgamma, again_dbeta;
        run_gpu(again_dinp, again_dgamma, again_dbeta);
        EXPECT_TRUE(bitwise_equal(again_dgamma, gdgamma)) << "dgamma differs between two runs";
        EXPECT_TRUE(bitwise_equal(again_dbeta, gdbeta)) << "dbeta differs between two runs";
        EXPECT_TRUE(bitwise_equal(again_dinp, gdinp)) << "dinp differs between two runs";
      }
}

TEST_F(CudaTrainNorms, RmsNormTrainingForwardSavesTheCpuRstd) {
  for (const int64_t N : kRows)
    for (const int64_t C : {int64_t(7), int64_t(33), int64_t(896), int64_t(2500)})  // 2500: past the registers
      for (const bool with_delta : {true, false}) {
        SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + (with_delta ? " +delta" : ""));
        Tensor h = random_tensor({N, C}, 50), hg = on_gpu(h);
        const Tensor delta = random_tensor({N, C}, 51), weight = random_tensor({C}, 52);
        Tensor out = Tensor::empty({N, C}, DType::f32), rstd = Tensor::empty({N}, DType::f32);
        rms_norm_forward(out, h, with_delta ? delta : Tensor(), weight, 1e-6f, rstd);
        Tensor gout = gpu_poisoned({N, C}), grstd = gpu_poisoned({N});
        rms_norm_forward(gout, hg, with_delta ? on_gpu(delta) : Tensor(), on_gpu(weight), 1e-6f, grstd);
        EXPECT_LT(scaled_error(on_cpu(hg), h), 1e-7) << "h += delta: one add, exact";
        // The sum of squares in another order: f32 rounding.
        EXPECT_LT(scaled_error(on_cpu(gout), out), kElementwiseTol);
        EXPECT_LT(scaled_error(on_cpu(grstd), rstd), kElementwiseTol);
      }
}

TEST_F(CudaTrainNorms, RmsNormBackwardAccumulatesAsTheCpu) {
  for (const int64_t N : kRows)
    for (const int64_t C : kWidths)
      for (const bool frozen : {false, true}) {
        SCOPED_TRACE("N " + std::to_string(N) + " C " + std::to_string(C) + (frozen ? " frozen" : ""));
        Tensor h = random_tensor({N, C}, 60, 2.0f);
        const Tensor weight = random_tensor({C}, 61);
        Tensor out = Tensor::empty({N, C}, DType::f32), rstd = Tensor::empty({N}, DType::f32);
        rms_norm_forward(out, h, Tensor(), weight, 1e-6f, rstd);
        const Tensor dout = random_tensor({N, C}, 62), dinp0 = random_tensor({N, C}, 63),
                     dweight0 = random_tensor({C}, 64);
        Tensor dinp = dinp0.to(DType::f32), dweight = dweight0.to(DType::f32);
        rms_norm_backward(dinp, frozen ? Tensor() : dweight, dout, h, weight, rstd);
        const Tensor gdout = on_gpu(dout), gh = on_gpu(h), gw = on_gpu(weight), gr = on_gpu(rstd);
        auto run_gpu = [&](Tensor& gdinp, Tensor& gdweight) {
          gdinp = on_gpu(dinp0), gdweight = on_gpu(dweight0);
          rms_norm_backward(gdinp, frozen ? Tensor() : gdweight, gdout, gh, gw, gr);
        };
        Tensor gdinp, gdweight;
        run_gpu(gdinp, gdweight);
        // A row sum in another order, in a difference: 1e-4; dweight sums rows in the CPU's order.
        EXPECT_LT(scaled_error(on_cpu(gdinp), dinp), kReductionTol);
        EXPECT_LT(scaled_error(on_cpu(gdweight), dweight), kReductionTol);
        if (frozen) {
          EXPECT_TRUE(bitwise_equal(gdweight, on_gpu(dweight0))) << "a frozen norm's gradient is untouched";
        }
        Tensor again_dinp, again_dweight;
        run_gpu(again_dinp, again_dweight);
        EXPECT_TRUE(bitwise_equal(again_dweight, gdweight)) << "dweight differs between two runs";
        EXPECT_TRUE(bitwise_equal(again_dinp, gdinp));
      }
}

// Qwen3's and Gemma's q/k norms in a fused qkv buffer [N, ld]: q's heads from column 0, k's right
// after them, v's columns after those untouched.
struct HeadsCase {
  int64_t N, q_heads, k_heads, D;
  int64_t ld() const { return (q_heads + 2 * k_heads) * D; }
};
const std::vector<HeadsCase> kHeadsCases = {{1, 4, 2, 64}, {37, 6, 2, 48}, {300, 3, 1, 33}};

TEST_F(CudaTrainNorms, RmsNormHeadsForwardSavesTheCpuInputAndRstd) {
  for (const HeadsCase& k : kHeadsCases) {
    SCOPED_TRACE("N " + std::to_string(k.N) + " D " + std::to_string(k.D));
    const int64_t heads = k.q_heads + k.k_heads;
    const Tensor qkv = random_tensor({k.N, k.ld()}, 70, 2.0f), wq = random_tensor({k.D}, 71),
                 wk = random_tensor({k.D}, 72);
    Tensor want = qkv.to(DType::f32), got = on_gpu(qkv);
    Tensor saved = Tensor::empty({heads * k.N * k.D}, DType::f32), rstd = Tensor::empty({heads * k.N}, DType::f32);
    Tensor gsaved = gpu_poisoned({heads * k.N * k.D}), grstd = gpu_poisoned({heads * k.N});
    const int64_t q_in = k.N * k.q_heads * k.D, q_r = k.N * k.q_heads;
    rms_norm_heads_forward(want, 0, k.q_heads, k.D, wq, 1e-6f, saved.narrow(0, 0, q_in), rstd.narrow(0, 0, q_r));
    rms_norm_heads_forward(want, k.q_heads * k.D, k.k_heads, k.D, wk, 1e-6f,
                           saved.narrow(0, q_in, saved.numel() - q_in), rstd.narrow(0, q_r, rstd.numel() - q_r));
    rms_norm_heads_forward(got, 0, k.q_heads, k.D, on_gpu(wq), 1e-6f, gsaved.narrow(0, 0, q_in),
                           grstd.narrow(0, 0, q_r));
    rms_norm_heads_forward(got, k.q_heads * k.D, k.k_heads, k.D, on_gpu(wk), 1e-6f,
                           gsaved.narrow(0, q_in, gsaved.numel() - q_in), grstd.narrow(0, q_r, grstd.numel() - q_r));
    EXPECT_LT(scaled_error(on_cpu(got), want), kElementwiseTol) << "v's columns must stay untouched too";
    EXPECT_TRUE(bitwise_equal(gsaved, saved)) << "the saved input is a copy";
    EXPECT_LT(scaled_error(on_cpu(grstd), rstd), kElementwiseTol);
  }
}

TEST_F(CudaTrainNorms, RmsNormHeadsBackwardAccumulatesAsTheCpu) {
  for (const HeadsCase& k : kHeadsCases)
    for (const bool frozen : {false, true}) {
      SCOPED_TRACE("N " + std::to_string(k.N) + " D " + std::to_string(k.D) + (frozen ? " frozen" : ""));
      const int64_t heads = k.q_heads + k.k_heads;
      Tensor qkv = random_tensor({k.N, k.ld()}, 80, 2.0f);
      const Tensor wq = random_tensor({k.D}, 81), wk = random_tensor({k.D}, 82);
      Tensor saved = Tensor::empty({heads * k.N * k.D}, DType::f32), rstd = Tensor::empty({heads * k.N}, DType::f32);
      const int64_t q_in = k.N * k.q_heads * k.D, q_r = k.N * k.q_heads;
      rms_norm_heads_forward(qkv, 0, k.q_heads, k.D, wq, 1e-6f, saved.narrow(0, 0, q_in), rstd.narrow(0, 0, q_r));
      rms_norm_heads_forward(qkv, k.q_heads * k.D, k.k_heads, k.D, wk, 1e-6f,
                             saved.narrow(0, q_in, saved.numel() - q_in), rstd.narrow(0, q_r, rstd.numel() - q_r));
      const Tensor d0 = random_tensor({k.N, k.ld()}, 83), dq0 = random_tensor({k.D}, 84),
                   dk0 = random_tensor({k.D}, 85);
      Tensor d = d0.to(DType::f32), dq = dq0.to(DType::f32), dk = dk0.to(DType::f32);
      rms_norm_heads_backward(d, k.q_heads, k.k_heads, k.D, saved, rstd, wq, wk, frozen ? Tensor() : dq,
                              frozen ? Tensor() : dk);
      const Tensor gsaved = on_gpu(saved), grstd = on_gpu(rstd), gwq = on_gpu(wq), gwk = on_gpu(wk);
      auto run_gpu = [&](Tensor& gd, Tensor& gdq, Tensor& gdk) {
        gd = on_gpu(d0), gdq = on_gpu(dq0), gdk = on_gpu(dk0);
        rms_norm_heads_backward(gd, k.q_heads, k.k_heads, k.D, gsaved, grstd, gwq, gwk, frozen ? Tensor() : gdq,
                                frozen ? Tensor() : gdk);
      };
      Tensor gd, gdq, gdk;
      run_gpu(gd, gdq, gdk);
      // A head's sum in another order, in a difference: 1e-4; the weights' sums in the CPU's order.
      EXPECT_LT(scaled_error(on_cpu(gd), d), kReductionTol) << "v's columns must stay untouched too";
      EXPECT_LT(scaled_error(on_cpu(gdq), dq), kReductionTol);
      EXPECT_LT(scaled_error(on_cpu(gdk), dk), kReductionTol);
      Tensor again_d, again_dq, again_dk;
      run_gpu(again_d, again_dq, again_dk);
      EXPECT_TRUE(bitwise_equal(again_dq, gdq) && bitwise_equal(again_dk, gdk)) << "differs between two runs";
      EXPECT_TRUE(bitwise_equal(again_d, gd));
    }
}

}  // namespace
}  // namespace tach::test
