/* What ops write beyond what their schemas say.
 *
 * torch_ext reads an op's writes from its schema (Tensor(a!)). A few ops write more:
 * native_batch_norm and cudnn_batch_norm update running_mean / running_var in place when
 * training=True, under a schema that marks them read-only. Whatever must know a call's writes
 * (serving, the first-use check, captures, job writing, verification) asks this table too;
 * Python through kf_op_hidden_writes. */
#include <string.h>

#include "kforge.h"

typedef struct hidden_writes {
    const char *op;
    uint32_t args;  /* bit i: argument i (schema order) */
    int when_true;  /* a bool argument that must be True for the writes; -1: always */
} hidden_writes;

static const hidden_writes k_hidden[] = {
    /* (input, weight?, bias?, running_mean?, running_var?, training, momentum, eps) */
    {"aten::native_batch_norm", 1u << 3 | 1u << 4, 5},
    /* (input, weight, bias?, running_mean?, running_var?, training, exponential_average_factor,
     *  epsilon) */
    {"aten::cudnn_batch_norm", 1u << 3 | 1u << 4, 5},
    /* miopen_batch_norm has the same schema and writes, if someone lists it */
    {"aten::miopen_batch_norm", 1u << 3 | 1u << 4, 5},
};

int kf_op_hidden_writes(const char *op, uint32_t *args, int *when_true)
{
    *args = 0;
    *when_true = -1;
    if (!op) return 0;
    for (size_t i = 0; i < sizeof k_hidden / sizeof k_hidden[0]; i++) {
        if (strcmp(op, k_hidden[i].op)) continue;
        *args = k_hidden[i].args;
        *when_true = k_hidden[i].when_true;
        return 1;
    }
    return 0;
}
