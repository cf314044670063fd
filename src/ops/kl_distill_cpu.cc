#include <algorithm>
#include <cmath>
#include <vector>

#include "core/parallel.h"
#include "ops/cross_entropy.h"
#include "ops/kl_distill.h"

namespace tach::ops {

namespace {

// One group's two distributions: x[c * inner] over c in [0, classes), divided by T, as
// log-softmax's shift (the max) and log of the sum, in double.
struct LogSoftmax {
  double shift = 0, log_sum = 0;
  LogSoftmax(const float* x, int64_t classes, int64_t inner, double inv_t) {
    double mx = double(x[0]) * inv_t;
    for (int64_t c = 1; c < classes; ++c) mx = std::max(mx, double(x[c * inner]) * inv_t);
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(double(x[c * inner]) * inv_t - mx);
    shift = mx;
    log_sum = std::log(sum);
  }
  double log_p(float v, double inv_t) const { return double(v) * inv_t - shift - log_sum; }
};

// The first element of group i (outer o, inner j) in [outer, classes, inner].
int64_t group_base(int64_t i, SoftmaxGroups g) { return (i / g.inner) * g.classes * g.inner + i % g.inner; }

int64_t counted_groups(const int32_t* labels, int64_t groups) {
  if (!labels) return groups;
  int64_t n = 0;
  for (int64_t i = 0; i < groups; ++i) n += labels[i] != kIgnoreIndex;
  return n;
}

}  // namespace

double kl_distill_forward_cpu(const float* student, const float* teacher, const int32_t* labels, SoftmaxGroups g,
                              float temperature) {
  const int64_t groups = g.groups(), counted = counted_groups(labels, groups);
  if (counted == 0) return 0.0;
  const double inv_t = 1.0 / double(temperature);
  // Each group's KL term, then summed in group order: the same loss for any thread count.
  std::vector<double> terms(size_t(groups), 0.0);
  core::parallel_for(groups, 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (labels && labels[i] == kIgnoreIndex) continue;
      const int64_t base = group_base(i, g);
      const float* s = student + base;
      const float* t = teacher + base;
      const LogSoftmax ls(s, g.classes, g.inner, inv_t), lt(t, g.classes, g.inner, inv_t);
      double kl = 0;
      for (int64_t c = 0; c < g.classes; ++c) {
        const double log_p = lt.log_p(t[c * g.inner], inv_t);
        kl += std::exp(log_p) * (log_p - ls.log_p(s[c * g.inner], inv_t));
      }
      terms[size_t(i)] = kl;
    }
  });
  double total = 0;
  for (const double k : terms) total += k;
  return double(temperature) * double(temperature) * total / double(counted);
}

void kl_distill_backward_cpu(float* dstudent, const float* student, const float* teacher, const int32_t* labels,
                             SoftmaxGroups g, float temperature, float scale) {
  const int64_t groups = g.groups(), counted = counted_groups(labels, groups);
  if (counted == 0) return;
  const double inv_t = 1.0 / double(temperature);
  // d (T² KL) / d s_c = T² · (q_c - p_c) / T = T (q_c - p_c), over the counted groups' mean.
  const double k = double(scale) * double(temperature) / double(counted);
  core::parallel_for(groups, 8, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      if (labels && labels[i] == kIgnoreIndex) continue;
      const int64_t base = group_base(i, g);
      const float* s = student + base;
      const float* t = teacher + base;
      float* d = dstudent + base;
      const LogSoftmax ls(s, g.classes, g.inner, inv_t), lt(t, g.classes, g.inner, inv_t);
      for (int64_t c = 0; c < g.classes; ++c) {
        const int64_t at = c * g.inner;
        d[at] += float(k * (std::exp(ls.log_p(s[at], inv_t)) - std::exp(lt.log_p(t[at], inv_t))));
      }
    }
  });
}

}  // namespace tach::ops
