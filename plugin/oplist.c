#include "plugin/config.h"

#include <stddef.h>

/* The default intercept list, named as the dispatcher names them. Each entry is the op that
 * torch.nn.functional (or the Tensor method) reaches on CPU and CUDA: tests/python/test_oplist.py
 * checks that each one is hit. CompositeImplicitAutograd ops are skipped at registration (on
 * torch 2.13 CPU that is _fused_rms_norm, which only has a CUDA kernel). */
const char *const kf_default_ops[] = {
    "aten::_softmax",                          /* F.softmax; attention and logits */
    "aten::_log_softmax",                      /* F.log_softmax, cross-entropy */
    "aten::native_layer_norm",                 /* F.layer_norm */
    "aten::native_group_norm",                 /* F.group_norm: VAE decoders, UNets */
    "aten::_fused_rms_norm",                   /* F.rms_norm on CUDA */
    "aten::native_batch_norm",                 /* F.batch_norm (eval and train) on CPU and CUDA */
    "aten::cudnn_batch_norm",                  /* F.batch_norm on CUDA when cuDNN takes it */
    "aten::_native_batch_norm_legit_no_training", /* eval batch norm in exported graphs */
    "aten::gelu",                              /* F.gelu, exact and tanh */
    "aten::silu",                              /* F.silu: SwiGLU MLPs */
    "aten::relu",                              /* F.relu */
    "aten::relu_",                             /* nn.ReLU(inplace=True): ResNets */
    "aten::clamp_min",                         /* what relu becomes in some decompositions */
    "aten::clamp_min_",                        /* what relu_ reaches on CUDA (H200 profile) */
    "aten::add.Tensor",                        /* residuals, biases */
    "aten::add_.Tensor",                       /* in-place residual add: ResNets */
    "aten::add.out",                           /* torch.add(..., out=) */
    "aten::mul.Tensor",                        /* gating, scaling, RMSNorm decomposed by HF */
    "aten::mul_.Tensor",                       /* in-place scaling */
    "aten::mul.out",                           /* torch.mul(..., out=) */
    "aten::copy_",                             /* dtype casts (.to / .float()), contiguous() */
    "aten::_to_copy",                          /* .to(dtype) / .float(): the cast as one functional call */
    "aten::pow.Tensor_Scalar",                 /* x.pow(2) in HF RMSNorm */
    "aten::mean.dim",                          /* variance in HF RMSNorm */
    "aten::cat",                               /* rotary embeddings, KV caches */
    "aten::max_pool2d_with_indices",           /* F.max_pool2d: ResNet stem */
    "aten::linalg_solve_triangular",           /* Gated DeltaNet's chunked UT transform (Qwen 3.5) */
    "aten::_conv_depthwise2d",                 /* depthwise/causal conv1d on CUDA (Qwen 3.5) */
    /* generic reductions and gathers (forge/templates/reduce_ops.c, host_reduce.c,
     * cuda_reduce_generic.c, host_gather.c, cuda_gather.c) */
    "aten::sum.dim_IntList",                   /* x.sum(dim), loss reductions */
    "aten::sum",                               /* x.sum() */
    "aten::mean",                              /* x.mean() */
    "aten::amax",                              /* x.amax(dim): softmax-like stabilizers */
    "aten::amin",                              /* x.amin(dim) */
    "aten::max.dim",                           /* x.max(dim): values and indices */
    "aten::min.dim",                           /* x.min(dim) */
    "aten::argmax",                            /* greedy decoding */
    "aten::argmin",                            /* x.argmin(dim) */
    "aten::prod.dim_int",                      /* x.prod(dim) */
    "aten::prod",                              /* x.prod() */
    "aten::var.correction",                    /* x.var(dim) */
    "aten::std.correction",                    /* x.std(dim) */
    "aten::var_mean.correction",               /* torch.var_mean: hand-written norms */
    "aten::linalg_vector_norm",                /* x.norm(), F.normalize */
    "aten::logsumexp",                         /* torch.logsumexp: losses, attention */
    "aten::embedding",                         /* nn.Embedding */
    "aten::index_select",                      /* torch.index_select; embedding on 1-d ids */
    "aten::gather",                            /* torch.gather: losses, top-k picks */
    /* end of generic reductions and gathers */
    /* ---- the pointwise engine's ops (forge/templates/pointwise_ops.c serves each) ---- */
    "aten::add.Scalar",                        /* x + c in traced graphs */
    "aten::sub.Tensor",                        /* residual differences, x - mean */
    "aten::sub_.Tensor",                       /* in-place updates */
    "aten::sub.Scalar",                        /* x - c in traced graphs */
    "aten::rsub.Tensor",                       /* torch.rsub */
    "aten::rsub.Scalar",                       /* 1 - x: attention masks (1 - mask) * min */
    "aten::mul.Scalar",                        /* x * c in traced graphs */
    "aten::div.Tensor",                        /* x / y, x / sqrt(d) */
    "aten::div_.Tensor",                       /* in-place scaling */
    "aten::div.Scalar",                        /* x / c in traced graphs */
    "aten::div.out",                           /* torch.div(..., out=) */
    "aten::div.Tensor_mode",                   /* torch.div(rounding_mode=), // */
    "aten::pow.Tensor_Tensor",                 /* x ** y */
    "aten::neg",                               /* -x: rotary rotate_half */
    "aten::neg_",                              /* in-place negation */
    "aten::abs",                               /* torch.abs */
    "aten::reciprocal",                        /* 1 / x */
    "aten::exp",                               /* softmax decomposed, gates */
    "aten::exp_",                              /* in-place exp */
    "aten::exp2",                              /* torch.exp2 */
    "aten::expm1",                             /* torch.expm1 */
    "aten::log",                               /* losses, log-probabilities */
    "aten::log1p",                             /* softplus decomposed */
    "aten::log2",                              /* torch.log2 */
    "aten::sqrt",                              /* norms, attention scales */
    "aten::rsqrt",                             /* HF RMSNorm: x * rsqrt(var + eps) */
    "aten::sin",                               /* rotary / sinusoidal embeddings */
    "aten::cos",                               /* rotary / sinusoidal embeddings */
    "aten::tanh",                              /* tanh gelu decomposed, RNNs */
    "aten::tanh_",                             /* in-place tanh */
    "aten::erf",                               /* exact gelu decomposed */
    "aten::sigmoid",                           /* gates, SE blocks */
    "aten::sigmoid_",                          /* in-place gates */
    "aten::gelu_",                             /* in-place gelu */
    "aten::silu_",                             /* nn.SiLU(inplace=True): EfficientNets */
    "aten::mish",                              /* F.mish: YOLO-style CNNs */
    "aten::hardswish",                         /* F.hardswish: MobileNetV3 */
    "aten::hardswish_",                        /* nn.Hardswish(inplace=True) */
    "aten::hardsigmoid",                       /* F.hardsigmoid: MobileNetV3 SE blocks */
    "aten::leaky_relu",                        /* F.leaky_relu: GAN discriminators, YOLO */
    "aten::leaky_relu_",                       /* nn.LeakyReLU(inplace=True) */
    "aten::elu",                               /* F.elu */
    "aten::softplus",                          /* F.softplus: Mamba's dt */
    "aten::clamp",                             /* x.clamp(min, max) */
    "aten::clamp_",                            /* x.clamp_(min, max) */
    "aten::clamp.Tensor",                      /* clamp with tensor bounds */
    "aten::clamp_max",                         /* x.clamp(max=) */
    "aten::clamp_max_",                        /* x.clamp_(max=) */
    "aten::hardtanh",                          /* F.relu6 / F.hardtanh: MobileNetV2 */
    "aten::hardtanh_",                         /* nn.ReLU6(inplace=True) */
    "aten::minimum",                           /* torch.minimum */
    "aten::maximum",                           /* torch.maximum */
    "aten::where.self",                        /* torch.where: masks, causal attention */
    "aten::masked_fill.Scalar",                /* attention masks: scores.masked_fill(m, -inf) */
    "aten::masked_fill_.Scalar",               /* in-place attention masks */
    "aten::lerp.Scalar",                       /* EMA updates, torch.lerp */
    "aten::lerp.Tensor",                       /* torch.lerp with a weight tensor */
    "aten::addcmul",                           /* torch.addcmul */
    "aten::addcmul_",                          /* optimizers (Adam's second moment) */
    "aten::addcdiv",                           /* torch.addcdiv */
    "aten::addcdiv_",                          /* optimizers (Adam's step) */
    "aten::eq.Tensor",                         /* x == y */
    "aten::eq.Scalar",                         /* x == c: padding masks */
    "aten::ne.Tensor",                         /* x != y */
    "aten::ne.Scalar",                         /* x != c: attention masks from ids */
    "aten::lt.Tensor",                         /* x < y */
    "aten::lt.Scalar",                         /* x < c */
    "aten::le.Tensor",                         /* x <= y */
    "aten::le.Scalar",                         /* x <= c */
    "aten::gt.Tensor",                         /* x > y */
    "aten::gt.Scalar",                         /* x > c */
    "aten::ge.Tensor",                         /* x >= y */
    "aten::ge.Scalar",                         /* x >= c */
    "aten::logical_not",                       /* ~mask on bool, torch.logical_not */
    "aten::logical_and",                       /* combined masks */
    "aten::logical_or",                        /* combined masks */
    "aten::logical_xor",                       /* torch.logical_xor */
    "aten::bitwise_and.Tensor",                /* mask & mask */
    "aten::bitwise_or.Tensor",                 /* mask | mask */
    "aten::bitwise_xor.Tensor",                /* mask ^ mask */
    "aten::bitwise_not",                       /* ~mask */
    "aten::fill_.Scalar",                      /* torch.full, x.fill_(c) */
    "aten::zero_",                             /* x.zero_(), zeroed buffers */
    NULL,
};
