import { PRELUDE } from './scripts.ts';

// The archive routes' scripts: Paddock's own `tar` (GNU tar, as in every Debian-based image),
// run inside the sandbox as its user, so the sandbox's own view of its file system confines every
// path an archive names, and the work (compression, a gzip bomb's expansion) is the sandbox's:
// its CPU, its memory, its disk quota. Values from the request are positional parameters, and
// reach tar as absolute paths or after `--`, never where they could be read as an option.

/**
 * download: $1 path, $2 "gzip" or "tar". Writes the archive to stdout: a directory's contents as
 * `./…` members; any other path (a file, a symlink) as the one member named by its last component.
 * It stays on the file system of the path (--one-file-system: below "/", the kernel's /proc, /sys
 * and /dev, the host's read-only userland and other mounts are left out, each to be fetched on its
 * own), and a file the sandbox user cannot read is left out with a warning rather than cutting the
 * download short (--ignore-failed-read).
 */
export const ARCHIVE_SCRIPT = `${PRELUDE}
p=$1 z=$2
[ -e "$p" ] || [ -L "$p" ] || missing "$p"
if [ -d "$p" ]; then
  [ -r "$p" ] && [ -x "$p" ] || fail permission_denied
  d=$p n=.
else
  d=\${p%/*} n=\${p##*/}
  d=\${d:-/}
fi
set -- -c -f - --directory="$d" --one-file-system --ignore-failed-read
[ "$z" = gzip ] && set -- "$@" --gzip
LC_ALL=C exec tar "$@" -- "$n"
`;

/**
 * upload: $1 directory, $2 "gzip" or "tar"; the archive on stdin. Creates the directory when it is
 * missing, and says so first (one line, "made=1" or "made=0"), so that an upload cut short can take
 * away what it alone created. Then tar lists each member it extracts on stdout, one a line.
 *
 * GNU tar refuses members whose names or hard-link targets hold "..", creates symlinks that point
 * outside (absolute, or with "..") only once every other member is extracted, so no member is
 * written through one, strips a leading "/" (the API refuses such an archive on the warning it
 * prints), restores neither owners (--no-same-owner) nor set-id bits and modes beyond the umask
 * (--no-same-permissions), and cannot make device nodes as an unprivileged user.
 */
export const EXTRACT_SCRIPT = `${PRELUDE}
p=$1 z=$2 made=0
if [ -e "$p" ] || [ -L "$p" ]; then
  [ -d "$p" ] || fail not_a_directory
else
  mkdir -p -- "$p" 2>/dev/null || cannot_create "$p"
  made=1
fi
printf 'made=%s\\n' "$made"
[ -w "$p" ] && [ -x "$p" ] || fail permission_denied
umask 022
set -- -x -v -f - --directory="$p" --no-same-owner --no-same-permissions --no-overwrite-dir
[ "$z" = gzip ] && set -- "$@" --gzip
LC_ALL=C exec tar "$@"
`;

/** Removes the directory $1 an upload created and did not finish. */
export const REMOVE_TREE_SCRIPT = `rm -rf -- "$1"`;
