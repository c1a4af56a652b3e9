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
    NULL,
};
