# The test suite: TAP programs and scripts in one folder per layer
# (tests/README.md), each folder with its own fragment.  This one holds what
# checks the whole tree rather than one layer: the include rules between
# the layers (tests/check-layering.sh), and that the maps name files that
# exist and every source file (tests/check-docs.sh).
dist_check_SCRIPTS += tests/check-layering.sh tests/check-docs.sh
TESTS += tests/check-layering.sh tests/check-docs.sh
EXTRA_DIST += tests/README.md
