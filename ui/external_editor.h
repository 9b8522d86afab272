/* external_editor.h: Ctrl-X Ctrl-E: the message being typed, edited in
 * $VISUAL or $EDITOR (else vi) with curses paused.  UI thread only. */
#ifndef ELMCHAT_UI_EXTERNAL_EDITOR_H
#define ELMCHAT_UI_EXTERNAL_EDITOR_H

#include <stdbool.h>
#include <stddef.h>

/* Write text to a private temporary file, run the editor on it in the
 * terminal, read it back into *out (owned; one final newline dropped).
 * false with err filled when the editor cannot run, fails, or the file
 * cannot be read: the caller keeps its text. */
bool external_edit(const char *text, char **out, char *err, size_t err_size);

#endif
