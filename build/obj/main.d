build/obj/main.o: src/main.c src/gpuctl.h
src/gpuctl.h:
