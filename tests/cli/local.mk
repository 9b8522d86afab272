# tests/cli/: the subcommands through the binary ($ELMCHAT).
# --help, --version, an unknown command.
check_PROGRAMS += tests/cli/test-command-line
tests_cli_test_command_line_SOURCES = tests/cli/test-command-line.c
tests_cli_test_command_line_LDADD = tests/lib/libtap.a -lm
TESTS += tests/cli/test-command-line

# tokenize / detokenize end to end; most checks need the LLaMA-2
# tokenizer.model (tests/lib/fetch-tokenizer.sh).
dist_check_SCRIPTS += tests/cli/test-tokenize.sh
TESTS += tests/cli/test-tokenize.sh

# bench --chat: its output's lines and fields, and what it computed and
# reused (tests/lib/gen-checkpoint makes the second model).
dist_check_SCRIPTS += tests/cli/test-bench-chat.sh
TESTS += tests/cli/test-bench-chat.sh

# bench --spec: chat prompts with and without drafts on the shipped small
# model: identical replies, a self-draft's acceptance, the profile, bad files.
dist_check_SCRIPTS += tests/cli/test-bench-spec.sh
TESTS += tests/cli/test-bench-spec.sh
EXTRA_DIST += tests/data/chat-prompts.txt

# tools/spec-project.py (bench --spec's acceptance and bench --verify's costs
# projected to other sizes): its arithmetic on made-up measurements.
dist_check_SCRIPTS += tests/cli/test-spec-project.sh
TESTS += tests/cli/test-spec-project.sh
EXTRA_DIST += tools/spec-project.py

# tools/bench-grammar-llamacpp.sh (issue 47's speed goal against llama.cpp):
# its plumbing with a stand-in llama-cli.
dist_check_SCRIPTS += tests/cli/test-bench-grammar-llamacpp.sh
TESTS += tests/cli/test-bench-grammar-llamacpp.sh

# The models elmchat ships answer the golden prompts (tests/data/guide/,
# tools/demo-model/goldens.py); the default model is the small one.
dist_check_SCRIPTS += tests/cli/test-guide-models.sh
TESTS += tests/cli/test-guide-models.sh
EXTRA_DIST += tests/data/guide/small.tsv tests/data/guide/large.tsv

# The guide facts the demo models are trained on name every slash command,
# and only commands that exist.
dist_check_SCRIPTS += tests/cli/test-guide-coverage.sh
TESTS += tests/cli/test-guide-coverage.sh
EXTRA_DIST += tools/demo-model/guide_data.py

# elmchat sessions [--grep TEXT] on a folder of session files.
dist_check_SCRIPTS += tests/cli/test-sessions.sh
TESTS += tests/cli/test-sessions.sh

# NaN weights: info --check names the tensor, a reply stops with an error.
dist_check_SCRIPTS += tests/cli/test-damaged-weights.sh
TESTS += tests/cli/test-damaged-weights.sh

# A Hub folder without a tokenizer runs on the LLaMA-2 one the build fetched.
dist_check_SCRIPTS += tests/cli/test-shipped-tokenizer.sh
TESTS += tests/cli/test-shipped-tokenizer.sh

# Models in the Hugging Face cache: -m owner/repo and the short names.
dist_check_SCRIPTS += tests/cli/test-hf-cache.sh
TESTS += tests/cli/test-hf-cache.sh

# run's message and system prompt: -p '' refused, --role, --verbose.
dist_check_SCRIPTS += tests/cli/test-run.sh
TESTS += tests/cli/test-run.sh

# run -m server:URL: the prompt made here, a server down or failing named,
# a real llama-server's reply (tests/lib/llama-server.sh, when it builds).
dist_check_SCRIPTS += tests/cli/test-run-server.sh
TESTS += tests/cli/test-run-server.sh

# elmchat pull against a stand-in Hub on 127.0.0.1, and elmchat models.
dist_check_SCRIPTS += tests/cli/test-pull.sh
TESTS += tests/cli/test-pull.sh

# One Hugging Face cache for every tool: @huggingface/hub (npm) reads what
# pull wrote; elmchat runs what it downloaded.
dist_check_SCRIPTS += tests/cli/test-hub-interop.sh
TESTS += tests/cli/test-hub-interop.sh
EXTRA_DIST += tests/cli/hub-interop.mjs

# The kernels' test hooks are in elmchat-testing, not in the shipped elmchat.
dist_check_SCRIPTS += tests/cli/test-test-hooks.sh
TESTS += tests/cli/test-test-hooks.sh

# Structured output (issue 47): 33 JSON schemas x 50 replies validated with
# jsonschema (tests/engine/schema-sample, json_schema_check.py), run --json,
# --json-schema, --grammar, refused schemas and grammars, drafts.
dist_check_SCRIPTS += tests/cli/test-structured.sh
TESTS += tests/cli/test-structured.sh
EXTRA_DIST += tests/engine/json_schema_check.py tests/data/schemas

# plain elmchat on a pipe (issue 48): a message a line, -f -, replies on
# stdout and status lines on stderr, the session file, /retry, /undo,
# /model, !COMMAND (asked, attached, exit status, cut), shell_confirm.
dist_check_SCRIPTS += tests/cli/test-pipe-chat.sh
TESTS += tests/cli/test-pipe-chat.sh
