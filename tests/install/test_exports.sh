#!/usr/bin/env bash
# libmemsnap.so exports exactly its public API: every defined dynamic symbol is an ms_ name
# declared in include/memsnap/*.h, and every function and variable declared there is
# exported (static inline functions aside). A symbol outside the headers is an internal
# function that escaped the hidden visibility; a declaration without its symbol is a
# forgotten MS_API (memsnap/api.h). A program built against the headers and linked with
# the library also checks that the library's run-time version is the header's.
#
# The declarations are read from the headers as the C compiler preprocesses them (no
# comments, macros expanded, text of other headers left out): top-level declarations that
# are neither typedefs nor static, named by the identifier before their parameter list
# (functions) or the last one of their declarator (variables).
# usage: test_exports.sh LIBRARY INCLUDE_DIR CC
set -euo pipefail
library=$1 include=$(realpath "$2") cc=$3
work=$(mktemp -d "${TMPDIR:-/tmp}/memsnap-exports.XXXXXX")
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Defined dynamic symbols, without their version suffix and the linker's own symbols.
nm -D --defined-only "$library" > "$work/nm" || fail "nm -D $library"
awk '$2 != "A" { sub(/@.*/, "", $3); print $3 }' "$work/nm" |
  { grep -Ev '^(_init|_fini|_edata|_end|__bss_start|__end__|_etext|__data_start)$' || true; } |
  sort -u > "$work/exported"

for header in "$include"/memsnap/*.h; do
  printf '#include "memsnap/%s"\n' "$(basename "$header")"
done > "$work/headers.c"
"$cc" -std=c11 -E -I"$include" "$work/headers.c" > "$work/headers.i" ||
  fail "cannot preprocess the headers"
awk -v prefix="$include/memsnap/" '
  # Linemarkers (# LINE "FILE" FLAGS) say whose text follows: keep the public headers only.
  /^# [0-9]+ "/ {
    match($0, /"[^"]*"/); file = substr($0, RSTART + 1, RLENGTH - 2)
    keep = substr(file, 1, length(prefix)) == prefix
    next
  }
  /^#/ { next }
  keep { text = text " " $0 }

  function strip_attributes(s,    start, i, depth, c) {
    while ((start = index(s, "__attribute__")) > 0) {
      i = start + length("__attribute__"); depth = 0
      for (; i <= length(s); i++) {
        c = substr(s, i, 1)
        if (c == "(") depth++
        else if (c == ")" && --depth == 0) break
      }
      s = substr(s, 1, start - 1) " " substr(s, i + 1)
    }
    return s
  }
  # Prints "NAME" for a declaration of a function or variable; nothing for the others.
  function declared(s,    open, rest, n, words) {
    s = strip_attributes(s)
    gsub(/[ \t]+/, " ", s); sub(/^ /, "", s); sub(/ $/, "", s)
    if (s == "" || s ~ /^(typedef|_Static_assert)[ (]/) return
    if (s ~ /(^|[^A-Za-z0-9_])static([^A-Za-z0-9_]|$)/) return # static inline: not a symbol
    if (s ~ /^(struct|union|enum)( [A-Za-z_][A-Za-z0-9_]*)? ?(\{\})?$/) return
    open = index(s, "(")
    if (open > 0) {
      rest = substr(s, open + 1)
      if (rest ~ /^ ?\*/) { # a pointer to function: int (*name)(...)
        sub(/^ ?\*+ ?/, "", rest); match(rest, /^[A-Za-z_][A-Za-z0-9_]*/)
        print substr(rest, 1, RLENGTH)
        return
      }
      s = substr(s, 1, open - 1)
    } else {
      sub(/[\[=].*/, "", s)
    }
    n = split(s, words, /[^A-Za-z0-9_]+/)
    while (n > 0 && words[n] == "") n--
    if (n > 0) print words[n]
  }
  # Splits the text into top-level declarations: bodies in braces are dropped (struct and
  # enum members, static inline functions), a function body ends its declaration.
  END {
    depth = 0; statement = ""
    for (i = 1; i <= length(text); i++) {
      c = substr(text, i, 1)
      if (c == "\"" || c == "\047") { # a literal: copied whole, its ; { } are text
        for (j = i + 1; j <= length(text); j++) {
          d = substr(text, j, 1)
          if (d == "\\") j++
          else if (d == c) break
        }
        if (depth == 0) statement = statement substr(text, i, j - i + 1)
        i = j
      } else if (c == "{") {
        if (depth++ == 0) head = statement
      } else if (c == "}") {
        if (--depth == 0) {
          if (head ~ /\) *$/) { declared(head); statement = "" }
          else statement = statement "{}"
        }
      } else if (depth == 0) {
        if (c == ";") { declared(statement); statement = "" }
        else statement = statement c
      }
    }
  }' "$work/headers.i" | sort -u > "$work/declared"

[ -s "$work/exported" ] || fail "$library exports no symbols"
[ -s "$work/declared" ] || fail "found no declarations in $include/memsnap/*.h"

status=0
internal=$(comm -23 "$work/exported" "$work/declared"; grep -v '^ms_' "$work/exported" || true)
if [ -n "$internal" ]; then
  echo "FAIL: $library exports symbols that include/memsnap/*.h does not declare as ms_ names" \
    "(internal functions must keep the hidden visibility):" >&2
  sort -u <<< "$internal" | sed 's/^/  /' >&2
  status=1
fi
missing=$(comm -13 "$work/exported" "$work/declared")
if [ -n "$missing" ]; then
  echo "FAIL: $library does not export these declarations of include/memsnap/*.h" \
    "(each needs MS_API, and a definition in lib/):" >&2
  sed 's/^/  /' <<< "$missing" >&2
  status=1
fi
[ $status = 0 ] || exit 1

# The header a program is built with and the library it runs with agree on the version.
cat > "$work/version.c" <<'PROGRAM'
#include <memsnap/memsnap.h>
#include <stdio.h>
#include <string.h>
int main(void) {
  printf("header %s (%d), library %s (%u)\n", MS_VERSION_STRING, MS_VERSION_NUMBER,
         ms_version_string(), ms_version_number());
  return ms_version_number() != MS_VERSION_NUMBER ||
         strcmp(ms_version_string(), MS_VERSION_STRING) != 0;
}
PROGRAM
"$cc" -std=c11 -Wall -Wextra -pedantic -Werror -I"$include" "$work/version.c" \
  -o "$work/version" "$library" || fail "a program against $library does not link"
LD_LIBRARY_PATH=$(dirname "$library") "$work/version" ||
  fail "the library's version is not the header's"
echo "$library exports the $(wc -l < "$work/declared") functions and variables that" \
  "include/memsnap/*.h declares, and nothing else"
