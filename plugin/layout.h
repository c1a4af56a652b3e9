/* Eager's output layout for a signature (plain C, shared with torch_ext). */
#ifndef KF_PLUGIN_LAYOUT_H
#define KF_PLUGIN_LAYOUT_H

#include <stdint.h>

#include "kforge.h"

#define KF_MAX_OUTS 4

/* Eager's outputs for a signature, recorded on its first call; a served call allocates the same. */
typedef struct kf_out_layout {
    int n;
    struct {
        int alias_arg; /* >= 0: the output is this tensor argument (in-place / out=) */
        int dtype, ndim;
        int64_t sizes[KF_MAX_DIMS], strides[KF_MAX_DIMS];
    } o[KF_MAX_OUTS];
} kf_out_layout;

#endif
