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

/** The restore's exit when the image has no zstd: Paddock decompresses instead. */
export const NO_ZSTD_EXIT = 22;

/**
 * take: the workspace as tar on stdout (its contents as `./…` members: modes, symlinks, empty
 * directories and modification times as tar keeps them), staying on its file system; compressed
 * by the image's zstd where it has one (a zstd frame on stdout, checksummed), else left for
 * Paddock to compress. The members' count first, on stderr, as `members=N`; tar's exit status
 * last, as `tar=N`. A file the user cannot read is left out with a warning; tar's 1, "a file
 * changed as it was read", still leaves a whole archive.
 */
export const TAKE_SCRIPT = `cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
n=$(find . -xdev ! -path . 2>/dev/null | wc -l)
printf 'members=%s\\n' "\${n##* }" >&2
if command -v zstd >/dev/null 2>&1; then
  { LC_ALL=C tar -c -f - --one-file-system --ignore-failed-read .; printf 'tar=%s\\n' $? >&2; } | zstd -3 -q -c --check || exit ${ZSTD_FAILED_EXIT}
else
  LC_ALL=C tar -c -f - --one-file-system --ignore-failed-read .
  printf 'tar=%s\\n' $? >&2
fi
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
 * Before a final snapshot (snapshotOnDestroy): every process of the sandbox killed, so that none
 * runs past the sandbox's end and the workspace holds still while it is copied. kill(-1) reaches
 * every process the caller may signal but itself and the pid namespace's init (Paddock's: the
 * local agent or init, the pod's keeper); a fork racing it is restarted with the signal pending,
 * and the second pass takes what the first may have missed. On Kubernetes the exec's own wrapper
 * goes too, so its answer is not read.
 */
export const HALT_SCRIPT = 'kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; exit 0';
