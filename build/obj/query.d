build/obj/query.o: src/query.c src/query.h src/gpu.h src/util.h
src/query.h:
src/gpu.h:
src/util.h:
