/* sampling_rule.h: the one rule for the sampling in effect, each layer over
 * the ones below: the engine's defaults < the template < the model's own
 * (generation_config.json, a GGUF's general.sampling keys) < config.yaml <
 * the caller's own (a session's values, the command line's, /set).  The
 * chat (src/chat/chat_base.c), `elmchat run` and `bench --spec` all ask
 * here. */
#ifndef ELMCHAT_SRC_CONFIG_SAMPLING_RULE_H
#define ELMCHAT_SRC_CONFIG_SAMPLING_RULE_H

#include "engine/elm.h"
#include "src/config/config_file.h"
#include "src/template/template.h"

#define SAMPLING_N_FIELDS 8 /* the sampling bits of struct sampling (template.h) */

/* Where a value comes from: the layer that set it last. */
enum sampling_layer {
    SAMPLING_FROM_DEFAULT,
    SAMPLING_FROM_TEMPLATE,
    SAMPLING_FROM_MODEL,
    SAMPLING_FROM_CONFIG,
    SAMPLING_FROM_OWN,
};

/* The layers; any may be NULL (none). */
struct sampling_layers {
    const struct sampling *tpl;
    const struct elm_model_sampling *model;
    const struct config *cfg;
    const struct sampling *own;
};

/* The sampling in effect (*max_tokens from default_max_tokens up); from
 * (NULL: not wanted) gets each field's layer, by the bit number of its
 * sampling bit (template.h). */
void sampling_resolve(const struct sampling_layers *l, int default_max_tokens,
                      struct elm_sampler_params *p, int *max_tokens,
                      enum sampling_layer from[SAMPLING_N_FIELDS]);

#endif
