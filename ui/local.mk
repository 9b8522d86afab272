# The terminal UI: the only layer that includes curses or readline.
# layout, transcript and sanitize are pure (no curses): the unit tests link
# them alone.
noinst_LIBRARIES += ui/libui.a
ui_libui_a_CFLAGS = $(AM_CFLAGS) $(NCURSESW_CFLAGS) $(READLINE_CFLAGS) $(MD4C_CFLAGS) -D_XOPEN_SOURCE_EXTENDED
ui_libui_a_SOURCES = \
	ui/tui.c ui/tui.h \
	ui/signal_pipe.c ui/signal_pipe.h \
	ui/layout.c ui/layout.h \
	ui/sanitize.c ui/sanitize.h \
	ui/transcript.c ui/transcript.h \
	ui/screen.c ui/screen.h \
	ui/external_editor.c ui/external_editor.h \
	ui/markdown.c ui/markdown.h \
	ui/message_actions.c ui/message_actions.h \
	ui/session_list.c ui/session_list.h \
	ui/tree_view.c ui/tree_view.h \
	ui/input.c ui/input.h \
	ui/keys.c ui/keys.h \
	ui/pull_progress.c ui/pull_progress.h \
	ui/draw.c ui/draw.h \
	ui/chat_view.c ui/chat_view.h \
	ui/chat_args.c ui/chat_args.h \
	ui/inline_chat.c ui/inline_chat.h \
	ui/inline_view.c ui/inline_view.h \
	ui/test_hooks.c ui/test_hooks.h
