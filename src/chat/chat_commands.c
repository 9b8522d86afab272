/* chat_commands.c: what the slash commands do (slash_commands.c parses
 * them).  Commands that would change the conversation under a streaming
 * reply are refused until it ends. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/conversation/code_blocks.h"
#include "src/models/model_find.h"
#include "src/template/roles.h"
#include "src/conversation/session_json.h"
#include "src/store/store.h"
#include "src/base/xalloc.h"

/* "36 of 40 drafted tokens accepted (90%) in 4 passes, 10.00 tokens a pass". */
static const char *draft_stats_text(const struct elm_draft_stats *d, char *buf, size_t size)
{
    snprintf(buf, size, "%d of %d drafted tokens accepted (%.0f%%) in %d passes, %.2f tokens a "
                        "pass%s",
             d->accepted, d->drafted, d->drafted ? 100.0 * d->accepted / d->drafted : 0.0,
             d->passes, d->passes ? (double)(d->accepted + d->passes) / d->passes : 0.0,
             d->turned_off ? "; then it turned itself off (below break-even)" : "");
    return buf;
}

/* What a command cannot do in a front end that lacks the view callback it
 * needs (the inline one has no screen: ui/inline_chat.c), or "". */
static const char *help_limit(const struct chat *c, enum cmd_id id)
{
    switch (id) {
    case CMD_FIND:
        return c->view.find ? "" : " [not here: the terminal's search]";
    case CMD_COPY:
        return c->view.copy ? "" : " [here: only with FILE]";
    case CMD_TREE:
        return c->view.tree_shown ? "" : " [here: printed; /branch N K picks]";
    case CMD_SESSIONS:
        return c->view.session_list_toggled ? "" : " [not here]";
    default:
        return "";
    }
}

static void show_help(struct chat *c)
{
    struct sbuf b = {0};
    sbuf_add(&b, "", 0);
    for (size_t i = 0; i < cmd_table_len; i++) {
        char line[320];
        snprintf(line, sizeof line, "%-18s %s%s\n", cmd_table[i].usage, cmd_table[i].help,
                 help_limit(c, cmd_table[i].id));
        sbuf_add(&b, line, strlen(line));
    }
    static const char shell[] =
        "!COMMAND           a shell command, its output sent with your next message (!!: shown)\n";
    sbuf_add(&b, shell, strlen(shell));
    static const char keys[] =
        "\n"
        "Enter send · Alt-Enter or Ctrl-J new line · Tab complete · Ctrl-R search history\n"
        "Ctrl-C or Esc stop the reply · Enter during a reply queues (Esc takes it back)\n"
        "Ctrl-C clear the line · Ctrl-D (empty line) quit\n"
        "PgUp/PgDn scroll · Ctrl-Home/Ctrl-End (or Home/End on an empty line) top/bottom\n"
        "Alt-S or F2 session list · Ctrl-L redraw · Ctrl-Z suspend · '//' sends a '/'\n"
        "Ctrl-F search (/find) · Alt-Up/Alt-Down select a message (c copy, e edit, r retry, p pin)\n"
        "Ctrl-X Ctrl-E edit the message in $EDITOR\n"
        "Replies render markdown (/set markdown "
        "off: as written); your messages stay plain";
    /* a front end with other keys says them */
    const char *k = c->view.help_keys ? c->view.help_keys : keys;
    sbuf_add(&b, k, strlen(k));
    chat_info_msg(c, false, b.data);
    sbuf_fini(&b);
}

static void show_info(struct chat *c)
{
    char buf[8192];
    size_t n = 0;
    const struct elm_model_info *mi = c->info;
    struct conv *v = c->cur;
#define ADD(...)                                                                                   \
    do {                                                                                           \
        if (n < sizeof buf)                                                                        \
            n += (size_t)snprintf(buf + n, sizeof buf - n, __VA_ARGS__);                           \
    } while (0)
    ADD("model: %s%s\npath: %s\n", c->model_name,
        c->bundled ? " (bundled with elmchat: a tiny guide and dictionary)" : "", c->model_path);
    if (mi && mi->remote)
        ADD("llama-server: %s, vocab %d, %d slot%s; KV snapshots: %s\n", mi->name, mi->n_vocab,
            mi->remote_slots, mi->remote_slots == 1 ? "" : "s",
            mi->remote_snapshots ? "saved on the server (its --slot-save-path)"
                                 : "none (no --slot-save-path: a reopened session re-prefills)");
    else if (mi)
        ADD("layers %d, dim %d, vocab %d, %.1fM parameters, %s\n", mi->n_layers, mi->model_dim,
            mi->n_vocab, (double)mi->n_params / 1e6, elm_dtype_name(mi->dtype));
    else
        ADD("%s\n", c->model_loading ? "loading..." : "not loaded");
    if (c->tokenizer_from && model_is_server(c->model_path))
        ADD("tokenizer: %s (the server's checked against it: the same ids)\n", c->tokenizer_from);
    else if (c->tokenizer_from)
        ADD("tokenizer: elmchat's LLaMA-2 tokenizer.model (the model folder has none): %s\n",
            c->tokenizer_from);
    else
        ADD("tokenizer: the model's own\n");
    if (c->model_loading && c->model_ready)
        ADD("loading %s: %d%%\n", c->load_name, (int)(c->load_progress * 100));
    struct elm_sampler_params p;
    int max_tokens;
    chat_effective_sampling(c, &p, &max_tokens);
    char *spath = session_path_for(v->s->name);
    struct conv_fill f;
    conversation_fill(&v->cv, &f);
    /* why this template: chat_wanted_template's order */
    char why[320];
    if (v->s->template_name)
        snprintf(why, sizeof why, "the session's (-t or /template)");
    else if (c->cfg.template_name)
        snprintf(why, sizeof why, "config.yaml's template");
    else
        template_for_model(c->model_path, why, sizeof why);
    ADD("template: %s (%s), chosen by %s\nsession: %s (%s), %zu open\n", v->tpl->name,
        v->tpl->path ? v->tpl->path : "", why, v->s->name, spath ? spath : "", c->n_convs);
    ADD("context: %d tokens of %d (%d%%), %zu cached; policy %s; %d messages out of context, "
        "%d pinned\n",
        f.n_tokens, f.n_ctx, (int)(f.fraction * 100.0f), v->cv.cache.n,
        context_policy_name(c->policy.policy), f.n_out_of_context, f.n_pinned);
    ADD("last request: %d tokens reused from the cache, %d computed\n", v->n_reused,
        v->n_computed);
    ADD("speed: prefill %.1f t/s, decode %.1f t/s", c->prefill_tps, c->decode_tps);
    if (c->ttft_ms > 0)
        ADD("; first token after %.0f ms", c->ttft_ms);
    if (c->save_error[0])
        ADD("\nthe last save failed: %s", c->save_error);
    char what[160];
    if (c->lookup_off)
        ADD("\nprompt lookup: off (/set lookup on)");
    else if (c->last_lookup.passes > 0)
        ADD("\nprompt lookup, last reply: %s", draft_stats_text(&c->last_lookup, what,
                                                                 sizeof what));
    else
        ADD("\nprompt lookup: on; the last reply repeated nothing to draft from");
    if (c->draft_name[0] && !c->draft_ready)
        ADD("\ndraft model: %s, loading", c->draft_name);
    else if (c->draft_ready && c->last_draft.passes > 0)
        ADD("\ndraft model %s, last reply: %s", c->draft_name,
            draft_stats_text(&c->last_draft, what, sizeof what));
    else if (c->draft_ready)
        ADD("\ndraft model %s: not used yet (or its vocabulary is not the model's)",
            c->draft_name);
    ADD("\n");
    char window[48];
    if (p.repeat_last_n < 0)
        snprintf(window, sizeof window, "the whole sequence");
    else
        snprintf(window, sizeof window, "the last %d tokens", p.repeat_last_n);
    ADD("sampling: temperature %g, top-k %d, top-p %g, min-p %g, repeat-penalty %g over %s, "
        "seed %llu, max-tokens %d",
        (double)p.temperature, p.top_k, (double)p.top_p, (double)p.min_p,
        (double)p.repeat_penalty, window, (unsigned long long)p.seed, max_tokens);
#undef ADD
    free(spath);
    chat_info_msg(c, false, buf);
}

/* The SAMPLING_* bit of a /set parameter (0: not a sampling one). */
static unsigned sampling_bit(enum cmd_param param)
{
    switch (param) {
    case PARAM_TEMPERATURE:
        return SAMPLING_TEMPERATURE;
    case PARAM_TOP_K:
        return SAMPLING_TOP_K;
    case PARAM_TOP_P:
        return SAMPLING_TOP_P;
    case PARAM_MIN_P:
        return SAMPLING_MIN_P;
    case PARAM_REPEAT_PENALTY:
        return SAMPLING_REPEAT_PENALTY;
    case PARAM_REPEAT_LAST_N:
        return SAMPLING_REPEAT_LAST_N;
    case PARAM_SEED:
        return SAMPLING_SEED;
    case PARAM_MAX_TOKENS:
        return SAMPLING_MAX_TOKENS;
    case PARAM_MARKDOWN:
    case PARAM_LOOKUP:
    case PARAM_DRAFT:
        break;
    }
    return 0;
}

/* /set alone: every value in effect and where it comes from. */
static void show_sampling(struct chat *c)
{
    struct elm_sampler_params p;
    int max_tokens;
    enum sampling_origin from[SAMPLING_N_FIELDS];
    chat_sampling_sources(c, &p, &max_tokens, from);
    char val[SAMPLING_N_FIELDS][48];
    snprintf(val[0], sizeof val[0], "%g%s", (double)p.temperature,
             p.temperature <= 0 ? " (greedy)" : "");
    snprintf(val[1], sizeof val[1], "%d%s", p.top_k, p.top_k <= 0 ? " (off)" : "");
    snprintf(val[2], sizeof val[2], "%g%s", (double)p.top_p, p.top_p >= 1 ? " (off)" : "");
    snprintf(val[3], sizeof val[3], "%g%s", (double)p.min_p, p.min_p <= 0 ? " (off)" : "");
    snprintf(val[4], sizeof val[4], "%g%s", (double)p.repeat_penalty,
             p.repeat_penalty == 1 ? " (off)" : "");
    snprintf(val[5], sizeof val[5], "%d%s", p.repeat_last_n,
             p.repeat_last_n < 0 ? " (the whole sequence)" : p.repeat_last_n == 0 ? " (off)" : "");
    snprintf(val[6], sizeof val[6], "%llu", (unsigned long long)p.seed);
    snprintf(val[7], sizeof val[7], "%d", max_tokens);
    /* names in the SAMPLING_* bits' order, as /set spells them */
    static const char *const names[SAMPLING_N_FIELDS] = {
        "temperature", "top-k", "top-p", "min-p", "repeat-penalty", "repeat-last-n", "seed",
        "max-tokens"};
    struct sbuf b = {0};
    char line[640];
    snprintf(line, sizeof line,
             "sampling (default < template < model < config.yaml < session < command line < "
             "/set):");
    sbuf_add(&b, line, strlen(line));
    for (int i = 0; i < SAMPLING_N_FIELDS; i++) {
        char origin[160];
        switch (from[i]) {
        case ORIGIN_DEFAULT:
            snprintf(origin, sizeof origin, "default");
            break;
        case ORIGIN_TEMPLATE:
            snprintf(origin, sizeof origin, "template %s", c->cur->tpl->name);
            break;
        case ORIGIN_MODEL:
            snprintf(origin, sizeof origin, "model %s (its own defaults)", c->model_name);
            break;
        case ORIGIN_CONFIG:
            snprintf(origin, sizeof origin, "config.yaml");
            break;
        case ORIGIN_SESSION:
            snprintf(origin, sizeof origin, "session %s (saved with it)", c->cur->s->name);
            break;
        case ORIGIN_COMMAND_LINE:
            snprintf(origin, sizeof origin, "command line");
            break;
        case ORIGIN_SET:
            snprintf(origin, sizeof origin, "/set");
            break;
        }
        snprintf(line, sizeof line, "\n  %-15s %-22s %s", names[i], val[i], origin);
        sbuf_add(&b, line, strlen(line));
    }
    snprintf(line, sizeof line, "\nmarkdown %s, lookup %s, draft %s · /set PARAM VALUE changes one "
                                "for this session",
             c->markdown_off ? "off" : "on", c->lookup_off ? "off" : "on",
             c->draft_name[0] ? c->draft_name : "off");
    sbuf_add(&b, line, strlen(line));
    chat_info_msg(c, false, b.data);
    sbuf_fini(&b);
}

static bool ready_refuse(struct chat *c)
{
    if (chat_busy_refuse(c))
        return true;
    if (!c->model_ready) {
        chat_notice(c, true, c->model_loading ? "wait for the model to load" : "no model loaded");
        return true;
    }
    return false;
}

/* The system prompt of v (rendered again and prefilled); false (and a
 * notice) when it does not fit. */
static bool set_system(struct chat *c, struct conv *v, const char *text)
{
    char err[1024];
    int rc = conversation_set_system(&v->cv, text, err, sizeof err);
    if (rc && rc != CONV_FULL) {
        chat_notice(c, true, "%s", err);
        return false;
    }
    v->dirty = true;
    chat_show_conv(c);
    chat_post_prefill(c, v);
    if (rc == CONV_FULL) {
        chat_notice(c, true, "%s", err);
        return false;
    }
    return true;
}

/* /role without a name: each role and what it is for. */
static void list_roles(struct chat *c)
{
    char **names = role_list();
    struct sbuf b = {0};
    const char *cur = c->cur ? c->cur->s->role : NULL;
    sbuf_add(&b, "roles (/role NAME):", 19);
    for (size_t i = 0; names[i]; i++) {
        char err[512], line[1200];
        struct role_preset *r = role_load(names[i], err, sizeof err);
        snprintf(line, sizeof line, "\n%s %-14s %s", cur && strcmp(cur, names[i]) == 0 ? "*" : " ",
                 names[i], r ? (r->description ? r->description : "") : err);
        sbuf_add(&b, line, strlen(line));
        role_free(r);
    }
    if (!names[0])
        sbuf_add(&b, " none found", 11);
    chat_info_msg(c, false, b.data);
    sbuf_fini(&b);
    strv_free(names);
}


/* /copy [N|reply|#M] [FILE]: code block N of the last reply (default:
 * its last), the whole reply, or user message #M; to FILE, else the
 * clipboard through the view (OSC 52). */
static void copy_command(struct chat *c, struct conv *v, const char *arg)
{
    char what_arg[64] = "", file[4096] = "";
    if (arg)
        sscanf(arg, "%63s %4095[^\n]", what_arg, file);
    const struct session *s = v->s;
    char *owned = NULL;
    const char *text = NULL;
    char what[160];
    if (what_arg[0] == '#') {
        size_t i = chat_find_exchange(c, s, what_arg + 1, "copy");
        if (i == SIZE_MAX)
            return;
        text = s->msgs[i].content;
        snprintf(what, sizeof what, "your message %s", what_arg);
    } else {
        size_t r = SIZE_MAX;
        for (size_t i = s->n_msgs; i-- > 0;)
            if (s->msgs[i].role == ROLE_ASSISTANT) {
                r = i;
                break;
            }
        if (r == SIZE_MAX) {
            chat_notice(c, true, "no reply to copy yet");
            return;
        }
        const char *reply = s->msgs[r].content ? s->msgs[r].content : "";
        if (strcmp(what_arg, "reply") == 0) {
            text = reply;
            snprintf(what, sizeof what, "the last reply");
        } else {
            char *end;
            long n = what_arg[0] ? strtol(what_arg, &end, 10) : 0;
            if (what_arg[0] && (*end || n < 1)) {
                chat_notice(c, true, "/copy [N|reply|#M] [FILE]: N is a code block (1 = the first)");
                return;
            }
            struct code_block *blocks;
            size_t nb = code_blocks_find(reply, strlen(reply), &blocks);
            if (nb == 0 || (size_t)n > nb) {
                if (nb)
                    chat_notice(c, true, "the last reply has code blocks 1 to %zu", nb);
                else
                    chat_notice(c, true, "the last reply has no code block (/copy reply copies "
                                         "all of it)");
                code_blocks_free(blocks, nb);
                return;
            }
            size_t k = n ? (size_t)n : nb;
            owned = x_strdup(blocks[k - 1].text);
            text = owned;
            snprintf(what, sizeof what, "code block %zu%s%s", k, blocks[k - 1].lang[0] ? " " : "",
                     blocks[k - 1].lang);
            code_blocks_free(blocks, nb);
        }
    }
    size_t len = text ? strlen(text) : 0;
    size_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    if (len && text[len - 1] != '\n')
        lines++;
    char err[1024];
    if (file[0]) {
        if (store_write_atomic(file, text ? text : "", len, err, sizeof err) != 0)
            chat_notice(c, true, "%s", err);
        else
            chat_notice(c, false, "wrote %s to %s (%zu line%s, %zu bytes)", what, file, lines,
                        lines == 1 ? "" : "s", len);
    } else if (c->view.copy && c->view.copy(c->view.user, text ? text : "", len, what)) {
        chat_notice(c, false, "copied %s (%zu line%s, %zu bytes) to the clipboard (OSC 52; if "
                              "the terminal ignores it: /copy %s FILE)",
                    what, lines, lines == 1 ? "" : "s", len, what_arg[0] ? what_arg : "N");
    } else {
        chat_notice(c, true, "this terminal cannot take the clipboard (OSC 52): /copy %s FILE "
                             "writes it to a file",
                    what_arg[0] ? what_arg : "N");
    }
    free(owned);
}

/* /pin [N], /unpin [N]. */
static void pin_command(struct chat *c, struct conv *v, const char *arg, bool pin)
{
    struct session *s = v->s;
    size_t idx = chat_find_exchange(c, s, arg, pin ? "pin" : "unpin");
    if (idx == SIZE_MAX)
        return;
    size_t k = chat_exchange_of(s, idx);
    if (pin && s->msgs[idx].out_of_context) {
        chat_notice(c, true, "exchange %zu is already out of context (/undo or edit to bring it back)",
                    k);
        return;
    }
    conversation_pin(&v->cv, idx, pin);
    v->dirty = true;
    chat_show_conv(c);
    chat_save_conv(c, v, true);
    chat_notice(c, false, pin ? "exchange %zu pinned: it stays in context"
                              : "exchange %zu unpinned",
                k);
}

/* /edit [N]: the message goes to the input line; chat_submit sends the
 * edited text in its place. */
static void edit_command(struct chat *c, struct conv *v, const char *arg)
{
    size_t idx = chat_find_exchange(c, v->s, arg, "edit");
    if (idx == SIZE_MAX)
        return;
    c->edit_conv = v;
    c->edit_msg = idx;
    c->edit_exchange = (int)chat_exchange_of(v->s, idx);
    chat_put_input(c, v->s->msgs[idx].content);
    chat_notice(c, false,
                "editing message #%d: Enter sends it as a new version (the old one stays: "
                "/branch, /tree); "
                "an empty line cancels",
                c->edit_exchange);
}

void chat_run_command(struct chat *c, struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
    /* another conversation ends an /edit (a path cut or replaced ends it
     * too: chat_path_replaced) */
    if (cmd->id == CMD_NEW || cmd->id == CMD_SWITCH || cmd->id == CMD_LOAD)
        c->edit_conv = NULL;
    switch (cmd->id) {
    case CMD_HELP:
        show_help(c);
        break;
    case CMD_QUIT:
        c->quit = true;
        break;
    case CMD_INFO:
        show_info(c);
        break;
    case CMD_SESSIONS:
        if (c->view.session_list_toggled)
            c->view.session_list_toggled(c->view.user);
        break;
    case CMD_NEW: {
        if (chat_busy_refuse(c))
            break;
        if (cmd->arg && chat_conv_find(c, cmd->arg)) {
            chat_notice(c, true, "'%s' is already open: /switch %s", cmd->arg, cmd->arg);
            break;
        }
        if (cmd->arg && chat_session_exists(cmd->arg)) {
            chat_notice(c, true, "a saved session '%s' exists: /switch %s opens it", cmd->arg,
                        cmd->arg);
            break;
        }
        chat_save_conv(c, v, true);
        char *name = cmd->arg ? x_strdup(cmd->arg) : chat_auto_session_name();
        struct session *s = session_new(name);
        free(name);
        if (c->opt.system)
            s->system = x_strdup(c->opt.system);
        chat_apply_cli_sampling(c, s);
        struct conv *nv = chat_conv_open(c, s, err, sizeof err);
        if (!nv) {
            chat_notice(c, true, "%s", err);
            break;
        }
        nv->sampling_by_cli = chat_cli_sampling(c, NULL);
        chat_switch_to(c, nv);
        chat_notice(c, false, "new session '%s'", nv->s->name);
        break;
    }
    case CMD_SWITCH:
    case CMD_LOAD: {
        if (chat_busy_refuse(c))
            break;
        struct conv *nv = chat_open_session(c, cmd->arg, false, err, sizeof err);
        if (!nv) {
            chat_notice(c, true, "%s", err);
            break;
        }
        chat_save_conv(c, v, true);
        chat_switch_to(c, nv);
        chat_notice(c, false, "session '%s': %zu messages", nv->s->name, nv->s->n_msgs);
        break;
    }
    case CMD_SAVE: {
        /* /save NAME --force replaces a saved NAME; without it, it is refused */
        char *name = cmd->arg ? x_strdup(cmd->arg) : NULL;
        size_t nl = name ? strlen(name) : 0;
        bool force = nl >= 7 && strcmp(name + nl - 7, "--force") == 0 &&
                     (nl == 7 || name[nl - 8] == ' ');
        if (force) {
            nl -= 7;
            while (nl > 0 && name[nl - 1] == ' ')
                nl--;
            name[nl] = '\0';
        }
        if (name && *name && !chat_conv_take_name(c, v, name, force, err, sizeof err)) {
            if (strstr(err, "exists already"))
                chat_notice(c, true, "not saved: %s (/save %s --force replaces it)", err, name);
            else
                chat_notice(c, true, "not saved: %s", err);
            free(name);
            break;
        }
        free(name);
        v->dirty = true;
        chat_save_conv(c, v, false);
        chat_session_list_changed(c);
        break;
    }
    case CMD_EXPORT: {
        /* FILE.json: the whole tree; anything else: the path shown, as Markdown */
        size_t al = strlen(cmd->arg);
        bool json = al > 5 && strcmp(cmd->arg + al - 5, ".json") == 0;
        char *text = json ? session_to_json(v->s) : session_to_markdown(v->s);
        int rc = store_write_atomic(cmd->arg, text, strlen(text), err, sizeof err);
        free(text);
        if (rc != 0)
            chat_notice(c, true, "%s", err);
        else if (json)
            chat_notice(c, false, "exported the whole tree (%zu messages) as JSON to %s",
                        v->s->n_msgs + v->s->n_alts, cmd->arg);
        else
            chat_notice(c, false, "exported to %s", cmd->arg);
        break;
    }
    case CMD_MODEL: {
        char path[4096];
        if (!chat_resolve_model(c, cmd->arg, path, sizeof path, err, sizeof err)) {
            if (!chat_pull_offer(c, cmd->arg)) /* not downloaded: ask, then pull */
                chat_notice(c, true, "%s", err);
            break;
        }
        if (c->model_ready && !c->model_loading && strcmp(path, c->model_path) == 0) {
            chat_notice(c, false, "%s is the current model", c->model_name);
            break;
        }
        /* the current model keeps answering until the new one is ready */
        if (!chat_begin_model_load(c, cmd->arg, path, err, sizeof err)) {
            chat_notice(c, true, "%s", err);
            break;
        }
        chat_changed(c); /* the status bar shows the progress */
        break;
    }
    case CMD_TEMPLATE: {
        if (chat_busy_refuse(c))
            break;
        struct template *t = template_load(cmd->arg, err, sizeof err);
        if (!t) {
            chat_notice(c, true, "%s", err);
            break;
        }
        conversation_set_template(&v->cv, t, c->tok);
        int rc = conversation_render(&v->cv, err, sizeof err);
        if (rc && rc != CONV_FULL) {
            chat_notice(c, true, "%s", err);
            conversation_set_template(&v->cv, v->tpl, c->tok);
            conversation_render(&v->cv, err, sizeof err);
            template_free(t);
            break;
        }
        template_free(v->tpl);
        v->tpl = t;
        free(v->s->template_name);
        v->s->template_name = x_strdup(t->name);
        v->dirty = true;
        chat_show_conv(c);
        chat_post_prefill(c, v);
        chat_notice(c, false, "template '%s' (%zu tokens rendered again)", t->name,
                    v->cv.tokens.n);
        break;
    }
    case CMD_SYSTEM:
        if (!chat_busy_refuse(c) && set_system(c, v, cmd->arg)) {
            free(v->s->role); /* a prompt of one's own: no role any more */
            v->s->role = NULL;
            chat_notice(c, false, "system prompt set");
        }
        break;
    case CMD_ROLE:
        if (!cmd->arg || !*cmd->arg) {
            list_roles(c);
            break;
        }
        if (chat_busy_refuse(c))
            break;
        struct role_preset *r = role_load(cmd->arg, err, sizeof err);
        if (!r) {
            chat_notice(c, true, "%s", err);
            break;
        }
        if (set_system(c, v, r->system)) {
            free(v->s->role);
            v->s->role = x_strdup(r->name);
            chat_notice(c, false, "role '%s': its system prompt is set", r->name);
        }
        role_free(r);
        break;
    case CMD_SET: {
        if (cmd->param == PARAM_MARKDOWN) {
            c->markdown_off = cmd->ivalue == 0;
            if (c->view.markdown_changed)
                c->view.markdown_changed(c->view.user, !c->markdown_off);
            chat_notice(c, false, "markdown %s", c->markdown_off ? "off: replies show as written"
                                                                 : "on");
            break;
        }
        if (cmd->param == PARAM_DRAFT) {
            if (chat_busy_refuse(c))
                break;
            if (!chat_set_draft(c, cmd->arg, err, sizeof err))
                chat_notice(c, true, "%s", err);
            else if (strcmp(cmd->arg, "off") == 0)
                chat_notice(c, false, "no draft model");
            else
                chat_notice(c, false, "loading the draft %s...", cmd->arg);
            break;
        }
        if (cmd->param == PARAM_LOOKUP) {
            c->lookup_off = cmd->ivalue == 0;
            chat_notice(c, false, "prompt lookup %s", c->lookup_off ? "off" : "on (drafts of "
                        "repeated text, verified in one pass; it turns itself off where it "
                        "does not pay)");
            break;
        }
        if (!cmd->param) {
            show_sampling(c);
            break;
        }
        struct sampling *sp = &v->s->sampling;
        switch (cmd->param) {
        case PARAM_TEMPERATURE:
            sp->set |= SAMPLING_TEMPERATURE, sp->p.temperature = (float)cmd->value;
            break;
        case PARAM_TOP_K:
            sp->set |= SAMPLING_TOP_K, sp->p.top_k = (int)cmd->ivalue;
            break;
        case PARAM_TOP_P:
            sp->set |= SAMPLING_TOP_P, sp->p.top_p = (float)cmd->value;
            break;
        case PARAM_MIN_P:
            sp->set |= SAMPLING_MIN_P, sp->p.min_p = (float)cmd->value;
            break;
        case PARAM_REPEAT_PENALTY:
            sp->set |= SAMPLING_REPEAT_PENALTY, sp->p.repeat_penalty = (float)cmd->value;
            break;
        case PARAM_SEED:
            sp->set |= SAMPLING_SEED, sp->p.seed = (uint64_t)cmd->ivalue;
            break;
        case PARAM_MAX_TOKENS:
            sp->set |= SAMPLING_MAX_TOKENS, sp->max_tokens = (int)cmd->ivalue;
            break;
        case PARAM_REPEAT_LAST_N:
            sp->set |= SAMPLING_REPEAT_LAST_N, sp->p.repeat_last_n = (int)cmd->ivalue;
            break;
        case PARAM_MARKDOWN:
        case PARAM_LOOKUP:
        case PARAM_DRAFT:
            break;
        }
        v->sampling_by_set |= sampling_bit(cmd->param); /* for /set alone: who set what */
        v->dirty = true;
        chat_notice(c, false, "%s = %g", cmd_param_names[cmd->param - 1], cmd->value);
        break;
    }
    case CMD_RETRY: {
        if (ready_refuse(c))
            break;
        struct conv_plan plan;
        int rc = conversation_retry(&v->cv, chat_reply_reserve(c), &plan, err, sizeof err);
        if (rc) {
            chat_notice(c, true, "%s", err);
            break;
        }
        v->dirty = true;
        chat_show_conv(c);
        chat_start_reply(c);
        break;
    }
    case CMD_UNDO: {
        if (chat_busy_refuse(c))
            break;
        if (conversation_restorable(&v->cv) != CONV_UNDONE_NONE) {
            chat_undo_restore(c, v); /* right after /clear or /remove: put it back */
            break;
        }
        char *text = NULL;
        int rc = conversation_undo(&v->cv, &text, err, sizeof err);
        if (rc) {
            chat_notice(c, true, "%s", err);
            break;
        }
        chat_path_replaced(c, v);
        chat_put_input(c, text); /* give the message back for editing */
        free(text);
        chat_save_conv(c, v, true);
        chat_notice(c, false, "removed the last exchange (its message is back in the input; the "
                              "exchange stays as another branch: /tree)");
        break;
    }
    case CMD_REMOVE: {
        if (chat_busy_refuse(c))
            break;
        size_t i = chat_find_exchange(c, v->s, cmd->arg, "remove");
        if (i == SIZE_MAX)
            break;
        size_t x = chat_exchange_of(v->s, i);
        int rc = conversation_remove_exchange(&v->cv, i, err, sizeof err);
        if (rc && rc != CONV_FULL) {
            chat_notice(c, true, "%s", err);
            break;
        }
        chat_path_replaced(c, v);
        chat_save_conv(c, v, true);
        chat_notice(c, false, "removed exchange %zu: /undo puts it back (it stays as another "
                              "branch: /tree)",
                    x);
        break;
    }
    case CMD_CLEAR:
        if (chat_busy_refuse(c))
            break;
        if (v->s->n_msgs == 0) {
            chat_notice(c, false, "the conversation is empty already");
            break;
        }
        conversation_clear(&v->cv);
        chat_path_replaced(c, v);
        chat_save_conv(c, v, true);
        chat_notice(c, false, "conversation cleared: /undo brings it back (it stays as another "
                              "branch: /tree)");
        break;
    case CMD_PIN:
    case CMD_UNPIN:
        if (chat_busy_refuse(c))
            break;
        pin_command(c, v, cmd->arg, cmd->id == CMD_PIN);
        break;
    case CMD_EDIT:
        if (chat_busy_refuse(c))
            break;
        edit_command(c, v, cmd->arg);
        break;
    case CMD_COPY:
        copy_command(c, v, cmd->arg);
        break;
    case CMD_FORK:
        chat_fork_command(c, v, cmd->arg);
        break;
    case CMD_BRANCH:
        chat_branch_command(c, v, cmd->arg);
        break;
    case CMD_TREE:
        chat_tree_command(c);
        break;
    case CMD_READ:
        chat_read_command(c, v, cmd->arg);
        break;
    case CMD_RENAME: {
        char old[256];
        snprintf(old, sizeof old, "%s", v->s->name);
        if (chat_rename_session(c, v, cmd->arg, err, sizeof err)) {
            chat_changed(c);
            chat_notice(c, false, "renamed '%s' to '%s'", old, v->s->name);
        } else {
            chat_notice(c, true, "%s", err);
        }
        break;
    }
    case CMD_DELETE:
        if (chat_delete_session(c, cmd->arg, err, sizeof err))
            chat_notice(c, false, "deleted session '%s' (its file and cache snapshot)", cmd->arg);
        else
            chat_notice(c, true, "%s", err);
        break;
    case CMD_FIND: {
        const char *q = cmd->arg && *cmd->arg ? cmd->arg : NULL;
        size_t n = c->view.find ? c->view.find(c->view.user, q) : 0;
        if (!q)
            chat_notice(c, false, "search off");
        else if (n)
            chat_notice(c, false, "find '%s': %zu matching line%s · Ctrl-F older · Ctrl-B newer · "
                                  "Esc leaves",
                        q, n, n == 1 ? "" : "s");
        else
            chat_notice(c, true, "find '%s': not in this conversation", q);
        break;
    }
    }
}

