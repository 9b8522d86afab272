/* chat_status.h: what the status bar shows, as the chat controller states
 * it (chat_get_status) and the UI draws it (draw_status).  Plain data. */
#ifndef ELMCHAT_SRC_CHAT_STATUS_H
#define ELMCHAT_SRC_CHAT_STATUS_H

#include <stdbool.h>

struct chat_status {
    const char *model;         /* name shown */
    const char *template_name;
    const char *session;
    const char *attached;      /* the file /read attached to the next message, or NULL */
    int n_past, n_ctx;         /* context gauge; n_ctx 0: unknown */
    double prefill_tps, decode_tps;
    const char *state;         /* "idle", "generating", "loading 40%", ... */
    bool busy;
    const char *warning;       /* e.g. the context nearly full: highlighted, or NULL */
    const char *notice;        /* transient one-line message, or NULL */
    bool notice_error;
};

#endif
