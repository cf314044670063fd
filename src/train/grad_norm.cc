#include "train/grad_norm.h"

#include <cmath>

#include "ops/grad_norm.h"

namespace tach::train {

double clip_grad_norm(const std::vector<Tensor>& grads, double max_norm) {
  const double norm = ops::grad_norm(grads);
  // A non-finite norm leaves the gradients as they are: the step is skipped, not clipped to zero.
  if (std::isfinite(norm) && max_norm > 0) ops::clip_grads_to_norm(grads, norm, max_norm);
  return norm;
}

}  // namespace tach::train
