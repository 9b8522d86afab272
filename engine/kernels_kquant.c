/* kernels_kquant.c: Q4_K, Q5_K and Q6_K rows against int8 activations
 * (quant_act.h).  Not written yet: quant.c's kernels run. */
#include "config.h"

#include "engine/quant_act.h"

elm_qrows_fn elm_kquant_rows(enum elm_dtype dtype, const char *set)
{
    (void)dtype, (void)set;
    return NULL;
}
