build/obj/nvml.o: src/nvml.c src/gpu.h src/util.h src/nvml_abi.h
src/gpu.h:
src/util.h:
src/nvml_abi.h:
