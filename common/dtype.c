/* The dtype table (dtype.h). */
#include <string.h>

#include "common/dtype.h"

/* st: the c10::ScalarType code a signature records for a dtype argument (dtype=6); -1: none
 * this table maps */
static const struct {
    const char *name;
    int size, st;
} dtypes[KF_DTYPE_COUNT] = {
    [KF_DTYPE_UNKNOWN] = {"?", 0, -1},  [KF_F32] = {"f32", 4, 6},     [KF_F16] = {"f16", 2, 5},
    [KF_BF16] = {"bf16", 2, 15},        [KF_F64] = {"f64", 8, 7},     [KF_I8] = {"i8", 1, 1},
    [KF_U8] = {"u8", 1, 0},             [KF_I16] = {"i16", 2, 2},     [KF_I32] = {"i32", 4, 3},
    [KF_I64] = {"i64", 8, 4},           [KF_BOOL] = {"bool", 1, 11},  [KF_C64] = {"c64", 8, -1},
    [KF_C128] = {"c128", 16, -1},       [KF_F8E4M3] = {"f8e4m3", 1, -1}, [KF_F8E5M2] = {"f8e5m2", 1, -1},
};

const char *kf_dtype_name(int dtype)
{
    return dtype >= 0 && dtype < KF_DTYPE_COUNT ? dtypes[dtype].name : "?";
}

int kf_dtype_size(int dtype)
{
    return dtype >= 0 && dtype < KF_DTYPE_COUNT ? dtypes[dtype].size : 0;
}

int kf_dtype_from_name(const char *name)
{
    if (!name) return KF_DTYPE_UNKNOWN;
    for (int d = 1; d < KF_DTYPE_COUNT; d++)
        if (!strcmp(name, dtypes[d].name)) return d;
    return KF_DTYPE_UNKNOWN;
}

int kf_dtype_from_scalar_type(long long code)
{
    for (int d = 1; d < KF_DTYPE_COUNT; d++)
        if (code >= 0 && dtypes[d].st == code) return d;
    return KF_DTYPE_UNKNOWN;
}
