/* chat_reply.c: starting a reply: the reply's state reset, the view told,
 * the GENERATE request (the sampling in effect, the template's stop
 * strings, the /format grammar) posted.  Above chat_base.c and
 * chat_format.c, below the commands and the input that start replies. */
#include "config.h"

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/conversation/session_tree.h"

static void post_generate(struct chat *c, struct conv *v)
{
    struct elm_request req = elm_request_default(ELM_REQ_GENERATE);
    req.slot = v->slot;
    int max_tokens;
    chat_effective_sampling(c, &req.sampler, &max_tokens);
    req.max_tokens = max_tokens;
    /* the engine holds back what may begin a stop string, and ends there */
    req.stop_strings = v->tpl->stop;
    req.n_stop_strings = (int)v->tpl->n_stop;
    conversation_request(&v->cv, &req);
    if (c->lookup_off)
        req.flags |= ELM_GEN_NO_LOOKUP;
    req.grammar = chat_format_grammar(c, v);
    c->reply.req = chat_post(c, &req);
    elm_grammar_free(req.grammar); /* post took its own reference */
}

/* The conversation stands after a generation prompt: ask for the reply. */
void chat_start_reply(struct chat *c)
{
    struct conv *v = c->cur;
    c->reply.n_ids = 0;
    sbuf_fini(&c->reply.text);
    sbuf_add(&c->reply.text, "", 0);
    c->reply.got_token = false;
    c->reply.t0 = chat_now();
    c->reply.prefill_progress = 0;
    c->reply.active = true;
    c->reply.conv = v;
    if (c->view.reply_started) {
        /* a retry: the reply is the newest of the versions after the path */
        int n = (int)session_children_after_path(v->s) + 1;
        struct chat_message m = {.role = CHAT_ASSISTANT, .text = "", .ref = (int)v->s->n_msgs,
                                 .version = n, .n_versions = n, .model = c->model.name};
        c->view.reply_started(c->view.user, &m);
    }
    post_generate(c, v);
    chat_changed(c);
}
