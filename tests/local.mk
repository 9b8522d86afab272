# The test suite: TAP programs and scripts in one folder per layer
# (tests/README.md), each folder with its own fragment.  This one holds what
# checks the whole tree rather than one layer: the include rules between
# the layers (tests/check-layering.sh), and that the maps name files that
# exist and every source file (tests/check-docs.sh).
dist_check_SCRIPTS += tests/check-layering.sh tests/check-docs.sh
TESTS += tests/check-layering.sh tests/check-docs.sh
# No exported function that only its own file uses (nm over the build's objects).
dist_check_SCRIPTS += tests/check-exports.sh
TESTS += tests/check-exports.sh
# configure finds upstream BLIS's include/blis/blis.h (two configure runs)
dist_check_SCRIPTS += tests/check-configure-blis.sh
TESTS += tests/check-configure-blis.sh
# the Homebrew formula's dependencies are configure's and the README's
dist_check_SCRIPTS += tests/check-homebrew-formula.sh
TESTS += tests/check-homebrew-formula.sh
EXTRA_DIST += tests/README.md
