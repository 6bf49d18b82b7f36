build/obj/json.o: src/json.c src/json.h src/util.h
src/json.h:
src/util.h:
