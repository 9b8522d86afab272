/* signal_pipe.h: signals as bytes on a pipe (the self-pipe trick), so a
 * front end's poll loop handles them as it handles the tty.  One per
 * process: the full-screen TUI or the inline chat. */
#ifndef ELMCHAT_UI_SIGNAL_PIPE_H
#define ELMCHAT_UI_SIGNAL_PIPE_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Opens the pipe (non-blocking, close-on-exec), sends each of sigs[0..n)
 * to it (SA_RESTART) and ignores SIGPIPE; false (errno set) if no pipe. */
bool signal_pipe_open(const int *sigs, size_t n);
/* The end to poll for POLLIN. */
int signal_pipe_fd(void);
/* Up to cap signal numbers that arrived, one a byte; 0 or less: none. */
ssize_t signal_pipe_take(unsigned char *buf, size_t cap);

#endif
