build/obj/cmd.o: src/cmd.c src/gpuctl.h src/util.h
src/gpuctl.h:
src/util.h:
