/* vocab_match.c: elm_model_can_draft (elm.h): do two models share a
 * vocabulary, so that one can propose tokens for the other? */
#include "config.h"

#include <string.h>

#include "engine/base/error.h"
#include "engine/elm.h"
#include "engine/elm_tokenizer.h"

bool elm_model_can_draft(const elm_model *target, const elm_model *draft, char *err,
                         size_t err_size)
{
    const struct elm_model_info *a = elm_model_get_info(target), *b = elm_model_get_info(draft);
    if (a->n_vocab != b->n_vocab) {
        elm_set_error(err, err_size, ELM_E_MISMATCH,
                      "%s cannot draft for %s: a vocabulary of %d tokens, not %d", b->name,
                      a->name, b->n_vocab, a->n_vocab);
        return false;
    }
    const elm_tokenizer *ta = elm_model_tokenizer(target), *tb = elm_model_tokenizer(draft);
    for (int32_t id = 0; ta && tb && id < a->n_vocab; id++) {
        const char *pa = elm_tokenizer_piece(ta, id), *pb = elm_tokenizer_piece(tb, id);
        if (!pa || !pb || strcmp(pa, pb) != 0) {
            elm_set_error(err, err_size, ELM_E_MISMATCH,
                          "%s cannot draft for %s: token %d is '%s' in one and '%s' in the "
                          "other (another tokenizer)",
                          b->name, a->name, (int)id, pb ? pb : "", pa ? pa : "");
            return false;
        }
    }
    return true;
}
