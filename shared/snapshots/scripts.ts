// The snapshot scripts: GNU tar (as in every Debian-based image), run in the sandbox as its user,
// so the sandbox's own view of its file system confines what is read and written, and the work
// (compression, a damaged archive's expansion) is the sandbox's: its CPU, memory and disk.

/** Where a sandbox's work lives: what a snapshot copies and a restore fills. */
export const WORKSPACE = '/workspace';

/** The scripts' exit when the workspace cannot be entered. */
export const NO_WORKSPACE_EXIT = 20;

/**
 * take: the workspace as tar.gz on stdout (its contents as `./…` members: modes, symlinks, empty
 * directories and modification times as tar keeps them), staying on its file system. The
 * members' count first, on stderr, as `members=N`. A file the user cannot read is left out with a
 * warning; tar's exit 1, "a file changed as it was read", still leaves a whole archive.
 */
export const TAKE_SCRIPT = `cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
n=$(find . -xdev ! -path . 2>/dev/null | wc -l)
printf 'members=%s\\n' "\${n##* }" >&2
LC_ALL=C exec tar -c -f - --one-file-system --ignore-failed-read --gzip .
`;

/**
 * restore: the tar.gz on stdin extracted into the workspace, modes as they were (the user's own
 * files, in the user's own sandbox), owners the user's, modification times kept.
 */
export const RESTORE_SCRIPT = `cd ${WORKSPACE} 2>/dev/null || exit ${NO_WORKSPACE_EXIT}
LC_ALL=C exec tar -x -f - --gzip --no-same-owner --same-permissions
`;
