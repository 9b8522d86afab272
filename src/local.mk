# The application: sessions, conversations, templates, store, config, options,
# the chat controller and its slash commands.
# Knows the engine's public API only; includes nothing from ui/ or cli/.
noinst_LIBRARIES += src/libcore.a
src_libcore_a_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS) $(MD4C_CFLAGS) $(JSONC_CFLAGS) $(CURL_CFLAGS) $(NETTLE_CFLAGS)
# The build tree's prompts/ (VPATH: the source tree's) for a program run uninstalled.
src_libcore_a_CPPFLAGS = $(AM_CPPFLAGS) -DELMCHAT_SRCDIR=\"$(abs_top_srcdir)\" \
	-DELMCHAT_BUILDDIR=\"$(abs_top_builddir)\"
src_libcore_a_SOURCES = \
	src/base/macros.h \
	src/base/diag.c src/base/diag.h \
	src/base/platform.c src/base/platform.h \
	src/base/options.c src/base/options.h \
	src/models/model_find.c src/models/model_find.h \
	src/models/model_convert.c src/models/model_convert.h \
	src/models/http_fetch.c src/models/http_fetch.h \
	src/models/hub_cache.c src/models/hub_cache.h \
	src/models/hub_api.c src/models/hub_api.h \
	src/models/hub_pull.c src/models/hub_pull.h \
	src/base/human_size.c src/base/human_size.h \
	src/models/pull_on_demand.c src/models/pull_on_demand.h \
	src/base/xalloc.c src/base/xalloc.h \
	src/base/utf8.c src/base/utf8.h \
	src/base/strbuf.c src/base/strbuf.h \
	src/store/paths.c src/store/paths.h \
	src/store/store.c src/store/store.h \
	src/store/yamldoc.c src/store/yamldoc.h \
	src/base/idvec.c src/base/idvec.h \
	src/template/template.c src/template/template.h src/template/template_impl.h \
	src/template/template_load.c \
	src/template/template_find.c \
	src/template/template_render.c \
	src/template/roles.c src/template/roles.h \
	src/conversation/code_blocks.c src/conversation/code_blocks.h \
	src/conversation/attachment.c src/conversation/attachment.h \
	src/config/config_file.c src/config/config_file.h \
	src/config/sampling_rule.c src/config/sampling_rule.h \
	src/conversation/session.c src/conversation/session.h \
	src/conversation/session_lock.c src/conversation/session_lock.h \
	src/conversation/session_tree.c src/conversation/session_tree.h \
	src/conversation/session_json.c src/conversation/session_json.h \
	src/conversation/conversation.c src/conversation/conversation.h \
	src/conversation/kvcache_store.c src/conversation/kvcache_store.h \
	src/chat/slash_commands.c src/chat/slash_commands.h \
	src/chat/chat_status.h \
	src/chat/chat_life.c src/chat/chat_events.c src/chat/chat_input.c src/chat/chat_state.c \
	src/chat/chat_controller.h src/chat/chat_internal.h \
	src/chat/chat_base.c \
	src/chat/chat_reply.c \
	src/chat/chat_sessions.c \
	src/chat/chat_model.c \
	src/chat/chat_pull.c \
	src/chat/chat_commands.c \
	src/chat/chat_branches.c \
	src/chat/chat_attach.c \
	src/chat/chat_format.c \
	src/chat/chat_shell.c
