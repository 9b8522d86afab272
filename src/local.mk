# The application core (sessions, templates, store, commands) and the program.
noinst_LIBRARIES += src/libcore.a
src_libcore_a_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS)
src_libcore_a_SOURCES = \
	src/macros.h \
	src/cli.c src/cli.h \
	src/xalloc.c src/xalloc.h \
	src/cmd_stubs.c

bin_PROGRAMS += elmchat
elmchat_SOURCES = src/main.c
elmchat_LDADD = $(ELM_UI_LIBS)
