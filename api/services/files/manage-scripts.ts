import { PRELUDE } from './scripts.ts';

// The scripts of the routes that remove, move, make and describe paths. They run as scripts.ts's
// do (in the sandbox, as its user, values as positional parameters), so the sandbox's own view of
// its file system confines every path: a symlink that points out points at the sandbox's own
// `/`, and the kernel refuses what the user may not touch.

/**
 * Why a tool (its LC_ALL=C message in $1) could not change a path: what the user may not change
 * (a read-only place, another user's file, a mount point such as /workspace itself) is
 * permission_denied; anything else the tool's own words, as io_error.
 */
const REFUSED = `
refused() {
  case $1 in
    *"Permission denied"*|*"Operation not permitted"*|*"Read-only file system"*|*"Device or resource busy"*) fail permission_denied ;;
    *"No space left"*|*"Disk quota exceeded"*) fail disk_full ;;
  esac
  printf '%s\\n' "$1" >&2
  fail io_error
}
`;

/**
 * remove: $1 path, $2 1 to remove a directory with its entries. A symlink is removed itself, never
 * what it points at; a directory without $2 only when it is empty, and with it only when the
 * directory itself can go: nothing is emptied to then fail.
 */
export const REMOVE_SCRIPT = `${PRELUDE}${REFUSED}
p=$1 recursive=$2
[ -e "$p" ] || [ -L "$p" ] || missing "$p"
if [ -d "$p" ] && [ ! -L "$p" ]; then
  # A directory that cannot itself go (its parent is read-only or not the user's, or it is a mount
  # point such as /workspace) is refused before anything in it is removed.
  [ -w "$p/.." ] && [ "$(stat -c %d -- "$p")" = "$(stat -c %d -- "$p/..")" ] || fail permission_denied
  if [ "$recursive" = 1 ]; then
    out=$(LC_ALL=C rm -rf -- "$p" 2>&1) || refused "$out"
  else
    out=$(LC_ALL=C rmdir -- "$p" 2>&1) || case $out in *"not empty"*) fail directory_not_empty ;; *) refused "$out" ;; esac
  fi
else
  out=$(LC_ALL=C rm -f -- "$p" 2>&1) || refused "$out"
fi
`;

/**
 * move: $1 from, $2 to, $3 1 to replace what is at $2. $2 is the new name itself (mv -T), never a
 * directory to move into; its parent directories are made. A symlink is moved itself; a path moved
 * onto itself (the same normalised name) stays, a success.
 */
export const MOVE_SCRIPT = `${PRELUDE}${REFUSED}
f=$1 t=$2 overwrite=$3
[ -e "$f" ] || [ -L "$f" ] || missing "$f"
# Onto itself: already where it is asked to be.
[ "$f" = "$t" ] && exit 0
# What cannot leave its place (a mount point such as /workspace, or anything in a read-only or
# another user's directory) is refused before mv would copy it elsewhere and then empty it.
fd=\${f%/*}
fd=\${fd:-/}
[ -w "$fd" ] && [ "$(stat -c %d -- "$f")" = "$(stat -c %d -- "$fd")" ] || fail permission_denied
if [ "$overwrite" != 1 ] && { [ -e "$t" ] || [ -L "$t" ]; }; then fail file_exists; fi
d=\${t%/*}
d=\${d:-/}
[ -d "$d" ] || mkdir -p -- "$d" 2>/dev/null || cannot_create "$d"
out=$(LC_ALL=C mv -f -T -- "$f" "$t" 2>&1) || case $out in
  *"subdirectory of itself"*|*"to itself"*) fail into_itself ;;
  *"not empty"*|*"Directory not empty"*) fail directory_not_empty ;;
  *"cannot overwrite directory"*) fail is_a_directory ;;
  *"cannot overwrite non-directory"*) fail not_a_directory ;;
  *) refused "$out" ;;
esac
`;

/** mkdir: $1 path, made with its parents; an existing directory (or a symlink to one) is success. */
export const MKDIR_SCRIPT = `${PRELUDE}
p=$1
[ -d "$p" ] && exit 0
if [ -e "$p" ] || [ -L "$p" ]; then fail file_exists; fi
mkdir -p -- "$p" 2>/dev/null || cannot_create "$p"
`;

/**
 * stat: $1 path. One record, NUL-terminated: "<type> <size> <mode> <mtime seconds> <target>", the
 * type as find's %y, the mode in octal, the target a symlink's (empty for anything else). A final
 * symlink is described, not followed.
 */
export const STAT_SCRIPT = `${PRELUDE}
p=$1
[ -e "$p" ] || [ -L "$p" ] || missing "$p"
exec find "$p" -maxdepth 0 -printf '%y %s %m %T@ %l\\0'
`;
