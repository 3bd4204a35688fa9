import * as scryptModule from 'scrypt-kdf';

// scrypt-kdf 4 ships only a default export although its typings declare named ones.
const scrypt = (scryptModule as unknown as { default: typeof scryptModule }).default;

export interface PasswordHasher {
  hash(password: string): Promise<string>;
  /** Constant-ish time: an unknown account still pays for one full verification. */
  verify(storedHash: string | undefined, password: string): Promise<boolean>;
}

export function createPasswordHasher(logN: number): PasswordHasher {
  let dummy: Promise<Uint8Array> | undefined;
  return {
    async hash(password) {
      const key = await scrypt.kdf(password, { logN, r: 8, p: 1 });
      return Buffer.from(key).toString('base64');
    },
    async verify(storedHash, password) {
      if (storedHash === undefined) {
        // Same work as a real check, so response time does not tell whether the email exists.
        dummy ??= scrypt.kdf('paddock-dummy-password', { logN, r: 8, p: 1 });
        await scrypt.verify(await dummy, password);
        return false;
      }
      return scrypt.verify(Buffer.from(storedHash, 'base64'), password);
    },
  };
}
