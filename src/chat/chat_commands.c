/* chat_commands.c: the action table (cmd_table: one row per slash command),
 * the dispatcher that applies a row's flags (chat_run_command), the
 * handlers and the typed entry points (chat_controller.h) that the UI's
 * keys call.  slash_commands.c parses a line into a struct cmd.  Commands
 * that would change the conversation under a streaming reply are refused
 * until it ends (CMD_REFUSED_BUSY). */
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
    ADD("model: %s%s\npath: %s\n", c->model.name,
        c->model.bundled ? " (bundled with elmchat: a tiny guide and dictionary)" : "", c->model.path);
    if (mi && mi->remote)
        ADD("llama-server: %s, vocab %d, %d slot%s; KV snapshots: %s\n", mi->name, mi->n_vocab,
            mi->remote_slots, mi->remote_slots == 1 ? "" : "s",
            mi->remote_snapshots ? "saved on the server (its --slot-save-path)"
                                 : "none (no --slot-save-path: a reopened session re-prefills)");
    else if (mi)
        ADD("layers %d, dim %d, vocab %d, %.1fM parameters, %s\n", mi->n_layers, mi->model_dim,
            mi->n_vocab, (double)mi->n_params / 1e6, elm_dtype_name(mi->dtype));
    else
        ADD("%s\n", c->load.active ? "loading..." : "not loaded");
    if (c->model.tokenizer_from && model_is_server(c->model.path))
        ADD("tokenizer: %s (the server's checked against it: the same ids)\n", c->model.tokenizer_from);
    else if (c->model.tokenizer_from)
        ADD("tokenizer: elmchat's LLaMA-2 tokenizer.model (the model folder has none): %s\n",
            c->model.tokenizer_from);
    else
        ADD("tokenizer: the model's own\n");
    if (c->load.active && c->model_ready)
        ADD("loading %s: %d%%\n", c->load.next.name, (int)(c->load.progress * 100));
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
        template_for_model_named(c->model.path, c->info ? c->info->name : NULL, why, sizeof why);
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

/* The sampling bit (template.h) of a /set parameter (0: not a sampling one). */
static unsigned sampling_bit(enum cmd_param param)
{
    switch (param) {
    case PARAM_TEMPERATURE:
        return ELM_SAMPLING_TEMPERATURE;
    case PARAM_TOP_K:
        return ELM_SAMPLING_TOP_K;
    case PARAM_TOP_P:
        return ELM_SAMPLING_TOP_P;
    case PARAM_MIN_P:
        return ELM_SAMPLING_MIN_P;
    case PARAM_REPEAT_PENALTY:
        return ELM_SAMPLING_REPEAT_PENALTY;
    case PARAM_REPEAT_LAST_N:
        return ELM_SAMPLING_REPEAT_LAST_N;
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
    /* names in the sampling bits' order, as /set spells them */
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
            snprintf(origin, sizeof origin, "model %s (its own defaults)", c->model.name);
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
static void pin_command(struct chat *c, struct conv *v, int n, bool pin)
{
    struct session *s = v->s;
    size_t idx = chat_exchange_index(c, s, n, pin ? "pin" : "unpin");
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

/* ---------------------------------------------------- the commands' handlers */

/* Each runs one row of the table below once the dispatcher let it
 * (chat_run_command): a parsed command's typed arguments (struct cmd). */

static void run_help(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    show_help(c);
}

static void run_quit(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    c->quit = true;
}

static void run_info(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    show_info(c);
}

static void run_sessions(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    if (c->view.session_list_toggled)
        c->view.session_list_toggled(c->view.user);
}

static void run_new(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    if (cmd->arg && chat_conv_find(c, cmd->arg)) {
        chat_notice(c, true, "'%s' is already open: /switch %s", cmd->arg, cmd->arg);
        return;
    }
    if (cmd->arg && chat_session_exists(cmd->arg)) {
        chat_notice(c, true, "a saved session '%s' exists: /switch %s opens it", cmd->arg,
                    cmd->arg);
        return;
    }
    chat_save_conv(c, c->cur, true);
    char *name = cmd->arg ? x_strdup(cmd->arg) : chat_auto_session_name();
    struct session *s = session_new(name);
    free(name);
    if (c->opt.system)
        s->system = x_strdup(c->opt.system);
    chat_apply_cli_sampling(c, s);
    struct conv *nv = chat_conv_open(c, s, err, sizeof err);
    if (!nv) {
        chat_notice(c, true, "%s", err);
        return;
    }
    nv->sampling_by_cli = chat_cli_sampling(c, NULL);
    chat_switch_to(c, nv);
    chat_notice(c, false, "new session '%s'", nv->s->name);
}

/* /switch NAME, /load NAME. */
static void run_switch(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    struct conv *nv = chat_open_session(c, cmd->arg, false, err, sizeof err);
    if (!nv) {
        chat_notice(c, true, "%s", err);
        return;
    }
    chat_save_conv(c, c->cur, true);
    chat_switch_to(c, nv);
    chat_notice(c, false, "session '%s': %zu messages", nv->s->name, nv->s->n_msgs);
}

/* /save [NAME] [--force]: without --force a saved NAME is not replaced. */
static void run_save(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
    const char *name = cmd->arg;
    if (name && !chat_conv_take_name(c, v, name, cmd->force, err, sizeof err)) {
        if (strstr(err, "exists already"))
            chat_notice(c, true, "not saved: %s (/save %s --force replaces it)", err, name);
        else
            chat_notice(c, true, "not saved: %s", err);
        return;
    }
    v->dirty = true;
    chat_save_conv(c, v, false);
    chat_session_list_changed(c);
}

/* /export FILE.json: the whole tree; anything else: the path shown, as
 * Markdown. */
static void run_export(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
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
}

static void run_model(struct chat *c, const struct cmd *cmd)
{
    char err[1024], path[4096];
    if (!chat_resolve_model(c, cmd->arg, path, sizeof path, err, sizeof err)) {
        if (!chat_pull_offer(c, cmd->arg)) /* not downloaded: ask, then pull */
            chat_notice(c, true, "%s", err);
        return;
    }
    if (c->model_ready && !c->load.active && strcmp(path, c->model.path) == 0) {
        chat_notice(c, false, "%s is the current model", c->model.name);
        return;
    }
    /* the current model keeps answering until the new one is ready */
    if (!chat_begin_model_load(c, cmd->arg, path, err, sizeof err)) {
        chat_notice(c, true, "%s", err);
        return;
    }
    chat_changed(c); /* the status bar shows the progress */
}

static void run_template(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
    struct template *t = template_load(cmd->arg, err, sizeof err);
    if (!t) {
        chat_notice(c, true, "%s", err);
        return;
    }
    conversation_set_template(&v->cv, t, c->model.tok);
    int rc = conversation_render(&v->cv, err, sizeof err);
    if (rc && rc != CONV_FULL) {
        chat_notice(c, true, "%s", err);
        conversation_set_template(&v->cv, v->tpl, c->model.tok);
        conversation_render(&v->cv, err, sizeof err);
        template_free(t);
        return;
    }
    template_free(v->tpl);
    v->tpl = t;
    free(v->s->template_name);
    v->s->template_name = x_strdup(t->name);
    v->dirty = true;
    chat_show_conv(c);
    chat_post_prefill(c, v);
    chat_notice(c, false, "template '%s' (%zu tokens rendered again)", t->name, v->cv.tokens.n);
}

static void run_system(struct chat *c, const struct cmd *cmd)
{
    struct conv *v = c->cur;
    if (set_system(c, v, cmd->arg)) {
        free(v->s->role); /* a prompt of one's own: no role any more */
        v->s->role = NULL;
        chat_notice(c, false, "system prompt set");
    }
}

/* /role alone lists them (while a reply streams too); /role NAME sets its
 * system prompt. */
static void run_role(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
    if (!cmd->arg || !*cmd->arg) {
        list_roles(c);
        return;
    }
    if (chat_busy_refuse(c))
        return;
    struct role_preset *r = role_load(cmd->arg, err, sizeof err);
    if (!r) {
        chat_notice(c, true, "%s", err);
        return;
    }
    if (set_system(c, v, r->system)) {
        free(v->s->role);
        v->s->role = x_strdup(r->name);
        chat_notice(c, false, "role '%s': its system prompt is set", r->name);
    }
    role_free(r);
}

/* /set PARAM VALUE of a sampling parameter: the session's own from now on. */
static void set_sampling(struct chat *c, const struct cmd *cmd)
{
    struct conv *v = c->cur;
    struct sampling *sp = &v->s->sampling;
    switch (cmd->param) {
    case PARAM_TEMPERATURE:
        sp->p.temperature = (float)cmd->value;
        break;
    case PARAM_TOP_K:
        sp->p.top_k = (int)cmd->ivalue;
        break;
    case PARAM_TOP_P:
        sp->p.top_p = (float)cmd->value;
        break;
    case PARAM_MIN_P:
        sp->p.min_p = (float)cmd->value;
        break;
    case PARAM_REPEAT_PENALTY:
        sp->p.repeat_penalty = (float)cmd->value;
        break;
    case PARAM_SEED:
        sp->p.seed = (uint64_t)cmd->ivalue;
        break;
    case PARAM_MAX_TOKENS:
        sp->max_tokens = (int)cmd->ivalue;
        break;
    case PARAM_REPEAT_LAST_N:
        sp->p.repeat_last_n = (int)cmd->ivalue;
        break;
    case PARAM_MARKDOWN:
    case PARAM_LOOKUP:
    case PARAM_DRAFT:
        return;
    }
    sp->set |= sampling_bit(cmd->param);
    v->sampling_by_set |= sampling_bit(cmd->param); /* for /set alone: who set what */
    v->dirty = true;
    chat_notice(c, false, "%s = %g", cmd_param_names[cmd->param - 1], cmd->value);
}

/* /format json|schema FILE|grammar FILE|off (chat_format.c) */
static void run_format(struct chat *c, const struct cmd *cmd)
{
    chat_format_command(c, c->cur, cmd->arg);
}

static void run_set(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    switch (cmd->param) {
    case PARAM_MARKDOWN:
        c->markdown_off = cmd->ivalue == 0;
        if (c->view.markdown_changed)
            c->view.markdown_changed(c->view.user, !c->markdown_off);
        chat_notice(c, false, "markdown %s", c->markdown_off ? "off: replies show as written"
                                                             : "on");
        return;
    case PARAM_DRAFT:
        /* the draft is loaded by the worker that is answering */
        if (chat_busy_refuse(c))
            return;
        if (!chat_set_draft(c, cmd->arg, err, sizeof err))
            chat_notice(c, true, "%s", err);
        else if (strcmp(cmd->arg, "off") == 0)
            chat_notice(c, false, "no draft model");
        else
            chat_notice(c, false, "loading the draft %s...", cmd->arg);
        return;
    case PARAM_LOOKUP:
        c->lookup_off = cmd->ivalue == 0;
        chat_notice(c, false, "prompt lookup %s", c->lookup_off ? "off" : "on (drafts of "
                    "repeated text, verified in one pass; it turns itself off where it "
                    "does not pay)");
        return;
    default:
        if (!cmd->param)
            show_sampling(c);
        else
            set_sampling(c, cmd);
    }
}

static void run_retry(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    char err[1024];
    struct conv *v = c->cur;
    struct conv_plan plan;
    int rc = conversation_retry(&v->cv, chat_reply_reserve(c), &plan, err, sizeof err);
    if (rc) {
        chat_notice(c, true, "%s", err);
        return;
    }
    v->dirty = true;
    chat_show_conv(c);
    chat_start_reply(c);
}

static void run_undo(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    char err[1024];
    struct conv *v = c->cur;
    if (conversation_restorable(&v->cv) != CONV_UNDONE_NONE) {
        chat_undo_restore(c, v); /* right after /clear or /remove: put it back */
        return;
    }
    char *text = NULL;
    int rc = conversation_undo(&v->cv, &text, err, sizeof err);
    if (rc) {
        chat_notice(c, true, "%s", err);
        return;
    }
    chat_path_replaced(c, v);
    chat_put_input(c, text); /* give the message back for editing */
    free(text);
    chat_save_conv(c, v, true);
    chat_notice(c, false, "removed the last exchange (its message is back in the input; the "
                          "exchange stays as another branch: /tree)");
}

static void run_remove(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    struct conv *v = c->cur;
    size_t i = chat_exchange_index(c, v->s, cmd->n, "remove");
    if (i == SIZE_MAX)
        return;
    size_t x = chat_exchange_of(v->s, i);
    int rc = conversation_remove_exchange(&v->cv, i, err, sizeof err);
    if (rc && rc != CONV_FULL) {
        chat_notice(c, true, "%s", err);
        return;
    }
    chat_path_replaced(c, v);
    chat_save_conv(c, v, true);
    chat_notice(c, false, "removed exchange %zu: /undo puts it back (it stays as another "
                          "branch: /tree)",
                x);
}

static void run_clear(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    struct conv *v = c->cur;
    if (v->s->n_msgs == 0) {
        chat_notice(c, false, "the conversation is empty already");
        return;
    }
    conversation_clear(&v->cv);
    chat_path_replaced(c, v);
    chat_save_conv(c, v, true);
    chat_notice(c, false, "conversation cleared: /undo brings it back (it stays as another "
                          "branch: /tree)");
}

static void run_pin(struct chat *c, const struct cmd *cmd)
{
    pin_command(c, c->cur, cmd->n, cmd->id == CMD_PIN);
}

/* The edit of exchange n's message begins: the next message sent replaces
 * it (chat_input.c).  false (and a notice) when there is no such exchange. */
static bool begin_edit(struct chat *c, int n)
{
    struct conv *v = c->cur;
    size_t idx = chat_exchange_index(c, v->s, n, "edit");
    if (idx == SIZE_MAX)
        return false;
    c->edit_conv = v;
    c->edit_msg = idx;
    c->edit_exchange = (int)chat_exchange_of(v->s, idx);
    return true;
}

/* /edit [N]: the message goes to the input line. */
static void run_edit(struct chat *c, const struct cmd *cmd)
{
    if (!begin_edit(c, cmd->n))
        return;
    chat_put_input(c, c->cur->s->msgs[c->edit_msg].content);
    chat_notice(c, false,
                "editing message #%d: Enter sends it as a new version (the old one stays: "
                "/branch, /tree); "
                "an empty line cancels",
                c->edit_exchange);
}

static void run_copy(struct chat *c, const struct cmd *cmd)
{
    copy_command(c, c->cur, cmd->arg);
}

static void run_fork(struct chat *c, const struct cmd *cmd)
{
    chat_fork_command(c, c->cur, cmd->n);
}

static void run_branch(struct chat *c, const struct cmd *cmd)
{
    chat_branch_command(c, c->cur, cmd->n, cmd->reply, cmd->k);
}

static void run_tree(struct chat *c, const struct cmd *cmd)
{
    (void)cmd;
    chat_tree_command(c);
}

static void run_read(struct chat *c, const struct cmd *cmd)
{
    chat_read_command(c, c->cur, cmd->arg);
}

static void run_rename(struct chat *c, const struct cmd *cmd)
{
    char err[1024], old[256];
    struct conv *v = c->cur;
    snprintf(old, sizeof old, "%s", v->s->name);
    if (chat_conv_rename(c, v, cmd->arg, err, sizeof err)) {
        chat_changed(c);
        chat_notice(c, false, "renamed '%s' to '%s'", old, v->s->name);
    } else {
        chat_notice(c, true, "%s", err);
    }
}

static void run_delete(struct chat *c, const struct cmd *cmd)
{
    char err[1024];
    if (chat_session_delete(c, cmd->arg, err, sizeof err))
        chat_notice(c, false, "deleted session '%s' (its file and cache snapshot)", cmd->arg);
    else
        chat_notice(c, true, "%s", err);
}

/* /find TEXT (none: search off): the view searches its transcript. */
static void run_find(struct chat *c, const struct cmd *cmd)
{
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
}

/* ---------------------------------------------------------------- the table */

#define BUSY CMD_REFUSED_BUSY
#define ENDS_EDIT CMD_ENDS_EDIT
#define MODEL CMD_NEEDS_MODEL

/* One row per command, in /help's order. */
const struct cmd_info cmd_table[] = {
    {"help", CMD_HELP, ARG_NONE, -1, "/help", "list the commands and keys", 0, run_help},
    {"new", CMD_NEW, ARG_TEXT, 0, "/new [NAME]", "start a new conversation", BUSY | ENDS_EDIT,
     run_new},
    {"sessions", CMD_SESSIONS, ARG_NONE, -1, "/sessions", "show or hide the session list", 0,
     run_sessions},
    {"switch", CMD_SWITCH, ARG_SESSION, 1, "/switch NAME", "switch to an open or saved session",
     BUSY | ENDS_EDIT, run_switch},
    {"model", CMD_MODEL, ARG_MODEL, 1, "/model NAME|PATH", "load another model", 0, run_model},
    {"template", CMD_TEMPLATE, ARG_TEMPLATE, 1, "/template NAME", "use another chat template",
     BUSY, run_template},
    {"system", CMD_SYSTEM, ARG_TEXT, 1, "/system TEXT", "set the system prompt", BUSY,
     run_system},
    {"role", CMD_ROLE, ARG_ROLE, 0, "/role [NAME]",
     "use a role preset as the system prompt (no NAME: list them)", 0, run_role},
    {"set", CMD_SET, ARG_PARAM, 0, "/set [PARAM VALUE]",
     "sampling: temperature top-k top-p min-p repeat-penalty repeat-last-n seed max-tokens; "
     "markdown on|off; lookup on|off; draft NAME|off; alone: the values and where they come "
     "from",
     0, run_set},
    {"format", CMD_FORMAT, ARG_TEXT, 0, "/format [json|schema F|grammar F|off]",
     "structured replies: JSON, JSON the schema F allows, text the GBNF grammar F matches", 0,
     run_format},
    {"save", CMD_SAVE, ARG_SESSION, 0, "/save [NAME] [--force]",
     "save the conversation (as NAME; --force replaces a saved NAME)", 0, run_save},
    {"load", CMD_LOAD, ARG_SESSION, 1, "/load NAME", "load a saved conversation",
     BUSY | ENDS_EDIT, run_switch},
    {"rename", CMD_RENAME, ARG_TEXT, 1, "/rename NEW", "rename this conversation (its file too)",
     0, run_rename},
    {"delete", CMD_DELETE, ARG_SESSION, 1, "/delete NAME",
     "delete a saved conversation (not the open one): its file and cache snapshot", 0,
     run_delete},
    {"export", CMD_EXPORT, ARG_FILE, 1, "/export FILE",
     "write the conversation as Markdown, or FILE.json: the whole tree as JSON", 0, run_export},
    {"read", CMD_READ, ARG_FILE, 1, "/read FILE",
     "attach a text file to your next message (/read off drops it)", 0, run_read},
    {"find", CMD_FIND, ARG_TEXT, 0, "/find [TEXT]",
     "search the whole conversation (Ctrl-F next, Ctrl-B previous, Esc leaves)", 0, run_find},
    {"copy", CMD_COPY, ARG_TEXT, 0, "/copy [N|reply|#M] [FILE]",
     "copy code block N (default: the last) of the last reply, the reply, or your message #M", 0,
     run_copy},
    {"retry", CMD_RETRY, ARG_NONE, -1, "/retry",
     "regenerate the last reply (the old one stays as a branch)", BUSY | MODEL, run_retry},
    {"undo", CMD_UNDO, ARG_NONE, -1, "/undo",
     "take the last exchange back (it stays as a branch); after /clear or /remove: undo them",
     BUSY, run_undo},
    {"remove", CMD_REMOVE, ARG_EXCHANGE, 0, "/remove [N]",
     "remove exchange N (default: the last); it stays as a branch, /undo puts it back", BUSY,
     run_remove},
    {"edit", CMD_EDIT, ARG_EXCHANGE, 0, "/edit [N]",
     "edit your message N (default: the last): the old version stays as a branch", BUSY,
     run_edit},
    {"fork", CMD_FORK, ARG_EXCHANGE, 0, "/fork [N]",
     "start a new branch after exchange N (default: the last); what followed stays", BUSY,
     run_fork},
    {"branch", CMD_BRANCH, ARG_VERSION, 1, "/branch N [reply] [K]",
     "show version K of your message N (or of its reply); no K: list them", BUSY, run_branch},
    {"tree", CMD_TREE, ARG_NONE, -1, "/tree",
     "the conversation's branches: Up/Down choose, Enter shows that path", 0, run_tree},
    {"pin", CMD_PIN, ARG_EXCHANGE, 0, "/pin [N]",
     "keep exchange N (default: the last) in context when old turns are dropped", BUSY, run_pin},
    {"unpin", CMD_UNPIN, ARG_EXCHANGE, 0, "/unpin [N]",
     "let exchange N (default: the last) be dropped", BUSY, run_pin},
    {"clear", CMD_CLEAR, ARG_NONE, -1, "/clear",
     "start the conversation over (the old one stays as a branch; /undo brings it back)", BUSY,
     run_clear},
    {"info", CMD_INFO, ARG_NONE, -1, "/info", "model, template, context and speed", 0, run_info},
    {"quit", CMD_QUIT, ARG_NONE, -1, "/quit", "save and leave", 0, run_quit},
};
const size_t cmd_table_len = sizeof cmd_table / sizeof cmd_table[0];

#undef BUSY
#undef ENDS_EDIT
#undef MODEL

/* ----------------------------------------------------------- the dispatcher */

static const struct cmd_info *row_of(enum cmd_id id)
{
    for (size_t i = 0; i < cmd_table_len; i++)
        if (cmd_table[i].id == id)
            return &cmd_table[i];
    return NULL;
}

/* What the row's flags say before its handler runs: false (and a notice)
 * when it may not run now. */
static bool allowed(struct chat *c, const struct cmd_info *row)
{
    /* another conversation ends an /edit (a path cut or replaced ends it
     * too: chat_path_replaced) */
    if (row->flags & CMD_ENDS_EDIT)
        c->edit_conv = NULL;
    if ((row->flags & CMD_REFUSED_BUSY) && chat_busy_refuse(c))
        return false;
    if ((row->flags & CMD_NEEDS_MODEL) && !c->model_ready) {
        chat_notice(c, true, c->load.active ? "wait for the model to load" : "no model loaded");
        return false;
    }
    return true;
}

bool chat_run_command(struct chat *c, const struct cmd *cmd)
{
    const struct cmd_info *row = row_of(cmd->id);
    if (!row || !allowed(c, row))
        return false;
    row->run(c, cmd);
    return true;
}

bool chat_resend_begin(struct chat *c, int n)
{
    const struct cmd_info *row = row_of(CMD_EDIT);
    if (!allowed(c, row))
        return false;
    if (!c->model_ready) {
        chat_notice(c, true, c->load.active ? "wait for the model to load" : "no model loaded");
        return false;
    }
    return begin_edit(c, n);
}

/* ------------------------------------------------- the typed entry points */

static bool run_id(struct chat *c, enum cmd_id id, const char *arg)
{
    struct cmd cmd = {.id = id, .arg = (char *)arg};
    return chat_run_command(c, &cmd);
}

static bool run_exchange(struct chat *c, enum cmd_id id, int n)
{
    struct cmd cmd = {.id = id, .n = n};
    return chat_run_command(c, &cmd);
}

bool chat_pin(struct chat *c, int n)
{
    return run_exchange(c, CMD_PIN, n);
}

bool chat_unpin(struct chat *c, int n)
{
    return run_exchange(c, CMD_UNPIN, n);
}

bool chat_edit(struct chat *c, int n)
{
    return run_exchange(c, CMD_EDIT, n);
}

bool chat_remove(struct chat *c, int n)
{
    return run_exchange(c, CMD_REMOVE, n);
}

bool chat_fork(struct chat *c, int n)
{
    return run_exchange(c, CMD_FORK, n);
}

bool chat_branch(struct chat *c, int n, bool reply, int k)
{
    struct cmd cmd = {.id = CMD_BRANCH, .n = n, .reply = reply, .k = k};
    return chat_run_command(c, &cmd);
}

bool chat_copy_message(struct chat *c, int n)
{
    char arg[32];
    snprintf(arg, sizeof arg, "#%d", n);
    return run_id(c, CMD_COPY, arg);
}

bool chat_switch_session(struct chat *c, const char *name)
{
    return run_id(c, CMD_SWITCH, name);
}

bool chat_delete_session(struct chat *c, const char *name)
{
    return run_id(c, CMD_DELETE, name);
}

bool chat_retry(struct chat *c)
{
    return run_id(c, CMD_RETRY, NULL);
}

bool chat_undo(struct chat *c)
{
    return run_id(c, CMD_UNDO, NULL);
}

bool chat_load_model(struct chat *c, const char *name)
{
    return run_id(c, CMD_MODEL, name);
}

bool chat_save_session(struct chat *c, const char *name, bool force)
{
    struct cmd cmd = {.id = CMD_SAVE, .arg = (char *)name, .force = force};
    return chat_run_command(c, &cmd);
}
