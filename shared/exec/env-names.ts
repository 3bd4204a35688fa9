export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * A name that matches the pattern but that a plain JavaScript object cannot hold as its own key
 * (assigning it sets the prototype): a secret of that name would never reach an exec's environment.
 */
export const isReservedKey = (name: string): boolean => name === '__proto__';
