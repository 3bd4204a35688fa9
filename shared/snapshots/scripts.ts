// The snapshot scripts: GNU tar (as in every Debian-based image), run in the sandbox as its user,
// so the sandbox's own view of its file system confines what is read and written. A snapshot is
// stored as zstd, compressed by the image's zstd where there is one (the sandbox's CPU), else by
// Paddock, and always decompressed by Paddock: it restores into any image that has tar.

/** Where a sandbox's work lives: what a snapshot copies and a restore fills. */
export const WORKSPACE = '/workspace';

/** The scripts' exit when the workspace cannot be entered. */
export const NO_WORKSPACE_EXIT = 20;

/** The take's exit when the image's zstd failed. */
export const ZSTD_FAILED_EXIT = 21;

/** The hold's exit when the freeze was not whole. */
export const HOLD_NOT_FROZEN_EXIT = 23;

/** The restore's exit when the image has no zstd (Paddock decompresses instead), and the copy beside's when the host has none. */
export const NO_ZSTD_EXIT = 22;

/**
 * The freeze's passes at most: a pass finds only what forked while the one before ran, and a fork
 * bomb under the sandbox's process limit is stopped within a few; past these the copy goes on.
 */
const FREEZE_PASSES = 32;

/**
 * The take's first part: every process of the sandbox stopped (SIGSTOP, which no process can catch
 * or ignore) but the pid namespace's init, this script and its ancestors (the exec's own chain),
 * so that the workspace holds still while it is copied; all of them continued (SIGCONT) as the
 * script exits, however it exits but by SIGKILL (Snapshots resumes them then: RESUME_SCRIPT). No
 * process is forked until the freeze is whole (builtins only: a fork would be stopped with the
 * rest), and a pass that stops a process is followed by another, for what its forks made: parents
 * go before their children, so a stopped parent forks nothing more. The continue goes children
 * first, so that a parent (a shell with job control) finds its children running, never stopped.
 */
const FREEZE = `keep=" 1 $$ "
p=$PPID
while [ "$p" -gt 1 ] 2>/dev/null; do
  keep="$keep$p "
  read -r s < /proc/$p/stat || break
  s=\${s##*) }
  set -- $s
  p=$2
done
thaw=''
trap 'kill -CONT $thaw 2>/dev/null' EXIT
trap 'exit 143' TERM INT HUP
stopped=' '
pass=0
while [ $pass -lt ${FREEZE_PASSES} ]; do
  fresh=0
  for d in /proc/[0-9]*; do
    p=\${d#/proc/}
    case "$keep$stopped" in *" $p "*) continue ;; esac
    if kill -STOP "$p" 2>/dev/null; then stopped="$stopped$p "; thaw="$p $thaw"; fresh=1; fi
  done
  [ $fresh = 0 ] && break
  pass=$((pass + 1))
done`;

/**
 * The copy: the current directory, a workspace, as tar on stdout (its contents as `./…` members:
 * modes, symlinks, empty directories and modification times as tar keeps them), staying on its
 * file system; a sparse file's holes kept as holes (a database's or a disk image's file, larger
 * than the sandbox's disk once filled, is restored as it was); compressed by zstd where there is
 * one (a zstd frame on stdout, checksummed), else left for Paddock to compress. The members' count
 * first, on stderr, as `members=N`; tar's exit status last, as `tar=N`. A file the user cannot
 * read is left out with a warning; tar's 1, "a file changed as it was read", still leaves a whole
 * archive.
 */
const COPY = `n=$(find . -xdev ! -path . 2>/dev/null | wc -l)
printf 'members=%s\\n' "\${n##* }" >&2
if command -v zstd >/dev/null 2>&1; then
  { LC_ALL=C tar -c -f - --one-file-system --ignore-failed-read --sparse .; printf 'tar=%s\\n' $? >&2; } | zstd -3 -q -c --check || exit ${ZSTD_FAILED_EXIT}
else
  LC_ALL=C tar -c -f - --one-file-system --ignore-failed-read --sparse .
  printf 'tar=%s\\n' $? >&2
fi`;

/** take, in the sandbox: the sandbox frozen (FREEZE), then the copy (COPY), by the image's tar and zstd. */
export const TAKE_SCRIPT = `cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
${FREEZE}
${COPY}
`;

/** What the hold says once the sandbox is frozen whole. */
export const FROZEN_LINE = 'frozen';

/**
 * hold, in the sandbox: the sandbox frozen (FREEZE) while the host copies its workspace beside it
 * (COPY_BESIDE_SCRIPT), until a line on its stdin (Snapshots writes one once the copy is done) or
 * its end; FROZEN_LINE on stdout once every process is stopped. A freeze not whole within its
 * passes (a fork bomb) exits HOLD_NOT_FROZEN_EXIT, all continued: the copy is then the sandbox's
 * own (TAKE_SCRIPT), where nothing it does reaches outside it.
 *
 * Not the end of stdin alone: a command the agent forked as the freeze ran may be stopped between
 * its fork and its exec, holding a copy of every descriptor the agent had, this hold's stdin
 * included, until the hold's exit continues it. Its stdin then never ends while it runs.
 */
export const HOLD_SCRIPT = `cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
${FREEZE}
[ $fresh = 0 ] || exit ${HOLD_NOT_FROZEN_EXIT}
printf '${FROZEN_LINE}\\n'
read -r _ || :
exit 0`;

/**
 * The copy, on the host beside the frozen sandbox (runtime.execBeside), by the host's tar and
 * zstd; without a zstd it exits NO_ZSTD_EXIT before anything else, and the copy is the sandbox's.
 */
export const COPY_BESIDE_SCRIPT = `command -v zstd >/dev/null 2>&1 || exit ${NO_ZSTD_EXIT}
cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
${COPY}
`;

/**
 * restore: $1 "zstd" (stdin is the stored zstd, decompressed here by the image's zstd; without
 * one the script exits NO_ZSTD_EXIT before it reads a byte) or "tar" (stdin is the tar). Extracted
 * into the workspace, modes as they were (the user's own files, in the user's own sandbox), owners
 * the user's, modification times kept.
 */
export const RESTORE_SCRIPT = `cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
if [ "$1" = zstd ]; then
  command -v zstd >/dev/null 2>&1 || exit ${NO_ZSTD_EXIT}
  zstd -d -q -c | LC_ALL=C tar -x -f - --no-same-owner --same-permissions
  s=$?
  # The pipeline's status is tar's: zstd's refusal shows as tar's end of input, or not at all.
  exit $s
fi
LC_ALL=C exec tar -x -f - --no-same-owner --same-permissions
`;

/**
 * restore, on the host beside the sandbox before it runs (runtime.execBeside), by the host's zstd
 * and tar: stdin is the stored file; without a zstd the script exits NO_ZSTD_EXIT before it reads
 * a byte. The window zstd may take is held to what Paddock's frames ask (zstd -3: 2 MiB), as in
 * the worker's own decompressor: here the host's memory pays for it, not the sandbox's. Its
 * stderr is zstd's, its exit status last, as `zstd=N`; tar says what it has to say on stdout, and
 * the script's exit status is tar's.
 */
export const RESTORE_BESIDE_SCRIPT = `command -v zstd >/dev/null 2>&1 || exit ${NO_ZSTD_EXIT}
cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
{ zstd -d -q -c --memory=8MB; printf 'zstd=%s\n' $? >&2; } | LC_ALL=C tar -x -f - --no-same-owner --same-permissions 2>&1
`;

/**
 * After a take that did not end by itself (killed at its timeout, or its connection lost): every
 * stopped process of the sandbox continued, as the take's own exit would have.
 */
export const RESUME_SCRIPT = `for d in /proc/[0-9]*; do
  read -r s < "$d/stat" 2>/dev/null || continue
  case "\${s##*) }" in T*) kill -CONT "\${d#/proc/}" 2>/dev/null ;; esac
done
exit 0`;

/**
 * Before a final snapshot (snapshotOnDestroy): every process of the sandbox killed, so that none
 * runs past the sandbox's end and the workspace holds still while it is copied. kill(-1) reaches
 * every process the caller may signal but itself and the pid namespace's init (Paddock's: the
 * local agent or init, the pod's keeper); a fork racing it is restarted with the signal pending,
 * and the second pass takes what the first may have missed. On Kubernetes the exec's own wrapper
 * goes too, so its answer is not read.
 */
export const HALT_SCRIPT = 'kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; exit 0';
