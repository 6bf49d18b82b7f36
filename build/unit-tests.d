build/unit-tests: tests/unit/test_query.c src/gpu.h src/query.h src/gpu.h \
 src/util.h tests/unit/tap.h src/util.h
src/gpu.h:
src/query.h:
src/gpu.h:
src/util.h:
tests/unit/tap.h:
src/util.h:
