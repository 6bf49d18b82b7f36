build/obj/cmd-status.o: src/cmd-status.c src/gpu.h src/gpuctl.h \
 src/json.h src/util.h src/query.h
src/gpu.h:
src/gpuctl.h:
src/json.h:
src/util.h:
src/query.h:
