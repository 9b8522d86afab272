/* sampling_rule.c: the sampling in effect, layer over layer (sampling_rule.h). */
#include "config.h"

#include "src/config/sampling_rule.h"

static void apply_layer(const struct sampling *layer, enum sampling_layer which,
                        struct elm_sampler_params *p, int *max_tokens,
                        enum sampling_layer *from)
{
    sampling_apply(layer, p, max_tokens);
    for (int bit = 0; from && bit < SAMPLING_N_FIELDS; bit++)
        if (layer->set & (1u << bit))
            from[bit] = which;
}

void sampling_resolve(const struct sampling_layers *l, int default_max_tokens,
                      struct elm_sampler_params *p, int *max_tokens,
                      enum sampling_layer from[SAMPLING_N_FIELDS])
{
    *p = elm_sampler_default_params();
    *max_tokens = default_max_tokens;
    for (int bit = 0; from && bit < SAMPLING_N_FIELDS; bit++)
        from[bit] = SAMPLING_FROM_DEFAULT;
    if (l->tpl)
        apply_layer(l->tpl, SAMPLING_FROM_TEMPLATE, p, max_tokens, from);
    if (l->model) {
        struct sampling model = sampling_from_model(l->model);
        apply_layer(&model, SAMPLING_FROM_MODEL, p, max_tokens, from);
    }
    if (l->cfg)
        apply_layer(&l->cfg->sampling, SAMPLING_FROM_CONFIG, p, max_tokens, from);
    if (l->own)
        apply_layer(l->own, SAMPLING_FROM_OWN, p, max_tokens, from);
}
