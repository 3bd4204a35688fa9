import { randomBytes } from 'node:crypto';

const ALPHABET = '0123456789abcdefghijklmnopqrstuvwxyz';

// Lower-case letters and digits only, so that an id is a valid Kubernetes object name as it is.
export type IdPrefix = 'acct' | 'key' | 'sbx' | 'evt' | 'wh' | 'proc' | 'prv' | 'snap';

/** A random id: the prefix, an underscore and 24 characters of [0-9a-z] (about 124 bits). */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomString(24, ALPHABET)}`;
}

export function isId(prefix: IdPrefix, value: string): boolean {
  return new RegExp(`^${prefix}_[0-9a-z]{24}$`).test(value);
}

/** Uniformly random characters from the alphabet (rejection sampling, no modulo bias). */
export function randomString(length: number, alphabet: string): string {
  const limit = 256 - (256 % alphabet.length);
  let out = '';
  while (out.length < length) {
    for (const byte of randomBytes(length * 2)) {
      if (byte < limit) out += alphabet[byte % alphabet.length];
      if (out.length === length) break;
    }
  }
  return out;
}
