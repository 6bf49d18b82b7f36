#!/usr/bin/env bash
# t9004-layers.sh: the rank rule of src/gpuctl.h holds on the build, and tools/check-layers.sh
# fails on each kind of break, added on purpose to a scratch copy of the objects or the sources:
# an upward call (a weak reference too), a call between siblings, a call into a program from
# outside cmd/ (main.c too), an upward #include however spelt, a computed one, a symbol looked up
# at run time, a symbol defined twice, a circle of objects or of includes inside one folder, a
# folder with no rank, a design comment that states another rank than gpuctl.h.
. "$(dirname "$0")/lib/lib.sh"
plan 17
CHECK=$ROOT/tools/check-layers.sh
CC=${CC:-cc}

check_exit "the build keeps the rank rule (make check-layers)" 0 "$CHECK" "$B/obj" "$ROOT/src"

# scratch: a copy of the sources and of the build's objects. add FOLDER/NAME 'C source': one
# more source file there, and its object.
scratch() {
	rm -rf "$TMP/obj" "$TMP/src"
	# The objects linked, not copied (a case only adds objects: none is written in place); the
	# sources copied (a case appends to one).
	cp -al "$B/obj" "$TMP/obj" 2>/dev/null || cp -r "$B/obj" "$TMP/obj"
	cp -r "$ROOT/src" "$TMP/src"
}
add() {
	mkdir -p "$TMP/obj/$(dirname "$1")" "$TMP/src/$(dirname "$1")"
	printf '%s\n' "$2" >"$TMP/src/$1.c"
	rm -f "$TMP/obj/$1.o" # never written through a link into the build's own
	"$CC" -c -o "$TMP/obj/$1.o" "$TMP/src/$1.c"
}
# expect NAME PATTERN: the check fails, and names the break.
expect() {
	local out rc
	out=$("$CHECK" "$TMP/obj" "$TMP/src" 2>&1); rc=$?
	if [ $rc -eq 1 ] && grep -qE -- "$2" <<<"$out"; then ok "$1"; else not_ok "$1" "rc=$rc: $out"; fi
}

scratch; add base/probe 'int cmd_main(); int probe(void) { return cmd_main(); }'
expect "an upward call (base/ -> cmd/) fails" 'base/probe\.o uses cmd_main of cmd/cmd\.o: an upward arrow'

scratch; add jobs/probe2 'int job_spec_probe(void) { return 0; }'
add view/probe 'int job_spec_probe(void); int probe(void) { return job_spec_probe(); }'
expect "a call between siblings (view/ -> jobs/) fails" 'view/probe\.o uses job_spec_probe of jobs/probe2\.o: siblings of rank 4'

scratch; add lease/probe 'int daemon_main(); int probe(void) { return daemon_main(); }'
expect "a call into a program (lease/ -> daemon/) fails" 'lease/probe\.o uses daemon_main of daemon/daemon\.o: (an upward arrow|daemon/ is a program)'

scratch; add tui/probe 'int daemon_main(); int probe(void) { return daemon_main(); }'
expect "a program entered from outside cmd/, though from above (tui/ -> daemon/), fails" 'tui/probe\.o uses daemon_main of daemon/daemon\.o: daemon/ is a program'

scratch; add base/ping 'int pong(void); int ping(void) { return pong(); }'
add base/pong 'int ping(void); int pong(void) { return ping(); }'
expect "a circle inside one folder fails" 'a circle of objects: base/ping\.o base/pong\.o'

scratch; add extra/probe 'int probe(void) { return 0; }'
add base/probe2 'int probe(void); int probe2(void) { return probe(); }'
expect "a folder the map does not rank fails" 'folder extra has no rank'

scratch; printf '#include "view/query.h"\n' >>"$TMP/src/machine/kill.h"
expect "an upward #include (machine/ -> view/) fails" 'machine/kill\.h includes view/query\.h: an upward arrow'

scratch; rm "$TMP/obj/base/util.o"
out=$("$CHECK" "$TMP/obj" "$TMP/src" 2>&1)
check_eq "a source without its object is not checked, but said (exit 2)" "2 check-layers: no $TMP/obj/base/util.o: build first (make)" "$? $out"

scratch; add base/probe 'extern int cmd_main() __attribute__((weak)); int probe(void) { return cmd_main ? cmd_main() : 0; }'
expect "a weak reference upward (base/ -> cmd/) fails" 'base/probe\.o uses cmd_main of cmd/cmd\.o: an upward arrow'

scratch; add base/probe 'int cmd_fail(void) __attribute__((weak)); int cmd_fail(void) { return 0; } int probe(void) { return cmd_fail(); }'
expect "a symbol defined in two objects (a weak one below a strong one) fails" 'cmd_fail is defined in both'

scratch; printf '  #  include <base/../cmd/cmd.h>\n' >>"$TMP/src/machine/pid.h"
expect "an upward #include spelt <>, with spaces and .., fails" 'machine/pid\.h includes cmd/cmd\.h: an upward arrow'

scratch; printf '#define H "cmd/cmd.h"\n#include H\n' >>"$TMP/src/base/term.c"
expect "a computed #include fails" 'base/term\.c:[0-9]+: an #include of a macro'

scratch; printf '/* dlsym(RTLD_DEFAULT, "cmd_main") */\n' >>"$TMP/src/base/dl.c"
expect "a lookup by name at run time fails" 'base/dl\.c:[0-9]+:.*looked up at run time'

scratch; add probe 'int daemon_main(); int probe(void) { return daemon_main(); }'
expect "main's level entering a program (top -> daemon/) fails" 'probe\.o uses daemon_main of daemon/daemon\.o: daemon/ is a program'

scratch; sed -i '1s|^/\* base/: rank 0|/* base/: rank 3|' "$TMP/src/base/util.h"
printf '#include "base/json.h"\n' >>"$TMP/src/base/escape.h"
printf '#include "base/escape.h"\n' >>"$TMP/src/base/json.h"
out=$("$CHECK" "$TMP/obj" "$TMP/src" 2>&1)
check_grep "a design comment's rank that gpuctl.h does not give fails" 'base/util\.h: says base/ has rank 3; gpuctl\.h says 0' <(echo "$out")
check_grep "a circle of includes fails" 'a circle of includes: base/escape\.h base/json\.h' <(echo "$out")
