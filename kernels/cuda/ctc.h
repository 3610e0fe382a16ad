#pragma once
// CTC loss on CUDA, the same functions as kernels/cpu/ctc.h plus a trailing stream.
//
// Element types: log_probs and grad_log_probs f16, bf16, f32 or f64 (`dtype`); everything
// else (log_alpha, log_beta: [N, T, max_states]; neg_log_likelihood, loss, grad_loss: [N])
// is f32, or f64 when dtype is f64. `targets` points to device memory. Nothing here
// allocates or waits for the device. Unlike the CPU's, the workspace rows are stored shifted
// by their maxima (fp32 accuracy on long inputs, see ctc.cu); only these kernels read them.
#include <cuda_runtime_api.h>

#include "base/dtype.h"
#include "kernels/common/ctc.h"

namespace sonata::kernels::cuda {

// One block per sample walks t = 0..T_n-1 with the 2L_n+1 states spread over its threads.
// With `log_beta` (when the loss will be differentiated) the same launch runs each sample's
// beta recursion on a second block, concurrently with its alpha (kernels/common/ctc_plan.h);
// with nullptr (evaluation) alpha only.
void ctc_loss_forward(DType dtype, const void* log_probs, const CtcTargets& targets,
                      const CtcProblem& problem, void* log_alpha, void* log_beta,
                      void* neg_log_likelihood, void* loss, cudaStream_t stream);

// One warp per (t, n) row for the gradient from the forward's alpha and beta, whose formula
// is PyTorch's (see kernels/cpu/ctc.h), the posterior summed in linear space and normalised
// per row.
void ctc_loss_backward(DType dtype, const void* grad_loss, const void* log_probs,
                       const CtcTargets& targets, const CtcProblem& problem, const void* log_alpha,
                       const void* log_beta, const void* neg_log_likelihood, void* grad_log_probs,
                       cudaStream_t stream);

}  // namespace sonata::kernels::cuda
