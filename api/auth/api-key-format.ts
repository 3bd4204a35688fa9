import { hash, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';
import { randomString } from '../../shared/ids.ts';

// pdk_live_ + 44 random base62 characters (about 262 bits) + a 6-character base62 CRC32 of them,
// as GitHub's tokens do: a mistyped or truncated key is refused without touching the database.
export const KEY_PREFIX = 'pdk_live_';
const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const SECRET_LENGTH = 44;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = new RegExp(`^${KEY_PREFIX}[0-9A-Za-z]{${SECRET_LENGTH + CHECKSUM_LENGTH}}$`);

function checksum(secret: string): string {
  let n = crc32(secret);
  let out = '';
  for (let i = 0; i < CHECKSUM_LENGTH; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

export function generateApiKey(): string {
  const secret = randomString(SECRET_LENGTH, BASE62);
  return `${KEY_PREFIX}${secret}${checksum(secret)}`;
}

/** True when the key has the right shape and its checksum matches. */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const body = key.slice(KEY_PREFIX.length);
  const expected = Buffer.from(checksum(body.slice(0, SECRET_LENGTH)));
  return timingSafeEqual(expected, Buffer.from(body.slice(SECRET_LENGTH)));
}

export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(KEY_PREFIX);
}

/**
 * The stored form of a key. The key has 262 bits of entropy, so a plain SHA-256 cannot be
 * brute-forced and costs microseconds: the hot path never runs a key-derivation function.
 */
export function hashApiKey(key: string): string {
  // One call, no Hash object: this runs on every request with a key.
  return hash('sha256', key, 'hex');
}

/** What a listing shows so a person can tell keys apart: the prefix and four characters. */
export function keyStart(key: string): string {
  return key.slice(0, KEY_PREFIX.length + 4);
}
