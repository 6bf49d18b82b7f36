build/obj/proc.o: src/proc.c src/proc.h src/util.h
src/proc.h:
src/util.h:
