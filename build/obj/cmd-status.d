build/obj/cmd-status.o: src/cmd-status.c src/gpu.h src/util.h \
 src/gpuctl.h src/json.h src/leaseview.h src/lease.h src/queue.h \
 src/alloc.h src/config.h src/query.h
src/gpu.h:
src/util.h:
src/gpuctl.h:
src/json.h:
src/leaseview.h:
src/lease.h:
src/queue.h:
src/alloc.h:
src/config.h:
src/query.h:
