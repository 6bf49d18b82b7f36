#!/usr/bin/env bash
# tests/fuzz/run.sh SECONDS: build the libFuzzer target with clang (ASan + UBSan) and run it for
# a fixed time, seeded with the values of tests/unit/visibility.cases. Skips without clang.
set -eu
cd "$(dirname "$0")/../.."
secs=${1:-20}
B=${B:-build}
if ! command -v clang >/dev/null; then echo "skip - fuzz: clang is not installed"; exit 0; fi
mkdir -p "$B/fuzz-corpus"
clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-Isrc -o "$B/fuzz-visibility" tests/fuzz/fuzz_visibility.c src/visibility.c src/util.c
i=0
while IFS=$'\t' read -r _ v _ _ _; do
	case $v in \"*) i=$((i + 1)); printf '\x07%s' "${v:1:${#v}-2}" >"$B/fuzz-corpus/seed$i" ;; esac
done < <(grep -v '^#' tests/unit/visibility.cases)
"$B/fuzz-visibility" -max_total_time="$secs" -max_len=256 -artifact_prefix="$B/" -print_final_stats=1 "$B/fuzz-corpus" 2>"$B/fuzz.log" &&
	echo "ok - fuzz: $(grep -o 'stat::number_of_executed_units: [0-9]*' "$B/fuzz.log" | awk '{print $2}') inputs in ${secs}s, no crash" ||
	{ echo "not ok - fuzz: crash, see $B/fuzz.log"; tail -30 "$B/fuzz.log"; exit 1; }
