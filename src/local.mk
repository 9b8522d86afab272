# The application: sessions, conversations, templates, store, config, options,
# the chat controller and its slash commands.
# Knows the engine's public API only; includes nothing from ui/ or cli/.
noinst_LIBRARIES += src/libcore.a
src_libcore_a_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS) $(MD4C_CFLAGS) $(JSONC_CFLAGS) $(CURL_CFLAGS) $(NETTLE_CFLAGS)
# The build tree's prompts/ (VPATH: the source tree's) for a program run uninstalled.
src_libcore_a_CPPFLAGS = $(AM_CPPFLAGS) -DELMCHAT_SRCDIR=\"$(abs_top_srcdir)\" \
	-DELMCHAT_BUILDDIR=\"$(abs_top_builddir)\"
src_libcore_a_SOURCES = \
	src/macros.h \
	src/diag.c src/diag.h \
	src/platform.c src/platform.h \
	src/options.c src/options.h \
	src/model_find.c src/model_find.h \
	src/model_convert.c src/model_convert.h \
	src/http_fetch.c src/http_fetch.h \
	src/hub_cache.c src/hub_cache.h \
	src/hub_api.c src/hub_api.h \
	src/hub_pull.c src/hub_pull.h \
	src/human_size.c src/human_size.h \
	src/pull_progress.c src/pull_progress.h \
	src/pull_on_demand.c src/pull_on_demand.h \
	src/xalloc.c src/xalloc.h \
	src/utf8.c src/utf8.h \
	src/strbuf.c src/strbuf.h \
	src/paths.c src/paths.h \
	src/store.c src/store.h \
	src/yamldoc.c src/yamldoc.h \
	src/idvec.c src/idvec.h \
	src/template.c src/template.h src/template_impl.h \
	src/template_load.c \
	src/template_find.c \
	src/template_render.c \
	src/roles.c src/roles.h \
	src/code_blocks.c src/code_blocks.h \
	src/attachment.c src/attachment.h \
	src/config_file.c src/config_file.h \
	src/session.c src/session.h \
	src/session_lock.c src/session_lock.h \
	src/session_tree.c src/session_tree.h \
	src/session_json.c src/session_json.h \
	src/conversation.c src/conversation.h \
	src/kvcache_store.c src/kvcache_store.h \
	src/slash_commands.c src/slash_commands.h \
	src/chat_status.h \
	src/chat_controller.c src/chat_controller.h src/chat_internal.h \
	src/chat_base.c \
	src/chat_sessions.c \
	src/chat_model.c \
	src/chat_pull.c \
	src/chat_commands.c \
	src/chat_branches.c \
	src/chat_attach.c
