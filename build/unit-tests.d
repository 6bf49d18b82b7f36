build/unit-tests: tests/unit/test_visibility.c tests/unit/tap.h \
 src/util.h src/visibility.h
tests/unit/tap.h:
src/util.h:
src/visibility.h:
