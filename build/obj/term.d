build/obj/term.o: src/term.c src/gpuctl.h
src/gpuctl.h:
