export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** The exec path's own variables inside a sandbox (see shared/runtime/exec-frame.ts). */
export const RESERVED_ENV_PREFIX = '__PADDOCK_';

/**
 * A name that matches the pattern but cannot be a command's variable: `__proto__`, which a plain
 * JavaScript object cannot hold as its own key (assigning it sets the prototype), and the names
 * the exec path keeps for itself.
 */
export const isReservedKey = (name: string): boolean => name === '__proto__' || name.startsWith(RESERVED_ENV_PREFIX);
