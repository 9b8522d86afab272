/* chat_sessions.c: the chat's open conversations.  Each is a session, its
 * conversation (the token sequence), its template and a worker slot.
 * Saving writes the session file and a KV snapshot beside it
 * (src/conversation/kvcache_store.h); opening a saved session adopts its snapshot once
 * a model is ready, so a resumed conversation starts from its cache. */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "src/chat/chat_controller.h"
#include "src/chat/chat_internal.h"
#include "src/models/hub_cache.h"
#include "src/models/model_find.h"
#include "src/template/roles.h"
#include "src/conversation/session_lock.h"
#include "src/conversation/kvcache_store.h"
#include "src/store/paths.h"
#include "src/store/store.h"
#include "src/base/strbuf.h"
#include "src/base/xalloc.h"

struct conv *chat_conv_find(struct chat *c, const char *name)
{
    for (size_t i = 0; i < c->n_convs; i++)
        if (strcmp(c->convs[i]->s->name, name) == 0)
            return c->convs[i];
    return NULL;
}

struct conv *chat_conv_by_slot(struct chat *c, int slot)
{
    for (size_t i = 0; i < c->n_convs; i++)
        if (c->convs[i]->slot == slot)
            return c->convs[i];
    return NULL;
}

/* The lock of v's session: held while it is open here; when another
 * elmchat holds it, v is shown read-only. */
static void conv_lock(struct conv *v)
{
    v->lock = session_lock(v->s->name, &v->lock_holder);
    v->read_only = v->lock == SESSION_LOCK_HELD;
    v->lock_name = x_strdup(v->s->name);
}

static void conv_unlock(struct conv *v)
{
    session_unlock(v->lock_name, v->lock);
    v->lock = SESSION_LOCK_NONE;
    free(v->lock_name);
    v->lock_name = NULL;
}

void chat_conv_free(struct conv *v)
{
    if (!v)
        return;
    conv_unlock(v);
    conversation_fini(&v->cv);
    template_free(v->tpl);
    session_free(v->s);
    free(v);
}

/* Template: the session's, then -t, then config, then by model name. */
const char *chat_wanted_template(const struct chat *c, const struct conv *v)
{
    if (v && v->s->template_name)
        return v->s->template_name;
    if (c->opt.template_name)
        return c->opt.template_name;
    if (c->cfg.template_name)
        return c->cfg.template_name;
    return template_for_model_named(c->model.path, c->info ? c->info->name : NULL, NULL, 0);
}

/* The context length before the worker tells it. */
static int requested_ctx(const struct chat *c)
{
    if (c->n_ctx > 0)
        return c->n_ctx;
    return c->opt.common.n_ctx > 0 ? c->opt.common.n_ctx : c->cfg.n_ctx;
}

/* A new open conversation for s (taken over): its template, its token
 * sequence.  NULL with err filled (s is freed). */
struct conv *chat_conv_open(struct chat *c, struct session *s, char *err, size_t err_size)
{
    struct conv *v = x_calloc(1, sizeof *v);
    v->s = s;
    v->lock = SESSION_LOCK_NONE;
    v->tpl = template_load(chat_wanted_template(c, v), err, err_size);
    if (!v->tpl) {
        chat_conv_free(v);
        return NULL;
    }
    conversation_init(&v->cv, s, v->tpl, c->model.tok, requested_ctx(c), &c->policy);
    int rc = conversation_render(&v->cv, err, err_size);
    if (rc && rc != CONV_FULL) {
        chat_conv_free(v);
        return NULL;
    }
    if (rc == CONV_FULL)
        chat_notice(c, true, "%s", err);
    conv_lock(v);
    v->slot = c->next_slot++;
    v->kv_try = s->n_msgs > 0;
    c->convs = x_reallocarray(c->convs, c->n_convs + 1, sizeof *c->convs);
    c->convs[c->n_convs++] = v;
    return v;
}

/* The saved session called name, else (create) a new one.  NULL with err
 * filled. */
struct session *chat_session_load(const char *name, bool create, char *err, size_t err_size)
{
    char *path = session_path_for(name);
    if (!path) {
        snprintf(err, err_size, "invalid session name '%s'", name);
        return NULL;
    }
    struct stat st;
    struct session *s = NULL;
    if (stat(path, &st) == 0)
        s = session_load(path, err, err_size);
    else if (create)
        s = session_new(name);
    else
        snprintf(err, err_size, "no saved session '%s' (%s)", name, path);
    free(path);
    return s;
}

/* The open conversation called name, else its saved file, else (create)
 * a new session.  NULL with err filled. */
struct conv *chat_open_session(struct chat *c, const char *name, bool create, char *err,
                               size_t err_size)
{
    struct conv *v = chat_conv_find(c, name);
    if (v)
        return v;
    struct session *s = chat_session_load(name, create, err, err_size);
    return s ? chat_conv_open(c, s, err, err_size) : NULL;
}

/* A saved file, or another run's lock (a new chat not saved yet). */
static bool name_taken(const char *name)
{
    char *path = session_path_for(name);
    struct stat st;
    bool taken = path && stat(path, &st) == 0;
    free(path);
    return taken || session_lock_exists(name);
}

char *chat_auto_session_name(void)
{
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char buf[64];
    strftime(buf, sizeof buf, "chat-%Y%m%d-%H%M%S", &tm);
    /* two new sessions in the same second */
    if (!name_taken(buf))
        return x_strdup(buf);
    for (int i = 2; i < 100; i++) {
        char b2[80];
        snprintf(b2, sizeof b2, "%s-%d", buf, i);
        if (!name_taken(b2))
            return x_strdup(b2);
    }
    return x_strdup(buf);
}

/* ------------------------------------------------------- saving, snapshots */

/* The KV snapshot beside the session: SAVE_STATE for its slot (the worker
 * runs it after the requests before it) and the .meta sidecar with the
 * exact token ids, written now.  Only when the worker holds a cache for it
 * on the current model. */
static void save_snapshot(struct chat *c, struct conv *v)
{
    if (!c->model_ready || c->load.active || !c->info || v->cv.cache.n == 0 ||
        v->cv.in_reply || (c->reply.active && c->reply.conv == v))
        return;
    char *path = kvcache_path_for(v->s->name);
    if (!path)
        return;
    struct elm_request req;
    kvcache_save_request(path, v->slot, &req);
    char err[512];
    if (chat_post(c, &req) != 0) {
        c->n_kv_saves++;
        if (kvcache_meta_save(&v->cv, path, c->info->fingerprint, err, sizeof err) != 0)
            chat_notice(c, true, "KV snapshot: %s", err);
    }
    free(path);
}

/* A read-only conversation that changed: its own file under a free name,
 * the other elmchat's left as it is. */
static bool take_copy_name(struct chat *c, struct conv *v)
{
    char *old = x_strdup(v->s->name), err[512];
    bool ok = false;
    for (int i = 1; !ok && i < 100; i++) {
        char *name = i == 1 ? x_asprintf("%s-copy", old) : x_asprintf("%s-copy-%d", old, i);
        ok = chat_conv_take_name(c, v, name, false, err, sizeof err);
        if (ok)
            chat_notice(c, false,
                        "'%s' is open in another elmchat: this conversation is saved as '%s' "
                        "(/rename names it)",
                        old, name);
        free(name);
    }
    if (!ok)
        chat_notice(c, true, "'%s' is open in another elmchat: not saved (/save NEWNAME)", old);
    free(old);
    chat_session_list_changed(c);
    return ok;
}

bool chat_save_conv(struct chat *c, struct conv *v, bool quiet)
{
    /* an unchanged session is never written: a second window's stale copy
     * cannot replace newer turns, and /quit leaves the file as it was */
    if (!v->dirty)
        return true;
    if (v->read_only && !take_copy_name(c, v))
        return false;
    char *path = session_path_for(v->s->name);
    if (!path) {
        chat_notice(c, true, "invalid session name '%s'", v->s->name);
        return false;
    }
    char *dir = paths_dir(PATHS_DATA, "sessions");
    paths_mkdir_p(dir);
    free(dir);
    /* the model named for it; on the default (or when its own could not be
     * opened) it keeps the one it names */
    if (c->model.arg) {
        free(v->s->model);
        v->s->model = x_strdup(c->model.arg);
    }
    if (!v->s->template_name && c->opt.template_name)
        v->s->template_name = x_strdup(v->tpl->name);
    char err[1024];
    int rc = session_save(v->s, path, err, sizeof err);
    free(path);
    if (rc != 0) {
        /* the reason first: a long path would push it off the status line */
        snprintf(c->save_error, sizeof c->save_error, "%s", err);
        chat_notice(c, true, "not saved (%s): '%s' (the file is as it was; /info: the path)",
                    rc < 0 ? strerror(-rc) : "error", v->s->name);
        return false;
    }
    c->save_error[0] = '\0';
    v->dirty = false;
    save_snapshot(c, v);
    if (!quiet)
        chat_notice(c, false, "saved '%s'", v->s->name);
    return true;
}

/* A background prefill of v's whole sequence (after a model switch, a
 * session load or switch): the next reply then computes only its turn. */
void chat_post_prefill(struct chat *c, struct conv *v)
{
    if (!c->model_ready || v->cv.tokens.n == 0)
        return;
    struct elm_request req = elm_request_default(ELM_REQ_GENERATE);
    req.slot = v->slot;
    conversation_prefill_request(&v->cv, &req);
    c->prefill_req = chat_post(c, &req);
    c->prefill_conv = v;
    if (c->prefill_req)
        c->n_prefills++;
}

/* Opened from a file: take back the exact ids of the snapshot's sidecar and
 * load the snapshot (silently nothing when it does not match).  true when
 * the load is posted: it stands for the background prefill (its DONE:
 * chat_events.c). */
static bool try_snapshot(struct chat *c, struct conv *v)
{
    if (!v->kv_try || !c->model_ready || c->load.active || !c->info)
        return false;
    v->kv_try = false;
    char *path = kvcache_path_for(v->s->name);
    if (!path)
        return false;
    uint64_t id = 0;
    if (kvcache_adopt(&v->cv, path, c->info->fingerprint)) {
        struct elm_request req;
        kvcache_load_request(path, v->slot, &v->cv, &req);
        id = chat_post(c, &req);
    }
    free(path);
    if (id == 0)
        return false;
    v->kv_loaded = true;
    c->prefill_req = id;
    c->prefill_conv = v;
    return true;
}

void chat_prepare_cache(struct chat *c, struct conv *v)
{
    if (!try_snapshot(c, v))
        chat_post_prefill(c, v);
}

void chat_switch_to(struct chat *c, struct conv *v)
{
    c->cur = v;
    chat_show_conv(c);
    chat_prepare_cache(c, v);
    chat_session_list_changed(c);
}

/* ------------------------------------------------------------ name lists */

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void strv_push(char ***v, size_t *n, const char *s)
{
    for (size_t i = 0; i < *n; i++)
        if (strcmp((*v)[i], s) == 0)
            return;
    *v = x_reallocarray(*v, *n + 2, sizeof **v);
    (*v)[(*n)++] = x_strdup(s);
    (*v)[*n] = NULL;
}

static bool is_dir_in(const char *dir, const char *name)
{
    char path[4096];
    struct stat st;
    return (size_t)snprintf(path, sizeof path, "%s/%s", dir, name) < sizeof path &&
           stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void list_dir(char ***v, size_t *n, const char *dir, const char *suffix, bool dirs_too)
{
    DIR *d = dir ? opendir(dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        size_t len = strlen(e->d_name), sl = suffix ? strlen(suffix) : 0;
        if (suffix && len > sl && strcmp(e->d_name + len - sl, suffix) == 0) {
            char name[256];
            snprintf(name, sizeof name, "%.*s", (int)(len - sl), e->d_name);
            strv_push(v, n, name);
        } else if (dirs_too && is_dir_in(dir, e->d_name)) {
            strv_push(v, n, e->d_name);
        }
    }
    closedir(d);
}

char **chat_names(struct chat *c, enum cmd_arg_kind kind)
{
    char **v = NULL;
    size_t n = 0;
    if (kind == ARG_SESSION) {
        for (size_t i = 0; i < c->n_convs; i++)
            strv_push(&v, &n, c->convs[i]->s->name);
        char *dir = paths_dir(PATHS_DATA, "sessions");
        list_dir(&v, &n, dir, ".yaml", false);
        free(dir);
    } else if (kind == ARG_ROLE) {
        char **r = role_list();
        for (size_t i = 0; r && r[i]; i++)
            strv_push(&v, &n, r[i]);
        strv_free(r);
    } else if (kind == ARG_TEMPLATE) {
        char **t = template_list();
        for (size_t i = 0; t && t[i]; i++)
            strv_push(&v, &n, t[i]);
        strv_free(t);
    } else if (kind == ARG_MODEL) {
        strv_push(&v, &n, "default");
        for (size_t i = 0; i < c->cfg.n_aliases; i++)
            strv_push(&v, &n, c->cfg.aliases[i].name);
        char **dirs = model_search_dirs();
        for (size_t i = 0; dirs[i]; i++) {
            list_dir(&v, &n, dirs[i], ".gguf", true);
            free(dirs[i]);
        }
        free(dirs);
        /* the Hugging Face cache's models, and the OpenELM names (those not
         * downloaded are marked where the matches are shown) */
        char *cache = hub_cache_dir();
        DIR *d = opendir(cache);
        struct dirent *e;
        char id[256];
        while (d && (e = readdir(d)) != NULL)
            if (hub_repo_id_of_dir(e->d_name, id, sizeof id))
                strv_push(&v, &n, id);
        if (d)
            closedir(d);
        free(cache);
        static const char *const sizes[] = {"270M", "450M", "1.1B", "3B"};
        for (size_t i = 0; i < 4; i++) {
            char name[32];
            snprintf(name, sizeof name, "%s-instruct", sizes[i]);
            strv_push(&v, &n, name);
            strv_push(&v, &n, sizes[i]);
        }
    }
    if (v)
        qsort(v, n, sizeof *v, cmp_str);
    return v;
}

/* ------------------------------------------------------ rename and delete */

static bool file_exists(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0;
}

bool chat_session_exists(const char *name)
{
    char *path = session_path_for(name);
    bool there = file_exists(path);
    free(path);
    return there;
}

bool chat_conv_take_name(struct chat *c, struct conv *v, const char *name, bool overwrite,
                         char *err, size_t err_size)
{
    if (strcmp(name, v->s->name) == 0 && !v->read_only)
        return true;
    char *path = session_path_for(name);
    if (!path) {
        snprintf(err, err_size, "'%s' is not a session name", name);
        return false;
    }
    struct conv *o = chat_conv_find(c, name);
    if (o == v)
        o = NULL;
    long holder = 0;
    /* the lock first: no other run can create the file after the check */
    int lock = o ? SESSION_LOCK_NONE : session_lock(name, &holder);
    bool ok = false;
    if (o)
        snprintf(err, err_size, "'%s' is open here (/switch %s)", name, name);
    else if (lock == SESSION_LOCK_HELD)
        snprintf(err, err_size, "'%s' is open in another elmchat (pid %ld)", name, holder);
    else if (!overwrite && file_exists(path))
        snprintf(err, err_size, "a saved session '%s' exists already", name);
    else
        ok = true;
    free(path);
    if (!ok) {
        session_unlock(name, lock);
        return false;
    }
    conv_unlock(v);
    v->lock = lock;
    v->lock_name = x_strdup(name);
    v->read_only = false;
    free(v->s->name);
    v->s->name = x_strdup(name);
    v->dirty = true;
    return true;
}

bool chat_conv_rename(struct chat *c, struct conv *v, const char *name, char *err,
                      size_t err_size)
{
    char *old_name = x_strdup(v->s->name);
    char *old_path = session_path_for(old_name);
    char *old_kv = kvcache_path_for(old_name);
    /* a read-only one's file is the other elmchat's: it stays */
    bool own = !v->read_only;
    bool ok = chat_conv_take_name(c, v, name, false, err, err_size);
    if (ok) {
        ok = chat_save_conv(c, v, true); /* the file and its snapshot, under the new name */
        if (ok && own) {
            if (old_path)
                unlink(old_path);
            if (old_kv)
                kvcache_remove(old_kv);
        } else if (!ok) {
            char e2[256];
            if (own)
                chat_conv_take_name(c, v, old_name, true, e2, sizeof e2);
            snprintf(err, err_size, "not renamed: the session could not be saved as '%s'", name);
        }
    }
    free(old_name);
    free(old_path);
    free(old_kv);
    chat_session_list_changed(c);
    return ok;
}

bool chat_session_delete(struct chat *c, const char *name, char *err, size_t err_size)
{
    if (c->cur && strcmp(c->cur->s->name, name) == 0) {
        snprintf(err, err_size, "'%s' is the open conversation: /switch to another first", name);
        return false;
    }
    char *path = session_path_for(name);
    if (!path) {
        snprintf(err, err_size, "'%s' is not a session name", name);
        return false;
    }
    struct conv *v = chat_conv_find(c, name);
    if (v && (v == c->reply.conv || v == c->prefill_conv)) {
        snprintf(err, err_size, "'%s' is busy: try again when the reply ends", name);
        free(path);
        return false;
    }
    bool had_file = file_exists(path);
    if (!v && !had_file) {
        snprintf(err, err_size, "no session '%s'", name);
        free(path);
        return false;
    }
    /* held while deleting: not while another elmchat has it open */
    long holder = 0;
    int lock = v && !v->read_only ? SESSION_LOCK_NONE : session_lock(name, &holder);
    if ((v && v->read_only) || lock == SESSION_LOCK_HELD) {
        snprintf(err, err_size, "'%s' is open in another elmchat (pid %ld): not deleted", name,
                 v ? v->lock_holder : holder);
        free(path);
        return false;
    }
    if (v) {
        /* its cache goes from the worker, the conversation from the chat */
        struct elm_request req = elm_request_default(ELM_REQ_FREE_CTX);
        req.slot = v->slot;
        chat_post(c, &req);
        if (c->queued_conv == v)
            c->queued_conv = NULL;
        if (c->edit_conv == v)
            c->edit_conv = NULL;
        for (size_t i = 0; i < c->n_convs; i++)
            if (c->convs[i] == v) {
                memmove(&c->convs[i], &c->convs[i + 1], (c->n_convs - i - 1) * sizeof *c->convs);
                c->n_convs--;
                break;
            }
        chat_conv_free(v);
    }
    if (had_file)
        unlink(path);
    char *kv = kvcache_path_for(name);
    if (kv)
        kvcache_remove(kv);
    free(kv);
    free(path);
    session_unlock(name, lock);
    chat_session_list_changed(c);
    return true;
}

bool chat_session_mentions(const char *name, const char *text)
{
    char *path = session_path_for(name);
    char *data = NULL, err[256];
    size_t len = 0, tn = strlen(text);
    bool hit = false;
    if (path && tn && store_read_file(path, 16u << 20, &data, &len, err, sizeof err) == 0) {
        for (size_t i = 0; !hit && i + tn <= len; i++) {
            size_t k = 0;
            while (k < tn && tolower((unsigned char)data[i + k]) == tolower((unsigned char)text[k]))
                k++;
            hit = k == tn;
        }
    }
    free(data);
    free(path);
    return hit;
}

/* The newest file by its time of change (seconds, as every POSIX stat
 * has it; in one second the later name, as the automatic names sort). */
char *chat_last_session_name(void)
{
    char *dir = paths_dir(PATHS_DATA, "sessions");
    DIR *d = opendir(dir);
    char *best = NULL;
    time_t best_t = 0;
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (e->d_name[0] == '.' || n <= 5 || strcmp(e->d_name + n - 5, ".yaml") != 0)
            continue;
        char *path = x_asprintf("%s/%s", dir, e->d_name);
        char *name = x_strndup(e->d_name, n - 5);
        struct stat st;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
            (!best || st.st_mtime > best_t || (st.st_mtime == best_t && strcmp(name, best) > 0))) {
            free(best);
            best = name;
            name = NULL;
            best_t = st.st_mtime;
        }
        free(name);
        free(path);
    }
    if (d)
        closedir(d);
    free(dir);
    return best;
}

/* NAME as a shell word: quoted unless plain. */
static char *shell_word(const char *name)
{
    if (name[strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-+")] ==
        '\0')
        return x_strdup(name);
    struct sbuf b = {0};
    sbuf_add(&b, "'", 1);
    for (const char *p = name; *p; p++)
        sbuf_add(&b, *p == '\'' ? "'\\''" : p, *p == '\'' ? 4 : 1);
    sbuf_add(&b, "'", 1);
    return b.data;
}

char *chat_exit_note(struct chat *c)
{
    struct conv *v = c->cur;
    if (!v)
        return NULL;
    if (v->read_only)
        return x_asprintf("'%s' is open in another elmchat: left as it was.", v->s->name);
    char *path = session_path_for(v->s->name);
    char *note;
    if (v->dirty && c->save_error[0]) {
        note = x_asprintf("The conversation '%s' could not be saved: %s", v->s->name,
                          c->save_error);
    } else if (!file_exists(path)) {
        note = x_strdup("Nothing saved: the conversation was empty.");
    } else {
        char *word = shell_word(v->s->name);
        note = x_asprintf("Saved as '%s' (%s).\nResume it: elmchat -s %s   (elmchat -c: the "
                          "most recent conversation)",
                          v->s->name, path, word);
        free(word);
    }
    free(path);
    return note;
}
