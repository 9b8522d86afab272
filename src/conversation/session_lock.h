/* session_lock.h: one process at a time writes a session.  An open session
 * holds an advisory lock on a file beside it (sessions/.NAME.lock), taken
 * with flock() where there is one, else fcntl(); the kernel drops it when
 * the process ends, however it ends, so a killed run never leaves a session
 * locked.  The file holds the owner's pid, for the message a second opener
 * shows.  Any thread; a lock belongs to the process. */
#ifndef ELMCHAT_SRC_SESSION_LOCK_H
#define ELMCHAT_SRC_SESSION_LOCK_H

#include <stdbool.h>

/* Lock the session called name for this process.  Returns the lock (a file
 * descriptor, >= 0); SESSION_LOCK_HELD when another open file description
 * (another elmchat, or another open in this one) holds it, *holder its pid
 * (0 when unknown); SESSION_LOCK_NONE when no lock could be made (a folder
 * that cannot be written, a file system without locks): the caller goes on
 * unlocked, as before locks. */
#define SESSION_LOCK_HELD (-2)
#define SESSION_LOCK_NONE (-1)
int session_lock(const char *name, long *holder);
/* Whether a lock file for name is there (a run has it open, or one was
 * killed with it): a new chat's automatic name avoids it. */
bool session_lock_exists(const char *name);
/* Give the lock back and remove its file (lock < 0: nothing). */
void session_unlock(const char *name, int lock);

#endif
