# models/: the two models elmchat ships, trained by the project itself
# (tools/demo-model/, issue 15): elmchat's guide and a small dictionary.
# guide-small-instruct is the default model.  Installed into
# $(pkgdatadir)/models, where src/model_find.c finds them (the build tree's
# program uses this folder of the source tree).
bundledmodelsdir = $(pkgdatadir)/models
dist_bundledmodels_DATA = models/guide-small-instruct.gguf
EXTRA_DIST += models/README.md
