#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS: build the libFuzzer targets with clang (ASan + UBSan) and run each
# for a fixed time: the CUDA_VISIBLE_DEVICES model, seeded with the values of
# tests/unit/visibility.cases, the daemon's message decoder, seeded with real messages, and
# `list` (the daemon's renderer and the client's parser) over maximal records, a container
# runtime's answers (the JSON reader and the cgroup parser), run's container words, and the jobs
# directory's copy of its records with the record decoder.
# Skips without clang.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-20}
B=${B:-build}
if ! command -v clang >/dev/null; then echo "skip - fuzz: clang is not installed"; exit 0; fi
mkdir -p "$B/fuzz-corpus"
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-visibility" tests/fuzz/fuzz_visibility.c src/cuda/visibility.c src/base/util.c
i=0
while IFS=$'\t' read -r _ v _ _ _; do
	case $v in \"*) i=$((i + 1)); printf '\x07%s' "${v:1:${#v}-2}" >"$B/fuzz-corpus/seed$i" ;; esac
done < <(grep -v '^#' tests/unit/visibility.cases)
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-proto" tests/fuzz/fuzz_proto.c src/base/proto.c src/base/util.c
mkdir -p "$B/fuzz-proto-corpus"
printf 'acquire\nid 1\ncount 2\ngpu GPU-1 GPU-2\nname a%%20b%%0A\nwait 1' >"$B/fuzz-proto-corpus/acquire"
printf 'lease\nid 0123456789abcdef\nuid 0\nkind run\ncommand %%\ngpu GPU-x' >"$B/fuzz-proto-corpus/lease"
printf 'list\nid 1\nlease a 1 2 3 0 run 5\nlname %%1B%%5B31m\nend' >"$B/fuzz-proto-corpus/list"
# `list` end to end: the daemon's renderer and the client's parser (tests/fuzz/fuzz_list.c), seeded
# with an input that asks for maximal records everywhere (bytes >= 200: the longest).
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-list" tests/fuzz/fuzz_list.c src/base/proto.c src/base/util.c
mkdir -p "$B/fuzz-list-corpus"
printf '\377\377\377\310\310\310\310\310\310\310\310\310\310\310\310' >"$B/fuzz-list-corpus/max"
# The daemon's shared snapshot (issue 22): its decoder, seeded with a small whole snapshot.
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-snap" tests/fuzz/fuzz_snap.c src/machine/snap.c src/machine/snap-decode.c src/machine/snap-delta.c src/base/proto.c src/base/util.c
mkdir -p "$B/fuzz-snap-corpus"
{
	printf 'snapshot\nsnap 2 58 15 65537 1\nserial 1\ndrv =550\ncuda 12040\nslurm 0\ng 0 0 0 =H100 =GPU-0 =00:01.0 = =\n'
	for l in 15 15 15 13; do printf 'gn'; for ((i = 0; i < l; i++)); do printf ' %d' $i; done; printf '\n'; done
	printf 'gw 3 =No%%20permission\nm 1 2 0 1 5 4 =MIG-1 =1g\n'
	printf 'p 42 1 1 1048576 4294967295 4294967295 1 0 0 0 0 0 0 0 0\npi =root =python%%20x =python\npc 1 0 0 =0123abcd =\n'
	printf 'ps 0 1 2 3 0x1p+0 0x1p+1 1 0x1.9p+3\nend'
} >"$B/fuzz-snap-corpus/small"
# A container runtime's answers (review 2): the JSON reader and the cgroup parser, seeded with an
# inspect answer and a cgroup file.
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-jsonscan" tests/fuzz/fuzz_jsonscan.c src/base/jsonscan.c src/machine/container.c src/base/util.c
mkdir -p "$B/fuzz-jsonscan-corpus"
printf '{"Name":"/a\\u00e9\\ud800","State":{"Pid":42},"Config":{"Labels":{"io.kubernetes.pod.name":"p"}}}' \
	>"$B/fuzz-jsonscan-corpus/inspect"
printf '0::/kubepods.slice/kubepods-pod0123abcd_0123_4567_89ab_0123456789ab.slice/cri-containerd-%s.scope\n' \
	"$(printf 'a%.0s' $(seq 64))" >"$B/fuzz-jsonscan-corpus/cgroup"
# `gpuctl run -- docker run ...`'s words (review 2 follow-up, src/cmd/runctr-words.c), seeded
# with the forms it refuses.
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-runctr" tests/fuzz/fuzz_runctr.c src/cmd/runctr-words.c
mkdir -p "$B/fuzz-runctr-corpus"
printf '\000-itv=/dev:/dev\n--privileged=T\n--mount\ntype=bind,"SRC=/dev/./",dst=/d\n--device-cgroup-rule\nc *:* rwm\n-e\nCUDA_VISIBLE_DEVICES\nimg\n-v\n/:/h' \
	>"$B/fuzz-runctr-corpus/refused"
# The jobs directory's copy of its records (issue 22, src/jobs/cache.c) and the record decoder,
# seeded with two entries: a queued record and an ended one with every kind of line.
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-records" tests/fuzz/fuzz_records.c src/jobs/cache.c src/jobs/job.c src/base/proto.c src/base/util.c
mkdir -p "$B/fuzz-records-corpus"
r1='job\nid 3\nuid 1000\nstate queued\nboot b\ncommand python%%20train.py\ncwd /h\nlog /h/3.log\nownlog 1\nattempt 1\numask 18\ncount 1\nafter 1 2\ncand GPU-a GPU-b\nmem 4096\nmig profile:1g.10gb\ntime 60000\nnotify /bin/true'
r2='job\nid 9\nuid 0\nstate failed\nboot b\nname n%%1B\ncommand sh\ncwd /\nlog /l\nstarted 5\nended 6\npid 42 7\nexit 3\ngpus 0 1\nuuids GPU-0 GPU-1\nlease 0123456789abcdef\nticket t\nreason r\nwarning w\nagain 3\ncpu 1\nbind_cpus 1'
{
	printf "3 11 %d\n$r1\n" "$(printf "$r1" | wc -c)"
	printf "9 12 %d\n$r2\n" "$(printf "$r2" | wc -c)"
} >"$B/fuzz-records-corpus/two"
status=0
for t in visibility:fuzz-corpus:256 proto:fuzz-proto-corpus:4096 list:fuzz-list-corpus:4096 snap:fuzz-snap-corpus:8192 jsonscan:fuzz-jsonscan-corpus:4096 runctr:fuzz-runctr-corpus:1024 records:fuzz-records-corpus:8192; do
	IFS=: read -r name corpus len <<<"$t"
	if "$B/fuzz-$name" -max_total_time="$secs" -max_len="$len" -artifact_prefix="$B/" \
		-print_final_stats=1 "$B/$corpus" 2>"$B/fuzz-$name.log"; then
		echo "ok - fuzz $name: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$B/fuzz-$name.log" | awk '{print $2}') inputs in ${secs}s, no crash"
	else
		echo "not ok - fuzz $name: crash, see $B/fuzz-$name.log"; tail -30 "$B/fuzz-$name.log"; status=1
	fi
done
exit $status
