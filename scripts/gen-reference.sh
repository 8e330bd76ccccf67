#!/usr/bin/env bash
# memsnap's reference, generated from one source: the help texts of the built binary
# (`memsnap --help` for the command list, `memsnap CMD --help` for each command, written by
# the usage() function of programs/cmd_CMD.c).
#
#   gen-reference.sh MEMSNAP docs FILE.md         rewrite FILE.md's generated blocks in place
#   gen-reference.sh MEMSNAP check-docs FILE.md   fail, printing the diff, if they are stale
#   gen-reference.sh MEMSNAP man DIR              DIR/memsnap.1 and DIR/memsnap-CMD.1
#   gen-reference.sh MEMSNAP bash FILE            the bash completion script
#   gen-reference.sh MEMSNAP check-options SRCDIR every getopt long option of each
#                                                 programs/cmd_CMD.c named in its --help
#   gen-reference.sh MEMSNAP check-man DIR        the pages of `man DIR` render without warnings
#   gen-reference.sh MEMSNAP check-bash FILE      the completion FILE completes what help names
#
# A generated block of a markdown file is everything between a line
# `<!-- generated: memsnap CMD --help -->` (or `memsnap --help`) and the next `<!-- end -->`;
# the rest of the file is left as written.
set -euo pipefail

usage() {
  sed -n '2,/^set -e/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -eq 3 ] || usage
memsnap=$1 mode=$2 target=$3
[ -x "$memsnap" ] || { echo "gen-reference.sh: $memsnap: not an executable" >&2; exit 1; }

# The commands of `memsnap --help`, one per line.
commands() {
  "$memsnap" --help | awk '/^commands:$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } on { exit }'
}

summary_of() {
  "$memsnap" --help | awk -v c="$1" '/^commands:$/ { on = 1; next }
    on && $1 == c { $1 = ""; sub(/^ +/, ""); print; exit }'
}

version() { "$memsnap" --version | awk '{ print $2 }'; }

# ---- markdown blocks ----

# FILE.md with every generated block refreshed, on standard output.
refresh_markdown() {
  local file=$1 line command
  while IFS= read -r line || [ -n "$line" ]; do
    printf '%s\n' "$line"
    if [[ $line =~ ^'<!-- generated: memsnap '(([a-z-]+) )?'--help -->'$ ]]; then
      command=${BASH_REMATCH[2]}
      printf '```\n'
      if [ -n "$command" ]; then "$memsnap" "$command" --help; else "$memsnap" --help; fi
      printf '```\n'
      while IFS= read -r line && [ "$line" != "<!-- end -->" ]; do :; done
      [ "$line" = "<!-- end -->" ] || { echo "gen-reference.sh: $file: a generated block has no <!-- end -->" >&2; exit 1; }
      printf '%s\n' "$line"
    fi
  done < "$file"
}

# Commands with no generated block in FILE.md.
undocumented() {
  local command
  for command in $(commands); do
    grep -qx "<!-- generated: memsnap $command --help -->" "$1" || echo "$command"
  done
}

check_docs() {
  local file=$1 fresh status=0
  fresh=$(mktemp)
  refresh_markdown "$file" > "$fresh"
  if ! diff -u "$file" "$fresh" --label "$file (committed)" --label "$file (from memsnap --help)"; then
    status=1
  fi
  local missing
  missing=$(undocumented "$file")
  if [ -n "$missing" ]; then
    echo "$file: no generated block for: $missing (add <!-- generated: memsnap CMD --help --> ... <!-- end -->)"
    status=1
  fi
  rm -f "$fresh"
  if [ $status -ne 0 ]; then
    echo "$file differs from the help texts; update it with: make docs" \
         "(or scripts/gen-reference.sh BUILD/bin/memsnap docs $file)"
  fi
  return $status
}

# ---- man pages ----

# Help text (stdin) to the SYNOPSIS and OPTIONS of a man page: option lines ("  -x, --long
# VALUE   text") become tagged paragraphs, deeper-indented lines continue them, other
# indented lines and unindented ones become paragraphs.
help_to_man() {
  awk '
    function esc(s) { gsub(/\\/, "\\e", s); gsub(/-/, "\\-", s); return s }
    function text(s) { s = esc(s); if (s ~ /^[.\047]/) s = "\\&" s; return s }
    function term(s,   n, i, words, out) {
      n = split(s, words, " ")
      out = ""
      for (i = 1; i <= n; i++)
        out = out (i > 1 ? " " : "") (words[i] ~ /^-/ ? "\\fB" esc(words[i]) "\\fR" : "\\fI" esc(words[i]) "\\fR")
      return out
    }
    NR == 1 { sub(/^usage: /, ""); print ".SH SYNOPSIS"; print ".nf"; print text($0); synopsis = 1; next }
    synopsis && /^ +(memsnap |\[|-- |\()/ { sub(/^ +/, ""); print text($0); next }
    synopsis { print ".fi"; synopsis = 0 }
    /^[a-z][a-z ]*:$/ { sub(/:$/, ""); print ".SH " toupper($0); section = 1; paragraph = 0; next }
    !section && !/^ *$/ { print ".SH OPTIONS"; section = 1 }
    { match($0, /^ */); indent = RLENGTH }
    indent > 0 { paragraph = 0 }
    (indent >= 1 && indent <= 6 && /^ +-/) || /^  [^ -][^ ]*   */ {
      line = $0; sub(/^ +/, "", line)
      split_at = match(line, /  +/)
      print ".TP"
      if (split_at) { print term(substr(line, 1, split_at - 1)); print text(substr(line, split_at + RLENGTH)) }
      else print term(line)
      next
    }
    indent >= 7 { line = $0; sub(/^ +/, "", line); print text(line); next }
    /^ *$/ { paragraph = 0; next }
    indent == 0 && paragraph { print text($0); next }
    indent == 0 { print ".PP"; print text($0); paragraph = 1; next }
    { line = $0; sub(/^ +/, "", line); print ".IP"; print text(line) }
    END { if (synopsis) print ".fi" }
  '
}

man_page() {
  local command=$1 name=memsnap${1:+-$1} summary
  summary=$(summary_of "$command")
  printf '.\\" Generated by scripts/gen-reference.sh from `memsnap %s--help`: edit that, not this.\n' \
         "${command:+$command }"
  printf '.TH %s 1 "" "memsnap %s" "memsnap manual"\n' "$(echo "$name" | tr a-z A-Z)" "$(version)"
  printf '.SH NAME\n%s \\- %s\n' "$name" "$(printf '%s' "${summary:-observe, represent, characterize and imitate memory accesses}" | sed 's/-/\\-/g')"
  "$memsnap" $command --help | help_to_man
  printf '.SH SEE ALSO\n'
  if [ -n "$command" ]; then
    printf '.BR memsnap (1),\nthe manual docs/cli.md and the file formats docs/formats.md of memsnap.\n'
  else
    local first=1 c
    for c in $(commands); do
      [ $first -eq 1 ] || printf ',\n'
      printf '.BR memsnap\\-%s (1)' "$c"
      first=0
    done
    printf '\n.PP\nThe manual docs/cli.md and the file formats docs/formats.md of memsnap.\n'
  fi
}

write_man() {
  local dir=$1 command
  mkdir -p "$dir"
  man_page "" > "$dir/memsnap.1.tmp" && mv "$dir/memsnap.1.tmp" "$dir/memsnap.1"
  for command in $(commands); do
    man_page "$command" > "$dir/memsnap-$command.1.tmp"
    mv "$dir/memsnap-$command.1.tmp" "$dir/memsnap-$command.1"
  done
}

# ---- bash completion ----

# The long options a help text names (stdin), one line, sorted.
long_options() { grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u | tr '\n' ' ' | sed 's/ $//'; }

# Words that may follow `memsnap COMMAND` as a kind (plot surface|reuse|scores).
kinds_of() {
  "$memsnap" "$1" --help | sed -n "s/^ *\(usage: \)\{0,1\}memsnap $1 \([a-z][a-z]*\)\( .*\)\{0,1\}$/\2/p" | sort -u | tr '\n' ' ' | sed 's/ $//'
}

write_bash() {
  local file=$1 command all hierarchies
  all=$(commands | tr '\n' ' ' | sed 's/ $//')
  hierarchies=$("$memsnap" hierarchies | awk 'NR > 1 && NF == 0 { exit } NR > 1 { print $1 }' | tr '\n' ' ' | sed 's/ $//')
  {
    cat <<EOF
# bash completion for memsnap $(version). Generated by scripts/gen-reference.sh from
# memsnap's help texts: edit those (programs/cmd_*.c), not this.
_memsnap_options() {
  case \$1 in
EOF
    for command in $(commands); do
      printf '    %s) echo "%s" ;;\n' "$command" "$("$memsnap" "$command" --help | long_options)"
    done
    cat <<EOF
  esac
}

_memsnap_kinds() {
  case \$1 in
EOF
    for command in $(commands); do
      local kinds
      kinds=$(kinds_of "$command")
      [ -z "$kinds" ] || printf '    %s) echo "%s" ;;\n' "$command" "$kinds"
    done
    cat <<EOF
  esac
}

_memsnap() {
  local cur=\${COMP_WORDS[COMP_CWORD]} prev=\${COMP_WORDS[COMP_CWORD-1]} i
  COMPREPLY=()
  for ((i = 2; i < COMP_CWORD; i++)); do
    if [[ \${COMP_WORDS[i]} == -- ]]; then
      # the observed program, then its own arguments
      if ((i == COMP_CWORD - 1)); then
        COMPREPLY=(\$(compgen -c -- "\$cur"))
      else
        compopt -o filenames 2>/dev/null
        COMPREPLY=(\$(compgen -f -- "\$cur"))
      fi
      return
    fi
  done
  if ((COMP_CWORD == 1)); then
    COMPREPLY=(\$(compgen -W "$all help --help --version" -- "\$cur"))
    return
  fi
  local command=\${COMP_WORDS[1]}
  if [[ \$command == help ]]; then
    ((COMP_CWORD == 2)) && COMPREPLY=(\$(compgen -W "$all" -- "\$cur"))
    return
  fi
  case \$prev in
    -H | --hierarchy)
      COMPREPLY=(\$(compgen -W "evaluation $hierarchies" -- "\$cur"))
      return
      ;;
  esac
  local kinds
  kinds=\$(_memsnap_kinds "\$command")
  if [[ \$cur == -* ]]; then
    COMPREPLY=(\$(compgen -W "\$(_memsnap_options "\$command") --help" -- "\$cur"))
  elif ((COMP_CWORD == 2)) && [[ -n \$kinds ]]; then
    COMPREPLY=(\$(compgen -W "\$kinds" -- "\$cur"))
  else
    compopt -o filenames 2>/dev/null
    COMPREPLY=(\$(compgen -f -- "\$cur"))
  fi
}
complete -F _memsnap memsnap
EOF
  } > "$file.tmp"
  mv "$file.tmp" "$file"
}

# ---- getopt tables against the help texts ----

# Long options of a command's getopt tables that its --help need not name: --help itself,
# and record's --rt-channel, which memsnap-cc's runtime passes to the writer it starts.
hidden_option() {
  case $1:$2 in
    *:help | record:rt-channel) return 0 ;;
  esac
  return 1
}

check_options() {
  local src=$1 command status=0 help option file files
  for command in $(commands); do
    files=("$src/programs/cmd_$command.c")
    [ "$command" = show ] && files+=("$src/programs/show_profile.c")
    help=$("$memsnap" "$command" --help)
    for file in "${files[@]}"; do
      [ -f "$file" ] || { echo "$command: no $file"; status=1; continue; }
      for option in $(grep -o '{"[a-z0-9][a-z0-9-]*",' "$file" | sed 's/{"\(.*\)",/\1/' | sort -u); do
        hidden_option "$command" "$option" && continue
        if ! grep -q -- "--$option\([^a-z0-9-]\|$\)" <<< "$help"; then
          echo "memsnap $command: --$option is in ${file#"$src"/}'s getopt table but not in memsnap $command --help"
          status=1
        fi
      done
    done
  done
  return $status
}

check_man() {
  local dir=$1 command page warnings status=0
  for command in "" $(commands); do
    page=$dir/memsnap${command:+-$command}.1
    [ -f "$page" ] || { echo "no $page"; status=1; continue; }
    warnings=$(groff -man -ww -z -Tutf8 "$page" 2>&1)
    [ -z "$warnings" ] || { echo "$page: $warnings"; status=1; }
  done
  return $status
}

# Runs the completion of FILE on the words given (the last one being completed).
complete_words() {
  local file=$1
  shift
  bash -c 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _memsnap
           printf "%s\n" "${COMPREPLY[@]}"' complete "$file" "$@"
}

check_bash() {
  local file=$1 command option status=0 got
  bash -n "$file" || return 1
  for command in $(commands); do
    grep -qx -- "$command" <<< "$(complete_words "$file" memsnap "${command:0:3}")" ||
      { echo "memsnap ${command:0:3}<TAB> does not offer $command"; status=1; }
    grep -qx -- "$command" <<< "$(complete_words "$file" memsnap help "$command")" ||
      { echo "memsnap help $command<TAB> does not offer $command"; status=1; }
    got=$(complete_words "$file" memsnap "$command" --)
    for option in $("$memsnap" "$command" --help | grep -o -- '--[a-z0-9][a-z0-9-]*' | sort -u); do
      grep -qx -- "$option" <<< "$got" || { echo "memsnap $command --<TAB> does not offer $option"; status=1; }
    done
  done
  grep -qx -- hpcmo-46 <<< "$(complete_words "$file" memsnap sim -H hpcmo-4)" ||
    { echo "memsnap sim -H hpcmo-4<TAB> does not offer hpcmo-46"; status=1; }
  grep -qx -- evaluation <<< "$(complete_words "$file" memsnap sim -H eval)" ||
    { echo "memsnap sim -H eval<TAB> does not offer evaluation"; status=1; }
  return $status
}

case $mode in
  docs)
    fresh=$(mktemp)
    refresh_markdown "$target" > "$fresh"
    if cmp -s "$fresh" "$target"; then rm -f "$fresh"; else cat "$fresh" > "$target"; rm -f "$fresh"; echo "updated $target"; fi
    missing=$(undocumented "$target")
    [ -z "$missing" ] || echo "$target: no generated block for: $missing" >&2
    ;;
  check-docs) check_docs "$target" ;;
  man) write_man "$target" ;;
  bash) write_bash "$target" ;;
  check-options) check_options "$target" ;;
  check-man) check_man "$target" ;;
  check-bash) check_bash "$target" ;;
  *) usage ;;
esac
