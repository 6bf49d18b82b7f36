build/obj/gpu.o: src/gpu.c src/gpu.h src/proc.h src/util.h
src/gpu.h:
src/proc.h:
src/util.h:
