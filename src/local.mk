# The application core (sessions, templates, store, commands) and the program.
noinst_LIBRARIES += src/libcore.a
src_libcore_a_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS)
# The build tree's prompts/ (VPATH: the source tree's) for a program run uninstalled.
src_libcore_a_CPPFLAGS = $(AM_CPPFLAGS) -DELMCHAT_SRCDIR=\"$(abs_top_srcdir)\" \
	-DELMCHAT_BUILDDIR=\"$(abs_top_builddir)\"
src_libcore_a_SOURCES = \
	src/macros.h \
	src/cli.c src/cli.h \
	src/xalloc.c src/xalloc.h \
	src/cmd_stubs.c \
	src/utf8.c src/utf8.h \
	src/strbuf.c src/strbuf.h \
	src/paths.c src/paths.h \
	src/store.c src/store.h \
	src/yamldoc.c src/yamldoc.h \
	src/template.c src/template.h \
	src/config_file.c src/config_file.h \
	src/session.c src/session.h \
	src/cmd_run.c
src_libcore_a_SOURCES += src/cmd_tokenize.c
src_libcore_a_SOURCES += src/cmd_quantize.c

bin_PROGRAMS += elmchat
elmchat_SOURCES = src/main.c
elmchat_LDADD = $(ELM_UI_LIBS)
src_libcore_a_SOURCES += src/cmd_model.c src/cmd_model.h src/cmd_info.c src/cmd_logits.c src/cmd_generate.c src/cmd_bench.c \
	src/stopwatch.c src/stopwatch.h
src_libcore_a_SOURCES += src/conversation.c src/conversation.h src/kvcache_store.c src/kvcache_store.h src/bench_chat.c src/bench_chat.h
