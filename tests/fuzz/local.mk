# Fuzz targets, one per parser (tests/fuzz/fuzz-NAME.c, seeds in
# tests/fuzz/corpus/NAME/).  `make check` runs them all through
# tests/fuzz/replay (seeds plus deterministic mutations); `make fuzz` builds
# real libFuzzer binaries with clang in fuzz/ for long runs (HACKING.md).
FUZZ_NAMES = safetensors config json gguf sp-model tokenizer-json state template \
	session config-file kvmeta render hub-list

check_PROGRAMS += tests/fuzz/replay
TESTS += tests/fuzz/replay
tests_fuzz_replay_CPPFLAGS = $(AM_CPPFLAGS) -DFUZZ_TOP_SRCDIR=\"$(abs_top_srcdir)\"
tests_fuzz_replay_CFLAGS = $(AM_CFLAGS) $(JSONC_CFLAGS) $(YAML_CFLAGS)
tests_fuzz_replay_SOURCES = tests/fuzz/replay.c tests/fuzz/fuzz.h tests/fuzz/fuzz-util.c \
	tests/fuzz/replay-safetensors.c tests/fuzz/replay-config.c tests/fuzz/replay-json.c \
	tests/fuzz/replay-gguf.c tests/fuzz/replay-sp-model.c tests/fuzz/replay-tokenizer-json.c \
	tests/fuzz/replay-state.c tests/fuzz/replay-template.c tests/fuzz/replay-session.c \
	tests/fuzz/replay-config-file.c tests/fuzz/replay-kvmeta.c tests/fuzz/replay-render.c \
	tests/fuzz/replay-hub-list.c
tests_fuzz_replay_LDADD = tests/lib/libtap.a $(ELM_CORE_LIBS)
# The targets themselves are #included by the replay-NAME.c wrappers.
EXTRA_DIST += tests/fuzz/corpus tests/fuzz/dict tests/fuzz/fuzz-safetensors.c tests/fuzz/fuzz-config.c \
	tests/fuzz/fuzz-json.c tests/fuzz/fuzz-gguf.c tests/fuzz/fuzz-sp-model.c \
	tests/fuzz/fuzz-tokenizer-json.c tests/fuzz/fuzz-state.c tests/fuzz/fuzz-template.c \
	tests/fuzz/fuzz-session.c tests/fuzz/fuzz-config-file.c tests/fuzz/fuzz-kvmeta.c \
	tests/fuzz/fuzz-render.c tests/fuzz/fuzz-hub-list.c

# make fuzz: every parser source and every target compiled with clang's
# libFuzzer, ASan and UBSan into $(FUZZ_DIR)/ (objects rebuilt when their
# source, or any header, is newer: a struct changed under an old object once
# made a false finding).  Run one:  fuzz/fuzz-gguf -jobs=1 -max_total_time=180 \
#   fuzz/corpus-gguf $(top_srcdir)/tests/fuzz/corpus/gguf
FUZZ_CC = clang
FUZZ_DIR = fuzz
FUZZ_SANITIZE = -fsanitize=address,undefined -fno-sanitize-recover=undefined
FUZZ_CFLAGS = -g -O1 -std=c11 -fno-omit-frame-pointer $(FUZZ_SANITIZE) \
	-I$(top_srcdir) -I$(top_builddir) $(PTHREAD_CFLAGS) $(JSONC_CFLAGS) $(YAML_CFLAGS) \
	-DPKGDATADIR=\"$(pkgdatadir)\" -DELMCHAT_SRCDIR=\"$(abs_top_srcdir)\" \
	-DELMCHAT_BUILDDIR=\"$(abs_top_builddir)\"
# Sources clang cannot build (e.g. newer __builtin_cpu_supports features in the
# kernels) fall back to the configured compiler, without instrumentation.
FUZZ_PLAIN_CFLAGS = -O2 -std=c11 -I$(top_srcdir) -I$(top_builddir) $(PTHREAD_CFLAGS) \
	$(JSONC_CFLAGS) $(YAML_CFLAGS)
FUZZ_LIBS = $(YAML_LIBS) $(BLIS_LIBS) $(JSONC_LIBS) $(CURL_LIBS) $(NETTLE_LIBS) $(PTHREAD_LIBS) -lm

fuzz: $(BUILT_SOURCES)
	@mkdir -p $(FUZZ_DIR)/obj
	@hdr=`ls -t $(top_srcdir)/engine/*.h $(top_srcdir)/engine/*/*.h $(top_srcdir)/src/*.h \
	    config.h | head -1`; \
	objs=; for src in $(engine_libelm_a_SOURCES) $(src_libcore_a_SOURCES) \
	    tests/fuzz/fuzz-util.c; do \
	  case $$src in *.c) ;; *) continue ;; esac; \
	  obj=$(FUZZ_DIR)/obj/`echo $$src | tr / _ | sed 's/\.c$$/.o/'`; \
	  objs="$$objs $$obj"; \
	  if test ! -f $$obj || test $(top_srcdir)/$$src -nt $$obj || test $$hdr -nt $$obj; then \
	    echo "  FUZZCC   $$src"; \
	    $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer-no-link -c $(top_srcdir)/$$src -o $$obj \
	      2>$$obj.log || { \
	      echo "  CC       $$src (uninstrumented: $(FUZZ_CC) cannot compile it, see $$obj.log)"; \
	      $(CC) $(FUZZ_PLAIN_CFLAGS) -c $(top_srcdir)/$$src -o $$obj || exit 1; }; \
	  fi; \
	done; \
	rm -f $(FUZZ_DIR)/libparsers.a; $(AR) cr $(FUZZ_DIR)/libparsers.a $$objs; \
	for name in $(FUZZ_NAMES); do \
	  echo "  FUZZLD   $(FUZZ_DIR)/fuzz-$$name"; \
	  $(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(top_srcdir)/tests/fuzz/fuzz-$$name.c \
	    $(FUZZ_DIR)/libparsers.a $(FUZZ_LIBS) -o $(FUZZ_DIR)/fuzz-$$name || exit 1; \
	done

clean-local: clean-fuzz
clean-fuzz:
	rm -rf $(FUZZ_DIR)/obj $(FUZZ_DIR)/libparsers.a
	for name in $(FUZZ_NAMES); do rm -f $(FUZZ_DIR)/fuzz-$$name; done
.PHONY: fuzz clean-fuzz

# make fuzz-run FUZZ_SECONDS=N: every target of `make fuzz` for N seconds
# (default 60) on a scratch copy of its seeds, then one line each: the
# executions, the coverage libFuzzer reached, the findings (crash-, leak-,
# timeout- and oom- files, kept in $(FUZZ_DIR)/findings-NAME/).
FUZZ_SECONDS = 60
# a subset, e.g. FUZZ_TARGETS="gguf session" (a long campaign over several runs)
FUZZ_TARGETS = $(FUZZ_NAMES)
fuzz-run: fuzz
	@printf '%-16s %8s %12s %8s %8s\n' target seconds execs cov findings; \
	for name in $(FUZZ_TARGETS); do \
	  work=$(FUZZ_DIR)/corpus-$$name; out=$(FUZZ_DIR)/findings-$$name; \
	  mkdir -p $$work $$out; \
	  cp $(top_srcdir)/tests/fuzz/corpus/$$name/* $$work/ 2>/dev/null; \
	  dict=$(top_srcdir)/tests/fuzz/dict/$$name.dict; test -f $$dict || dict=; \
	  $(FUZZ_DIR)/fuzz-$$name -max_total_time=$(FUZZ_SECONDS) -max_len=1048576 \
	    $${dict:+-dict=$$dict} -print_final_stats=1 -artifact_prefix=$$out/ $$work \
	    > $(FUZZ_DIR)/fuzz-$$name.log 2>&1; \
	  execs=`sed -n 's/^stat::number_of_executed_units: *//p' $(FUZZ_DIR)/fuzz-$$name.log`; \
	  cov=`grep -o 'cov: [0-9]*' $(FUZZ_DIR)/fuzz-$$name.log | tail -1 | cut -d' ' -f2`; \
	  found=`ls $$out | wc -l`; \
	  printf '%-16s %8s %12s %8s %8s\n' $$name $(FUZZ_SECONDS) "$${execs:-?}" "$${cov:-?}" $$found; \
	done
.PHONY: fuzz-run
