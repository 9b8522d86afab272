/* chat_status.h: what the status bar shows, as the chat controller states
 * it (chat_get_status) and the UI draws it (draw_status).  Plain data. */
#ifndef ELMCHAT_SRC_CHAT_STATUS_H
#define ELMCHAT_SRC_CHAT_STATUS_H

#include <stdbool.h>

/* A key the status bar names after the state.  Which key it is depends on
 * the input's mode (vi's Esc is readline's), so the UI names it. */
enum chat_hint {
    CHAT_HINT_NONE,
    CHAT_HINT_STOP,     /* the key that stops the reply or the download */
    CHAT_HINT_UNQUEUE,  /* the key that takes the queued message back */
};

struct chat_status {
    const char *model;         /* name shown */
    const char *template_name;
    const char *session;
    const char *attached;      /* the file /read attached to the next message, or NULL */
    const char *format;        /* /format's setting ("json", "schema FILE"), or NULL */
    int n_past, n_ctx;         /* context gauge; n_ctx 0: unknown */
    double prefill_tps, decode_tps;
    const char *state;         /* "idle", "generating", "loading 40%", ... */
    enum chat_hint hint;       /* the key to name after the state */
    bool busy;
    /* The conversation's last request, shown once it is done: tokens the
     * KV cache had (reused) and tokens prefilled (computed); both 0: none. */
    int reused, computed;
    const char *warning;       /* e.g. the context nearly full: highlighted, or NULL */
    const char *notice;        /* transient one-line message, or NULL */
    bool notice_error;
};

#endif
