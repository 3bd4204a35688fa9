// The fixed POSIX sh scripts behind the file routes. Each runs in the sandbox through the runtime's
// exec as `/bin/sh -c SCRIPT sh ARG…`: every value that comes from a request travels as a
// positional argument or on stdin, never inside the script text, so nothing in it is ever parsed
// by the shell. They use only what every Debian-based image has: coreutils (head, cat, mkdir,
// mktemp, readlink, chmod, ln, mv), findutils (GNU find -printf) and GNU grep.
//
// Confinement: the scripts run as the sandbox's unprivileged user, inside its mount namespace
// (the local runtime's nsenter; the pod's container on Kubernetes). `/`, `..` and any symlink a
// user plants (`ln -s / root`) are resolved by the kernel within the sandbox's own file system
// view, so no path can name anything of the host: there is no host path to reach.
//
// Errors are reported as one line `PADDOCK_ERR:<reason>` on stderr and exit status 3; the reasons
// are those in errors.ts. Everything else the scripts do is plain data on stdout.

/** Exit status of a script that reports an error marker. */
export const MARKER_EXIT = 3;

export const PRELUDE = `
fail() { printf 'PADDOCK_ERR:%s\\n' "$1" >&2; exit ${MARKER_EXIT}; }
# Why the path $1, which does not exist, cannot be opened: its nearest existing ancestor says.
missing() {
  d=$1
  while [ -n "$d" ]; do
    d=\${d%/*}
    a=\${d:-/}
    if [ -e "$a" ] || [ -L "$a" ]; then
      [ -d "$a" ] || fail not_a_directory
      [ -x "$a" ] || fail permission_denied
      fail file_not_found
    fi
  done
  fail file_not_found
}
# Why the directory $1 could not be created: its nearest existing ancestor says, or its file
# system, when the ancestor is one the user may write in.
cannot_create() {
  a=$1
  while :; do
    if [ -e "$a" ] || [ -L "$a" ]; then
      [ -d "$a" ] || fail not_a_directory
      [ -w "$a" ] && [ -x "$a" ] && no_room "$a"
      fail permission_denied
    fi
    a=\${a%/*}
    a=\${a:-/}
  done
}
# A write in the directory $1 failed: disk_full when its file system has no block or inode left
# for the user (df -P: the fourth field is what is available), else io_error.
no_room() {
  set -- $(df -P -- "$1" 2>/dev/null | tail -n 1) $(df -Pi -- "$1" 2>/dev/null | tail -n 1)
  if [ "$4" = 0 ] || [ "\${10}" = 0 ]; then fail disk_full; fi
  fail io_error
}
`;

/**
 * view: $1 path, $2 bytes to read at most. Writes the file's first $2 bytes to stdout; the API
 * asks for one byte more than the limit to tell a file that is too large.
 */
export const READ_SCRIPT = `${PRELUDE}
p=$1 n=$2
[ -d "$p" ] && fail is_a_directory
[ -e "$p" ] || missing "$p"
[ -f "$p" ] || fail not_a_regular_file
[ -r "$p" ] || fail permission_denied
exec head -c "$n" -- "$p"
`;

/**
 * view of a range: $1 path, $2 the file limit in bytes, $3 the first line, $4 how many lines (empty:
 * to the end). Writes a header line `NEWLINES BYTES LAST_IS_NEWLINE` of the whole file, then, unless
 * the file is over the limit, the range's exact bytes: the API gets the lines asked for, never the
 * whole file (a line count of a large file is wc's work, in the sandbox, not the API's).
 */
export const VIEW_RANGE_SCRIPT = `${PRELUDE}
p=$1 max=$2 start=$3 count=$4
[ -d "$p" ] && fail is_a_directory
[ -e "$p" ] || missing "$p"
[ -f "$p" ] || fail not_a_regular_file
[ -r "$p" ] || fail permission_denied
set -- $(wc -lc < "$p") "$(tail -c 1 -- "$p" | wc -l)"
printf '%s %s %s\n' "$1" "$2" "$3"
[ "$2" -gt "$max" ] && exit 0
[ -n "$count" ] || exec tail -n "+$start" -- "$p"
tail -n "+$start" -- "$p" | head -n "$count"
`;

/**
 * create and edit: $1 path, $2 "create" (fail when it exists) or "replace"; the content on stdin;
 * $3 "announce" to print the temporary file's name, NUL-terminated, before the content is read
 * (a streamed write: should the script be killed mid-body, the API removes it).
 * Creates the parent directories, writes a temporary file beside the target, then renames it over
 * the target (or, for "create", hard-links it, which fails when the name exists), so a reader sees
 * the old file or the new one, never half of one. A symlink is written through, as a shell's \`>\`
 * would; a replaced file keeps its mode, a new one gets 0666 less the umask. Prints 1 when the file
 * existed before, else 0. Few processes (cat, mv, and chmod for a replaced file): each costs.
 */
export const WRITE_SCRIPT = `${PRELUDE}
p=$1 mode=$2 announce=$3 t=
trap '[ -z "$t" ] || rm -f -- "$t"' EXIT
[ -d "$p" ] && fail is_a_directory
if [ "$mode" = create ] && { [ -e "$p" ] || [ -L "$p" ]; }; then fail file_exists; fi
d=\${p%/*}
d=\${d:-/}
[ -d "$d" ] || mkdir -p -- "$d" 2>/dev/null || cannot_create "$d"
r=$p
if [ -L "$p" ]; then
  if r=$(readlink -f -- "$p" 2>/dev/null && printf x); then r=\${r%?x}; else r=$p; fi
  [ -d "$r" ] && fail is_a_directory
fi
rd=\${r%/*}
# The temporary name: $$ is unique among the sandbox's live processes, and noclobber refuses a
# leftover of a killed write instead of reusing it (mktemp then picks another name).
set -C
t=$rd/.paddock-write.$$
# (A group, not ":": a redirection failing on a special built-in would end the shell.)
if ! { true; } 2>/dev/null >"$t"; then
  t=$(mktemp -- "$rd/.paddock-write.XXXXXXXXXX" 2>/dev/null) || { t=; cannot_create "\${rd:-/}"; }
  chmod -- =rw "$t"
fi
set +C
[ "$announce" = announce ] && printf '%s\\0' "$t"
cat >"$t" || fail io_error
if [ -e "$r" ]; then
  existed=1
  chmod --reference="$r" -- "$t" 2>/dev/null
else
  existed=0
fi
if [ "$mode" = create ]; then
  ln -T -- "$t" "$r" 2>/dev/null || { if [ -e "$r" ] || [ -L "$r" ]; then fail file_exists; fi; fail io_error; }
else
  # What mv cannot replace is a mount point (EBUSY): a device, or a file the runtime mounted.
  mv -f -T -- "$t" "$r" 2>/dev/null || {
    [ -d "$r" ] && fail is_a_directory
    [ -e "$r" ] || fail io_error
    [ -f "$r" ] || fail not_a_regular_file
    fail permission_denied
  }
  t=
fi
printf %s "$existed"
`;

/**
 * ls: $1 directory, $2 entries at most. One record per entry, NUL-terminated:
 * "<type> <size> <mtime seconds> <name>", the type as find's %y (f d l p s c b D), the entry itself
 * (a symlink is listed as one, not followed).
 */
export const LIST_SCRIPT = `${PRELUDE}
p=$1 n=$2
[ -e "$p" ] || missing "$p"
[ -d "$p" ] || fail not_a_directory
cd -- "$p" 2>/dev/null && [ -r . ] || fail permission_denied
find . -mindepth 1 -maxdepth 1 -printf '%y %s %T@ %P\\0' 2>/dev/null | head -z -n "$n"
`;

/**
 * glob: $1 the base directory (must exist), $2 where the walk starts (the base plus the pattern's
 * literal leading directories; nothing matches when it does not exist), $3 maximum depth (0: no
 * limit), $4 1 to skip hidden entries' subtrees (when no pattern segment can match a hidden name).
 * Prints each path under $2, relative to it, NUL-terminated. Symlinks are not followed.
 */
export const GLOB_SCRIPT = `${PRELUDE}
root=$1 start=$2 depth=$3 prune=$4
[ -e "$root" ] || missing "$root"
[ -d "$root" ] || fail not_a_directory
cd -- "$start" 2>/dev/null || exit 0
set -- -mindepth 1
[ "$depth" -gt 0 ] && set -- "$@" -maxdepth "$depth"
[ "$prune" = 1 ] && set -- "$@" -name '.*' -prune -o
exec find . "$@" -printf '%P\\0' 2>/dev/null
`;

/**
 * grep: $1 the pattern (POSIX extended, GNU grep's flavour), $2 the base path (must exist), $3
 * where to search (under $2; no match when it does not exist), $4 a basename glob for --include
 * ('' for none), $5 1 for case-insensitive, $6 1 to skip hidden directories. Output is GNU grep's
 * with --null: "<path>\\0<line>:<text>\\n". Binary files are skipped, symlinks below $3 are not
 * followed. Exit status 0: matches, 1: none, 2: an error (a bad pattern says why on stderr).
 */
export const GREP_SCRIPT = `${PRELUDE}
pat=$1 root=$2 start=$3 inc=$4 icase=$5 prune=$6
[ -e "$root" ] || missing "$root"
[ -e "$start" ] || exit 1
set -- -r -n -H -I -Z -E -s --color=never
[ -n "$inc" ] && set -- "$@" --include="$inc"
[ "$icase" = 1 ] && set -- "$@" -i
[ "$prune" = 1 ] && set -- "$@" --exclude-dir='.*'
exec grep "$@" -e "$pat" -- "$start"
`;
