build/obj/gpu.o: src/gpu.c src/gpu.h src/util.h src/proc.h
src/gpu.h:
src/util.h:
src/proc.h:
