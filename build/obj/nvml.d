build/obj/nvml.o: src/nvml.c src/gpu.h src/nvml_abi.h src/util.h
src/gpu.h:
src/nvml_abi.h:
src/util.h:
