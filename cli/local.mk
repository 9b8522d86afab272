# The command line: main, the subcommand table, one file per subcommand.
# The top layer: may include ui/, src/ and the engine's public headers.
noinst_LIBRARIES += cli/libcli.a
cli_libcli_a_CFLAGS = $(AM_CFLAGS) $(YAML_CFLAGS) $(CURL_CFLAGS) $(JSONC_CFLAGS)
cli_libcli_a_SOURCES = \
	cli/commands.h \
	cli/model_open.c cli/model_open.h \
	cli/option_loop.c cli/option_loop.h \
	cli/stopwatch.c cli/stopwatch.h \
	cli/json_print.c cli/json_print.h \
	cli/cmd_run.c cli/run_server.c cli/run_server.h \
	cli/grammar_option.c cli/grammar_option.h \
	cli/cmd_tokenize.c \
	cli/cmd_quantize.c \
	cli/cmd_info.c \
	cli/cmd_sessions.c \
	cli/cmd_pull.c \
	cli/cmd_models.c \
	cli/cmd_logits.c \
	cli/cmd_generate.c \
	cli/cmd_bench.c \
	cli/bench_chat.c cli/bench_chat.h \
	cli/bench_grammar.c cli/bench_grammar.h \
	cli/bench_spec.c cli/bench_spec.h

bin_PROGRAMS += elmchat
elmchat_SOURCES = cli/main.c
elmchat_LDADD = cli/libcli.a $(ELM_UI_LIBS)
