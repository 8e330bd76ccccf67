#!/bin/sh
# End-to-end: memsnap info, dump and convert on the checked-in Lackey sample; error messages
# and exit statuses for bad options and bad files; no half-written output after a failure.
set -eu
memsnap=${MEMSNAP:?set MEMSNAP to the memsnap binary}
sample=${MEMSNAP_SOURCE_DIR:?}/tests/io/data/small.lackey
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$memsnap" convert "$sample" "$work/a.mtr"
"$memsnap" info "$work/a.mtr" > "$work/info.txt"
grep -q '^format: *mtr (version 1)' "$work/info.txt" || fail "info format"
grep -q '^program: *\./k x$' "$work/info.txt" || fail "info program"
loads=$(grep -c '^ L' "$sample"); stores=$(grep -c '^ S' "$sample"); modifies=$(grep -c '^ M' "$sample")
total=$((loads + stores + modifies))
grep -q "^accesses: *$total (load $loads, store $stores, modify $modifies)" "$work/info.txt" \
  || fail "info counts: $(grep accesses "$work/info.txt")"
"$memsnap" info --json "$work/a.mtr" | grep -q "\"accesses\":$total" || fail "info --json"
"$memsnap" info "$sample" | grep -q "^accesses: *$total" || fail "info on lackey"

# dump: text lines, --from/--limit, the same from the .mtr (seek) and the Lackey text (skip)
"$memsnap" dump --from 100 --limit 5 "$work/a.mtr" > "$work/d1"
"$memsnap" dump --from 100 --limit 5 "$sample" > "$work/d2"
cmp -s "$work/d1" "$work/d2" || fail "dump from .mtr and from lackey differ"
[ "$(wc -l < "$work/d1")" -eq 5 ] || fail "dump --limit"
head -1 "$work/d1" | grep -Eq '^100 0 (load|store|modify) 0x[0-9a-f]+ [0-9]+ 0x[0-9a-f]+$' \
  || fail "dump line: $(head -1 "$work/d1")"

# mtr -> din -> mtr: every address in order (modify = read + write)
"$memsnap" convert "$work/a.mtr" "$work/a.din"
"$memsnap" convert --to mtr "$work/a.din" "$work/b.trace"
"$memsnap" dump --format din "$work/b.trace" > "$work/b.din"
cmp -s "$work/a.din" "$work/b.din" || fail "din round trip"
[ "$(wc -l < "$work/a.din")" -eq $((total + modifies)) ] || fail "din line count"

# errors: the option or file is named, exit 2 for usage, 1 for bad input
set +e
"$memsnap" dump --bogus "$work/a.mtr" 2> "$work/err"; status=$?
[ $status -eq 2 ] && grep -q -- '--bogus' "$work/err" || fail "bad option: $status $(cat "$work/err")"
"$memsnap" dump --limit x "$work/a.mtr" 2> "$work/err"; status=$?
[ $status -eq 2 ] && grep -q -- '--limit' "$work/err" || fail "bad value: $status"
head -c 1000 "$work/a.mtr" > "$work/cut.mtr"
"$memsnap" info "$work/cut.mtr" 2> "$work/err"; status=$?
[ $status -eq 1 ] && grep -q "cut.mtr: truncated at offset 1000" "$work/err" || fail "cut: $(cat "$work/err")"
printf 'I  0400,3\n L 1ff,8\n Q 1,1\n' > "$work/bad.lackey"
"$memsnap" convert "$work/bad.lackey" "$work/bad.mtr" 2> "$work/err"; status=$?
[ $status -eq 1 ] && grep -q "bad.lackey:3: malformed lackey line: ' Q 1,1'" "$work/err" \
  || fail "malformed: $(cat "$work/err")"
ls "$work" | grep -q '^bad\.mtr' && fail "a failed conversion left a file"
exit 0
