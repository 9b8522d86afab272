/* signal_pipe.c: signals as bytes on a pipe (signal_pipe.h). */
#include "config.h"

#include "ui/signal_pipe.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char b = (unsigned char)sig;
    if (write(sig_pipe[1], &b, 1) < 0) {
        /* pipe full: a byte for this signal is already pending */
    }
    errno = saved;
}

bool signal_pipe_open(const int *sigs, size_t n)
{
    if (pipe(sig_pipe) != 0)
        return false;
    for (int i = 0; i < 2; i++) {
        fcntl(sig_pipe[i], F_SETFL, fcntl(sig_pipe[i], F_GETFL) | O_NONBLOCK);
        fcntl(sig_pipe[i], F_SETFD, FD_CLOEXEC);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < n; i++)
        sigaction(sigs[i], &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    return true;
}

int signal_pipe_fd(void)
{
    return sig_pipe[0];
}

ssize_t signal_pipe_take(unsigned char *buf, size_t cap)
{
    return read(sig_pipe[0], buf, cap);
}
