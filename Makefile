# gpuctl: one small Makefile. `make`, `make test`, `make asan`, `make stress`, `make bench`,
# `make install`, `make uninstall` (PREFIX, DESTDIR), `make man`.
# Nothing NVIDIA is needed to build: NVML is loaded at run time. Libraries are loaded at run time
# too (src/base/dl.c), by the commands that use them; their headers are build dependencies
# (libinih-dev, libmicrohttpd-dev, libacl1-dev for the daemon's device guard: .ci/run).
CC ?= cc
CFLAGS ?= -O2 -g
PREFIX ?= /usr/local
B ?= build
WARN = -std=c11 -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -D_GNU_SOURCE
ALL_CFLAGS = $(WARN) $(CFLAGS) -Isrc -MMD -MP
LDLIBS = -ldl -lpthread
# Start-up (issue 22): relative relocations packed (DT_RELR: binutils 2.38+, glibc 2.36+), the
# linker's optimisations. Each is kept only where this toolchain links with it without a warning,
# so a build on an older one still works (probed when gpuctl is linked); PIE and RELRO stay
# (debian/rules adds -z now).
comma := ,
LD_PROBE = $(shell printf 'int main(void){return 0;}' | $(CC) -x c -o /dev/null - -Wl,--fatal-warnings -Wl,$(1) 2>/dev/null && echo '-Wl,$(1)')
LDOPT = $(foreach o,-O1 --hash-style=gnu --as-needed -z$(comma)pack-relative-relocs,$(call LD_PROBE,$(o)))

# src/ has a folder per layer (src/gpuctl.h has the map and the rank rule); sources are named
# from src/ in every #include ("base/util.h").
SRC = $(wildcard src/*.c src/*/*.c src/*/*/*.c)
OBJ = $(SRC:src/%.c=$(B)/obj/%.o)
# The core: everything but cmd/ and main.c. The test workload links only this, the unit tests
# this and cmd/'s few unit-tested files, so the core cannot come to need a command unnoticed
# (and make check-layers says which arrow would).
LIBOBJ = $(filter-out $(B)/obj/main.o $(B)/obj/cmd/%.o,$(OBJ))
UNIT_CMDOBJ = $(B)/obj/cmd/args.o $(B)/obj/cmd/cmd.o $(B)/obj/cmd/runctr.o $(B)/obj/cmd/runctr-words.o \
	      $(B)/obj/cmd/exporter-guard.o # runctr: containers (issue 28); the exporter's guard
FAKES = $(B)/fakenvml/libnvidia-ml.so.1 $(B)/fakenvml-old/libnvidia-ml.so.1 \
	$(B)/fakenvml-r535/libnvidia-ml.so.1
FAKE_SRC = tests/fake/fakenvml/fakenvml.c tests/fake/fakenvml/fake-telemetry.c tests/fake/fakenvml/fake-procs.c \
	tests/fake/fakenvml/machine.c tests/fake/fakenvml/fake-health.c \
	tests/fake/fakenvml/fake-topo.c
FAKE_DEPS = $(FAKE_SRC) tests/fake/fakenvml/machine.h tests/fake/fakenvml/fake.h src/machine/nvml/abi.h
# Hidden by default: the stand-in exports NVML's functions (marked API) and nothing else.
FAKE_CFLAGS = $(WARN) -O1 -g -fPIC -shared -fvisibility=hidden -Wl,-soname,libnvidia-ml.so.1 -Isrc
UNIT_SRC = $(wildcard tests/unit/*.c)
TEST_BINS = $(B)/unit-tests $(B)/sleeper $(B)/workload $(FAKES) $(B)/fakecuda/libcuda.so.1 $(B)/cuda-hold $(B)/nopidfd

all: $(B)/gpuctl man

# The manual pages, in $(B)/man: the binary writes them from its command table, with the parts
# written by hand in doc/man/ (tools/man.sh says how). Cheap, and needs nothing but the binary.
man: $(B)/man/.stamp
$(B)/man/.stamp: $(B)/gpuctl tools/man.sh $(wildcard doc/man/*)
	tools/man.sh $(B)/gpuctl doc/man $(B)/man
	@touch $@

$(B)/gpuctl: $(OBJ)
	$(CC) $(ALL_CFLAGS) $(LDOPT) $(LDFLAGS) -o $@ $(OBJ) $(LDLIBS)

$(B)/obj/%.o: src/%.c
	@mkdir -p $(@D)
	$(CC) $(ALL_CFLAGS) -c -o $@ $<

# The stand-in NVML for tests: test code, never installed. Three builds of one source: a current
# driver, an old driver without _v2/_v3 symbols, and a 535.43-535.86 driver with 32-byte _v3 entries.
$(B)/fakenvml/libnvidia-ml.so.1: $(FAKE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -o $@ $(FAKE_SRC)
	ln -sf libnvidia-ml.so.1 $(@D)/libnvidia-ml.so
$(B)/fakenvml-old/libnvidia-ml.so.1: $(FAKE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_OLD_DRIVER -o $@ $(FAKE_SRC)
$(B)/fakenvml-r535/libnvidia-ml.so.1: $(FAKE_DEPS)
	@mkdir -p $(@D)
	$(CC) $(FAKE_CFLAGS) -DFAKE_R535 -o $@ $(FAKE_SRC)

$(B)/unit-tests: $(UNIT_SRC) $(LIBOBJ) $(UNIT_CMDOBJ) tests/unit/tap.h
	$(CC) $(ALL_CFLAGS) -o $@ $(UNIT_SRC) $(LIBOBJ) $(UNIT_CMDOBJ) $(LDLIBS)

# A stand-in libcuda.so.1 that reports the device list a test gives it (map --verify's plumbing).
$(B)/fakecuda/libcuda.so.1: tests/fake/fakecuda/fakecuda.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -O1 -g -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $<

# Test-only CUDA application stand-in (tests/helper/workload.c), built on gpuctl's own modules.
$(B)/workload: tests/helper/workload.c $(LIBOBJ)
	$(CC) $(ALL_CFLAGS) -o $@ tests/helper/workload.c $(LIBOBJ) $(LDLIBS)

# The device check's CUDA workload (tests/device/check.sh): the driver API loaded at run time.
$(B)/cuda-hold: tests/device/cuda-hold.c
	@mkdir -p $(@D)
	$(CC) $(WARN) -O1 -g -o $@ $< -ldl

$(B)/sleeper: tests/helper/sleeper.c
	$(CC) $(WARN) -O1 -o $@ $<

# Commands where pidfds are refused, as in an old container runtime's seccomp profile.
$(B)/nopidfd: tests/helper/nopidfd.c
	$(CC) $(WARN) -O1 -o $@ $<

test: all $(TEST_BINS) check-layers
	GPUCTL_BUILD=$(B) tests/run.sh

# The rank rule of src/gpuctl.h, read from the objects' symbols and the includes (tools/).
check-layers: all
	tools/check-layers.sh $(B)/obj src

# The proof that the suite is deterministic: it, 10 times, beside two busy loops (both cores).
stress: all $(TEST_BINS)
	GPUCTL_BUILD=$(B) tools/stress.sh

# ASan + UBSan build of gpuctl and the unit tests, then the whole suite against it.
# ASan makes every process 2-3 times slower: a script's limit (it only catches a hang) is raised
# (t3002 took 413 s under ASan on a loaded 2-core machine).
asan:
	TEST_TIMEOUT=$${TEST_TIMEOUT:-1200} $(MAKE) B=build-asan CC=$(CC) CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all" test

# libFuzzer (clang) on the CUDA_VISIBLE_DEVICES parser, under ASan and UBSan, for a fixed time.
FUZZ_SECONDS ?= 30
fuzz:
	B=$(B) tests/fuzz/run.sh $(FUZZ_SECONDS)

demo: all $(B)/fakenvml/libnvidia-ml.so.1 $(B)/sleeper
	@B=$(B) tools/demo.sh

# Every benchmark runs to its end, even when one fails; each figure is printed beside its target.
BENCH_BINS = $(B)/bench-floor $(B)/bench-measure $(B)/bench-spawn $(B)/bench-scrape $(B)/bench-empty \
	$(B)/bench-sched $(B)/bench-pace
bench: all $(B)/fakenvml/libnvidia-ml.so.1 $(BENCH_BINS) $(B)/workload $(B)/sleeper
	@rc=0; for s in run run-lease exporter daemon jobs snapshot; do B=$(B) bench/$$s.sh || rc=1; done; \
		$(B)/bench-sched || rc=1; exit $$rc

# gpuctl top's CPU cost while it runs, on a 16-GPU, 1,000-process machine in tmux (bench/top.sh).
bench-top: all $(B)/fakenvml/libnvidia-ml.so.1 $(B)/bench-spawn $(B)/sleeper
	B=$(B) bench/top.sh

$(B)/bench-floor: bench/floor.c src/machine/nvml/abi.h
	$(CC) $(WARN) -O2 -Isrc -o $@ bench/floor.c -ldl
$(B)/bench-empty: bench/empty.c
	$(CC) $(WARN) $(CFLAGS) -o $@ $<
$(B)/bench-scrape: bench/scrape.c
	$(CC) $(WARN) -O2 -o $@ $< -lpthread
# memory shares (issue 23): the scheduling pass's CPU on a big shared machine
$(B)/bench-sched: bench/sched.c $(LIBOBJ)
	$(CC) $(ALL_CFLAGS) -o $@ bench/sched.c $(LIBOBJ) $(LDLIBS)
$(B)/bench-%: bench/%.c
	$(CC) $(WARN) -O2 -o $@ $< -lm

# `make install` (PREFIX, DESTDIR): the binary; the manual pages; the completions for bash, zsh
# and fish; the daemon's systemd unit, its user (run `systemd-sysusers` once, as root) and its
# tmpfiles rule (systemd-tmpfiles never cleans /run/gpuctl), and the exporter's unit, both
# naming the installed binary; an example gpuctl.conf and the Grafana dashboard in the doc
# directory; then the Python module. `make uninstall` removes exactly these, and the
# directories they leave empty (never $(DESTDIR)$(PREFIX) itself). The packaging (debian/rules)
# uses the same targets.
PYTHON ?= $(firstword $(wildcard /usr/bin/python3) python3)
BINDIR ?= $(PREFIX)/bin
MANDIR ?= $(PREFIX)/share/man
UNITDIR ?= $(PREFIX)/lib/systemd/system
SYSUSERSDIR ?= $(PREFIX)/lib/sysusers.d
TMPFILESDIR ?= $(PREFIX)/lib/tmpfiles.d
BASHCOMPDIR ?= $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR ?= $(PREFIX)/share/zsh/vendor-completions
FISHCOMPDIR ?= $(PREFIX)/share/fish/vendor_completions.d
DOCDIR ?= $(PREFIX)/share/doc/gpuctl
install: install-bin install-python

install-bin: all
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR) \
		$(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 $(DESTDIR)$(MANDIR)/man8 \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) $(DESTDIR)$(FISHCOMPDIR) $(DESTDIR)$(DOCDIR)
	install -m 755 $(B)/gpuctl $(DESTDIR)$(BINDIR)/gpuctl
	for u in gpuctl gpuctl-exporter; do \
		sed 's|@BINDIR@|$(BINDIR)|g' contrib/$$u.service >$(DESTDIR)$(UNITDIR)/$$u.service; \
		chmod 644 $(DESTDIR)$(UNITDIR)/$$u.service; \
	done
	install -m 644 contrib/gpuctl.sysusers $(DESTDIR)$(SYSUSERSDIR)/gpuctl.conf
	install -m 644 contrib/gpuctl.tmpfiles $(DESTDIR)$(TMPFILESDIR)/gpuctl.conf
	for p in $(B)/man/*.[158]; do install -m 644 $$p $(DESTDIR)$(MANDIR)/man$${p##*.}/; done
	install -m 644 contrib/completion/gpuctl.bash $(DESTDIR)$(BASHCOMPDIR)/gpuctl
	install -m 644 contrib/completion/_gpuctl $(DESTDIR)$(ZSHCOMPDIR)/_gpuctl
	install -m 644 contrib/completion/gpuctl.fish $(DESTDIR)$(FISHCOMPDIR)/gpuctl.fish
	install -m 644 contrib/gpuctl.conf.example contrib/grafana-gpuctl.json $(DESTDIR)$(DOCDIR)/

# The Python module (python/gpuctl, standard library only) where $(PYTHON) looks under PREFIX:
# Debian's dist-packages for /usr and /usr/local, else PREFIX's site-packages (python/install-dir.py).
# $(PYTHON) is Debian's /usr/bin/python3 when there is one, not the first python3 on PATH (a
# pyenv's); PYTHON=... chooses another.
install-python:
	@if ! command -v $(PYTHON) >/dev/null; then \
		echo "no $(PYTHON) here: the gpuctl Python module is not installed"; \
	else \
		dir=$$($(PYTHON) python/install-dir.py $(PREFIX)) && \
		install -d $(DESTDIR)$$dir/gpuctl && \
		install -m 644 python/gpuctl/*.py $(DESTDIR)$$dir/gpuctl/ && \
		echo "installed the gpuctl Python module in $(DESTDIR)$$dir/gpuctl"; \
	fi

# What install put there, by name (the pages by the binary's list), then the directories left
# empty, up to but not including $(DESTDIR)$(PREFIX).
uninstall:
	rm -f $(DESTDIR)$(BINDIR)/gpuctl $(DESTDIR)$(UNITDIR)/gpuctl.service \
		$(DESTDIR)$(UNITDIR)/gpuctl-exporter.service $(DESTDIR)$(SYSUSERSDIR)/gpuctl.conf \
		$(DESTDIR)$(TMPFILESDIR)/gpuctl.conf $(DESTDIR)$(BASHCOMPDIR)/gpuctl \
		$(DESTDIR)$(ZSHCOMPDIR)/_gpuctl $(DESTDIR)$(FISHCOMPDIR)/gpuctl.fish \
		$(DESTDIR)$(DOCDIR)/gpuctl.conf.example $(DESTDIR)$(DOCDIR)/grafana-gpuctl.json \
		$(DESTDIR)$(MANDIR)/man5/gpuctl.conf.5 $(DESTDIR)$(MANDIR)/man[18]/gpuctl.[18] \
		$(DESTDIR)$(MANDIR)/man[18]/gpuctl-*.[18]
	@if command -v $(PYTHON) >/dev/null; then \
		dir=$$($(PYTHON) python/install-dir.py $(PREFIX) 2>/dev/null) && \
		rm -rf $(DESTDIR)$$dir/gpuctl && tools/rmdirs.sh $(DESTDIR)$(PREFIX) $(DESTDIR)$$dir; \
	fi
	tools/rmdirs.sh $(DESTDIR)$(PREFIX) $(DESTDIR)$(BINDIR) $(DESTDIR)$(UNITDIR) $(DESTDIR)$(SYSUSERSDIR) \
		$(DESTDIR)$(TMPFILESDIR) $(DESTDIR)$(MANDIR)/man1 $(DESTDIR)$(MANDIR)/man5 \
		$(DESTDIR)$(MANDIR)/man8 $(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR) \
		$(DESTDIR)$(FISHCOMPDIR) $(DESTDIR)$(DOCDIR)

clean:
	rm -rf build build-asan

.PHONY: all man test check-layers stress asan fuzz demo bench bench-top install install-bin install-python uninstall clean
-include $(OBJ:.o=.d)
