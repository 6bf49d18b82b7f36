#!/usr/bin/env bash
# t5009-top-80x24.sh: gpuctl top on the smallest usual terminal, 80x24 (driven through tmux as
# t5001 drives it), with eight GPUs, one lease of two of them and a process with a long command
# line: every GPU's bars as wide whether or not the card names a lease holder; the header counts
# the GPUs leased, not the leases; the details wrap at word boundaries (a word longer than the
# line broken where the line ends); the help fits whole, every key on it, and on a shorter
# terminal says what is below and scrolls to its end.
. "$(dirname "$0")/lib/lib.sh"
plan 14
use_state
chmod 755 "$TMP"
if ! command -v tmux >/dev/null; then
	skip "top at 80x24" "tmux is not installed" 14
	exit 0
fi
use_machine "$MACHINES/h100x8.machine"
WL=$B/workload

. "$ROOT/tests/lib/tmux.sh"
trap 'main_shell && { "${TM[@]}" kill-server 2>/dev/null; finish_script; }' EXIT

# One lease of two GPUs (this user's private daemon), held by a sleeper; a process of mine on
# GPU 1 whose command line is many words and one word longer than the screen is wide.
"$B/sleeper" & holdp=$!
await_line "^$holdp\$" "$SLEEPER_READY"
"$GPUCTL" env -q -n 2 -g 3,4 --ignore-usage --hold-pid $holdp >/dev/null 2>"$TMP/env.err"
WORDS="alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu"
LONG=$(printf 'y%.0s' $(seq 100))
CUDA_VISIBLE_DEVICES=1 "$WL" --mem 300 --tag "$WORDS $LONG" & wl=$!
await_workload $wl

"${TM[@]}" new-session -d -s top -x 80 -y 24 -e LC_ALL=C "$GPUCTL" top -d 0.2
check "80x24: the lease shows on its cards" await_screen top "^[34] H100 .* $(id -un) [0-9]+:[0-9]{2}$"
screen_of top >"$TMP/main"
# (a) The bars: GPU[...] and MEM[...] of every card, as wide on the cards with the holder's name.
bars=$(awk '/^[0-7] H100/ { match($0, /GPU\[[^]]*\]/); g = RLENGTH; match($0, /MEM\[[^]]*\]/)
	print g, RLENGTH }' "$TMP/main" | sort -u)
check_eq "eight cards, two with the lease holder's name" "8 2" \
	"$(grep -cE '^[0-7] H100' "$TMP/main") $(grep -cE "^[0-7] H100 .* $(id -un) [0-9:]+$" "$TMP/main")"
check_eq "every card's bars as wide, with or without the holder's name" 1 "$(echo "$bars" | grep -c '^[0-9]* [0-9]*$')"
# (c) The header: one lease of two GPUs is two GPUs leased.
check_grep "the header counts the GPUs leased (one lease of two)" '  2 GPUs leased, 0 waiting  ' "$TMP/main"

# (b) The details of the process: its command line wrapped at word boundaries.
keys top /
typed top foxtrot   # its words: its pid's digits may be in another row's text
keys top Enter
await_screen top "1 row shown" >/dev/null
keys top Enter
check "Enter: the details" await_screen top "^ Environment, as it was started:"
screen_of top | awk '/^ Command line:/ { on = 1; next } /^ Environment/ { on = 0 } on' >"$TMP/cmd"
tr '\0' ' ' </proc/$wl/cmdline | tr ' ' '\n' | grep -v '^y*$' | grep . >"$TMP/want"
tr -s ' ' '\n' <"$TMP/cmd" | grep -v '^y*$' | grep . >"$TMP/got"
check_eq "the command line wraps at word boundaries: every word whole, in order" \
	"$(cat "$TMP/want")" "$(cat "$TMP/got")"
# (The first line of the long word alone: a line of other words may end in y too, "xray", where
# the checkout's path puts the breaks.)
check_eq "a word longer than the line: broken where the line ends, nothing lost" \
	"$LONG 80" "$(tr -s ' ' '\n' <"$TMP/cmd" | grep '^y\+$' | tr -d '\n') $(grep -m1 '^ *yy*$' "$TMP/cmd" | awk '{ print length($0) }')"
keys top Escape c

# (d) The help: whole at 80x24, every key on it, to its last line.
keys top '?'
check "? shows the help" await_screen top "^gpuctl top: keys"
screen_of top >"$TMP/help"
check_eq "R and Ctrl-L are on the screen" "2" \
	"$(grep -cE '^ (R +release your env lease|Ctrl-L +draw the whole screen again)' "$TMP/help")"
check_grep "and the help's last line, nothing below the fold" "^ N/A: the driver gives no value" "$TMP/help"
# A shorter terminal: the help says what is below, and scrolls to its end.
"${TM[@]}" resize-window -t top -x 80 -y 14
check "14 rows: the help says how many lines are below, and how to see them" \
	await_screen top "^ \.\.\. [0-9]+ more lines below: Down, PgDn$"
keys top NPage NPage NPage
check "and scrolls to its last line" await_screen top "^ N/A: the driver gives no value"
check_eq "R and Ctrl-L with it" 2 \
	"$(screen_of top | grep -cE '^ (R +release your env lease|Ctrl-L +draw the whole screen again)')"
keys top Up
check "paged past the end, one Up scrolls back at once" await_screen top "^ \.\.\. 2 more lines below"
keys top Escape q
kill $wl $holdp
