// Fixed bounds of the file routes. The size of one file is the operator's (PADDOCK_FILE_MAX_BYTES);
// these bound everything else a single request may cost the API or the sandbox.

/** How long one file operation (view, create, edit, ls) may run in the sandbox. */
export const FILE_OP_TIMEOUT_MS = 10_000;
/** How long a glob or grep walk may run; what it found by then is answered with `truncated`. */
export const SEARCH_TIMEOUT_MS = 10_000;

/** Paths: as the kernel's PATH_MAX, in UTF-8 bytes. */
export const MAX_PATH_BYTES = 4096;
/** One component of a path: as the kernel's NAME_MAX, in UTF-8 bytes. */
export const MAX_NAME_BYTES = 255;
/** Glob and grep patterns, in characters. */
export const MAX_PATTERN_LENGTH = 1024;
/** How many patterns one glob with braces may expand to (`{a,b}/{c,d}` is 4). */
export const MAX_BRACE_EXPANSIONS = 64;

export const LS_MAX_ENTRIES = 1000;
export const GLOB_MAX_MATCHES = 1000;
/** Entries a glob walk may look at before it stops with `truncated`. */
export const GLOB_MAX_SCANNED = 200_000;
/**
 * Matching steps one glob may spend in the API (a character compared, a pair of pattern and path
 * segments tried): about 100 ms of the event loop at most, whatever the pattern and the tree.
 * Past it the answer is `truncated`.
 */
export const GLOB_MAX_MATCH_STEPS = 20_000_000;
export const GREP_MAX_MATCHES = 1000;
/** A matching line longer than this many characters is cut (the match's `text` only). */
export const GREP_MAX_LINE_CHARS = 2000;
/** Bytes of grep output read at most; long lines count whole, so this is the real bound. */
export const GREP_MAX_OUTPUT_BYTES = 8 * 1024 * 1024;
/** Bytes of stderr kept from any script (enough for its error marker and a message). */
export const MAX_STDERR_BYTES = 16 * 1024;
