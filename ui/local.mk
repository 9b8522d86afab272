# The terminal UI: the only layer that includes curses or readline.
noinst_LIBRARIES += ui/libui.a
ui_libui_a_CFLAGS = $(AM_CFLAGS) $(NCURSESW_CFLAGS) $(READLINE_CFLAGS) -D_XOPEN_SOURCE_EXTENDED
ui_libui_a_SOURCES = \
	ui/tui.c ui/tui.h
