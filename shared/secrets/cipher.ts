import { createCipheriv, createDecipheriv, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';

const VERSION = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;
const HEADER_BYTES = 1 + IV_BYTES + TAG_BYTES;

/**
 * AES-256-GCM with a fresh random IV per value. The stored form is
 * version (1 byte) ‖ IV (12) ‖ tag (16) ‖ ciphertext. `context` is authenticated additional data
 * (account, sandbox and name), so a ciphertext copied to another row does not decrypt.
 *
 * Key rotation: values are encrypted with the current key only, and decrypted with the current
 * key or any previous one (PADDOCK_SECRETS_KEY_PREVIOUS) until scripts/reencrypt-secrets.ts has
 * moved them to the current key.
 */
export class SecretCipher {
  /**
   * The current key first, then the previous ones. As key objects, made once: given as bytes, each
   * cipher made one of its own, and an exec decrypts every secret of its account (a quarter of
   * the time per secret this way).
   */
  private readonly keys: KeyObject[];

  constructor(hexKey: string, previousHexKeys: readonly string[] = []) {
    this.keys = [hexKey, ...previousHexKeys].map((hex) => {
      const key = Buffer.from(hex, 'hex');
      if (key.length !== 32) throw new Error('the secrets key must be 32 bytes (64 hex characters)');
      return createSecretKey(key);
    });
  }

  encrypt(plaintext: string, context: string): Buffer {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0]!, iv);
    cipher.setAAD(Buffer.from(context));
    const ciphertext = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
    return Buffer.concat([Buffer.from([VERSION]), iv, cipher.getAuthTag(), ciphertext]);
  }

  decrypt(stored: Buffer, context: string): string {
    return this.open(stored, context).plaintext;
  }

  /**
   * Decrypts with the current key, then each previous one; `current` says whether the current
   * key did it. Throws, as for a tampered value, when no key authenticates it.
   */
  open(stored: Buffer, context: string): { plaintext: string; current: boolean } {
    if (stored[0] !== VERSION || stored.length < HEADER_BYTES) throw new Error('unknown secret format');
    let firstFailure: unknown;
    for (const [i, key] of this.keys.entries()) {
      try {
        return { plaintext: decryptWith(key, stored, context), current: i === 0 };
      } catch (err) {
        // The form was checked above, so a failure here is GCM's authentication: not this key.
        firstFailure ??= err;
      }
    }
    throw firstFailure;
  }
}

function decryptWith(key: KeyObject, stored: Buffer, context: string): string {
  const iv = stored.subarray(1, 1 + IV_BYTES);
  const tag = stored.subarray(1 + IV_BYTES, HEADER_BYTES);
  const decipher = createDecipheriv('aes-256-gcm', key, iv);
  decipher.setAAD(Buffer.from(context));
  decipher.setAuthTag(tag);
  return Buffer.concat([decipher.update(stored.subarray(HEADER_BYTES)), decipher.final()]).toString('utf8');
}

export function secretContext(accountId: string, sandboxId: string | null, name: string): string {
  return `${accountId}\u0000${sandboxId ?? ''}\u0000${name}`;
}
