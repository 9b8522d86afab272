/* sampler.c: the sampler chain. */
#include "config.h"

#include "engine/elm.h"

struct elm_sampler_params elm_sampler_default_params(void)
{
    struct elm_sampler_params p = {
        .temperature = 0.0f,
        .top_k = 0,
        .top_p = 1.0f,
        .min_p = 0.0f,
        .repeat_penalty = 1.0f,
        .repeat_last_n = -1,
        .seed = 0,
    };
    return p;
}
