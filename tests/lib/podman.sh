# tests/lib/podman.sh: a real Podman of the script's own (issue 28): its storage and run state
# under $TMP (vfs, cgroupfs, file events: no systemd needed), its Engine API served on $TMP's
# socket (`podman system service`, the compatible API gpuctl asks names of), the image one static
# binary that waits (tests/lib/docker.sh's). PODMAN is the client with those global flags; its
# containers get the limits of the machine (a container sandbox may refuse podman's defaults).
# podman_cdi writes a CDI spec naming the machine's GPUs by UUID (kind nvidia.com/gpu, each
# device's only edit an environment variable GPUCTL_CDI_GPU=UUID) in /var/run/cdi, where Podman
# 4 reads them, as a file of the script's own that podman_stop removes.

podman_start() {
	PODMAN_WHY=
	[ "$(id -u)" = 0 ] || { PODMAN_WHY="not root"; return 1; }
	command -v podman >/dev/null || { PODMAN_WHY="no podman (Debian: podman)"; return 1; }
	mkdir -p "$TMP/pm/img"
	printf '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n' >"$TMP/pm/pause.c"
	cc -static -o "$TMP/pm/img/pause" "$TMP/pm/pause.c" 2>/dev/null ||
		{ PODMAN_WHY="no static C library to build the image's binary"; return 1; }
	PODMAN=(podman --root "$TMP/pm/root" --runroot "$TMP/pm/run" --storage-driver vfs
		--cgroup-manager cgroupfs --events-backend file)
	PODMAN_RUN=(--network none --ulimit nofile=1024:1024 --ulimit nproc=1024:1024)
	tar -C "$TMP/pm/img" -cf "$TMP/pm/img.tar" . &&
		"${PODMAN[@]}" import "$TMP/pm/img.tar" gpuctl-test-pause:1 >/dev/null 2>"$TMP/pm/import.err" ||
		{ PODMAN_WHY="podman import failed: $(tail -1 "$TMP/pm/import.err")"; return 1; }
	"${PODMAN[@]}" run -d "${PODMAN_RUN[@]}" --name probe gpuctl-test-pause:1 /pause >/dev/null 2>"$TMP/pm/probe.err" ||
		{ PODMAN_WHY="podman cannot run a container here: $(tail -1 "$TMP/pm/probe.err")"; return 1; }
	"${PODMAN[@]}" rm -f -t 0 probe >/dev/null 2>&1
	"${PODMAN[@]}" system service --time=0 "unix://$TMP/pm/podman.sock" >"$TMP/pm/service.log" 2>&1 &
	PODMAN_SVC=$!
	wait_for test -S "$TMP/pm/podman.sock" || { PODMAN_WHY="podman system service did not start"; return 1; }
}

podman_cdi() {
	mkdir -p /var/run/cdi
	PODMAN_CDI=/var/run/cdi/gpuctl-test-${TMP##*.}.json
	"$GPUCTL" status --json | jq -c '{cdiVersion: "0.5.0", kind: "nvidia.com/gpu", devices:
		[.gpus[] | {name: .uuid, containerEdits: {env: ["GPUCTL_CDI_GPU=" + .uuid]}}]}' >"$PODMAN_CDI"
}

podman_stop() {
	[ -n "${PODMAN_SVC:-}" ] || return 0
	"${PODMAN[@]}" rm -f -a -t 0 >/dev/null 2>&1
	kill $PODMAN_SVC 2>/dev/null; wait $PODMAN_SVC 2>/dev/null
	rm -f "${PODMAN_CDI:-/nonexistent}"
	PODMAN_SVC=
}
