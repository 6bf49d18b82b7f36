# tests/lib/docker.sh: a real Docker Engine of the script's own (issue 28), for the checks that a
# real container's processes are named with their container and that a lease follows a detached
# one. The daemon listens on $TMP's socket, keeps its state under $TMP (the vfs storage driver:
# no overlay mounts to leave behind), makes no networks and touches no iptables; DOCKER_HOST
# points the docker client (and gpuctl, which asks the same Engine API) at it. Docker's --gpus
# needs NVIDIA's prestart hook, nvidia-container-runtime-hook, on the daemon's PATH: a stand-in
# there (tests/helper/nvidia-hook-standin) exits 0, so docker's own --gpus parsing and device
# request run for real, and the container's environment shows what it asked for
# (NVIDIA_VISIBLE_DEVICES). The image is one static binary that waits (pause): nothing is pulled.
# Needs root, dockerd, the docker client and a static C library; docker_start says which is
# missing (DOCKER_WHY) and fails.

# docker_start: 0 when the daemon answers and the image is imported.
docker_start() {
	DOCKER_WHY=
	[ "$(id -u)" = 0 ] || { DOCKER_WHY="not root"; return 1; }
	command -v dockerd >/dev/null && command -v docker >/dev/null ||
		{ DOCKER_WHY="no dockerd or docker client (Debian: docker.io)"; return 1; }
	mkdir -p "$TMP/dk/bin" "$TMP/dk/img"
	cp "$ROOT/tests/helper/nvidia-hook-standin" "$TMP/dk/bin/nvidia-container-runtime-hook"
	printf '#include <unistd.h>\nint main(void) { for (;;) pause(); }\n' >"$TMP/dk/pause.c"
	cc -static -o "$TMP/dk/img/pause" "$TMP/dk/pause.c" 2>"$TMP/dk/cc.err" ||
		{ DOCKER_WHY="no static C library to build the image's binary"; return 1; }
	export DOCKER_HOST=unix://$TMP/dk/docker.sock DOCKER_CONFIG=$TMP/dk/config
	# Its own containerd namespaces: where a system containerd runs (a CI machine's docker.io),
	# dockerd uses it, and the system dockerd's containers must stay out of this one's sight.
	local ns=gpuctl-test-${TMP##*.}
	PATH=$TMP/dk/bin:$PATH dockerd --iptables=false --ip6tables=false --bridge=none \
		--containerd-namespace "$ns" --containerd-plugins-namespace "$ns-plugins" \
		--storage-driver=vfs --data-root "$TMP/dk/data" --exec-root "$TMP/dk/exec" \
		--pidfile "$TMP/dk/docker.pid" -H "$DOCKER_HOST" >"$TMP/dk/dockerd.log" 2>&1 &
	DOCKERD=$!
	local end=$((SECONDS + 60))
	until docker version >/dev/null 2>&1; do
		if ! kill -0 $DOCKERD 2>/dev/null || [ $SECONDS -ge $end ]; then
			DOCKER_WHY="dockerd did not start here: $(tail -1 "$TMP/dk/dockerd.log")"
			return 1
		fi
		sleep 0.1
	done
	tar -C "$TMP/dk/img" -cf "$TMP/dk/img.tar" . &&
		docker import "$TMP/dk/img.tar" gpuctl-test-pause:1 >/dev/null 2>"$TMP/dk/import.err" ||
		{ DOCKER_WHY="docker import failed: $(cat "$TMP/dk/import.err")"; return 1; }
}

# docker_stop: every container removed, then the daemon ended.
docker_stop() {
	[ -n "${DOCKERD:-}" ] || return 0
	docker ps -aq | xargs -r docker rm -f >/dev/null 2>&1
	kill $DOCKERD 2>/dev/null; wait $DOCKERD 2>/dev/null
	DOCKERD=
}

# docker_pid ID: the host pid of a container's init.
docker_pid() { docker inspect --format '{{.State.Pid}}' "$1"; }
