/* act_int8.c: the int8 rounding of activations (see act_int8.h). */
#include "config.h"

#include <math.h>
#include <string.h>

#include "engine/kernels/blocks.h"
#include "engine/kernels/act_int8.h"

static size_t up64(size_t n)
{
    return (n + 63) & ~(size_t)63;
}

size_t elm_qact_bytes(int64_t n)
{
    size_t nn = (size_t)n;
    return up64(nn) + up64(nn / ELM_QA_BLOCK * sizeof(float)) + up64(nn / 16 * sizeof(int16_t));
}

void elm_qact_init(struct elm_qact *a, int64_t n, void *buf)
{
    size_t nn = (size_t)n;
    char *p = buf;
    a->n = n;
    a->q = (int8_t *)p;
    p += up64(nn);
    a->d = (float *)(void *)p;
    p += up64(nn / ELM_QA_BLOCK * sizeof(float));
    a->sum16 = (int16_t *)(void *)p;
}

float elm_qact_scale(float amax, float *inv)
{
    *inv = amax > 0.0f ? 127.0f / amax : 0.0f;
    if (isinf(*inv)) /* amax < 127 / FLT_MAX: x * inv would overflow, 0 * inf be NaN */
        *inv = amax = 0.0f;
    float d = amax / 127.0f;
    float h = elm_f16_to_f32(elm_f32_to_f16(d));
    return isinf(h) ? d : h;
}

void elm_quantize_act_ref(const float *x, struct elm_qact *a)
{
    for (int64_t b = 0; b < a->n / ELM_QA_BLOCK; b++) {
        const float *xb = x + b * ELM_QA_BLOCK;
        int8_t *q = a->q + b * ELM_QA_BLOCK;
        float amax = 0.0f;
        for (int i = 0; i < ELM_QA_BLOCK; i++)
            amax = fmaxf(amax, fabsf(xb[i]));
        float id;
        a->d[b] = elm_qact_scale(amax, &id);
        for (int h = 0; h < 2; h++) {
            int s = 0;
            for (int i = 16 * h; i < 16 * h + 16; i++) {
                /* nearbyintf: the current rounding mode, round-half-even by default,
                 * as _mm512_cvtps_epi32 does */
                q[i] = (int8_t)nearbyintf(xb[i] * id);
                s += q[i];
            }
            a->sum16[2 * b + h] = (int16_t)s;
        }
    }
}
