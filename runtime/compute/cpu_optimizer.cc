// CpuCompute's AdamW and SGD updates over flat buffers, elements split across threads.
// Bias corrections 1 − β^step are computed in double once per call.
#include <cmath>

#include "runtime/compute/cpu_compute.h"
#include "runtime/compute/cpu_eigen.h"

namespace trident {

void CpuCompute::DoAdamW(const AdamWConfig& config, int64_t step, const Tensor& grad, Tensor& param,
                         Tensor& m, Tensor& v) {
  const auto correction1 =
      static_cast<float>(1.0 - std::pow(double{config.beta1}, static_cast<double>(step)));
  const auto correction2 =
      static_cast<float>(1.0 - std::pow(double{config.beta2}, static_cast<double>(step)));
  threads_.ParallelFor(param.numel(), 8, [&](int64_t begin, int64_t end) {
    const ConstArrayMap g = Elements(grad, begin, end);
    ArrayMap p = Elements(param, begin, end);
    ArrayMap m_part = Elements(m, begin, end);
    ArrayMap v_part = Elements(v, begin, end);
    m_part = config.beta1 * m_part + (1.0f - config.beta1) * g;
    v_part = config.beta2 * v_part + (1.0f - config.beta2) * g.square();
    p -= config.lr * ((m_part / correction1) / ((v_part / correction2).sqrt() + config.eps) +
                      config.weight_decay * p);
  });
}

void CpuCompute::DoSgd(const SgdConfig& config, const Tensor& grad, Tensor& param, Tensor& buf) {
  threads_.ParallelFor(param.numel(), 4, [&](int64_t begin, int64_t end) {
    const ConstArrayMap g = Elements(grad, begin, end);
    ArrayMap p = Elements(param, begin, end);
    if (!buf.defined()) {
      p -= config.lr * (g + config.weight_decay * p);
      return;
    }
    ArrayMap u = Elements(buf, begin, end);
    u = config.momentum * u + g + config.weight_decay * p;
    p -= config.lr * u;
  });
}

}  // namespace trident
