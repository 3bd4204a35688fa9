// `npm run secrets:reencrypt [-- --batch-size N]`: after the secrets key was rotated
// (docs/deploy.md), moves every stored secret to the current PADDOCK_SECRETS_KEY. A secret the
// current key reads is left alone; one a previous key (PADDOCK_SECRETS_KEY_PREVIOUS) reads is
// encrypted again with the current key. Each write applies only if the row still holds what was
// read, so the script may be run again, and run while the API serves (a row changed meanwhile is
// read again). Prints a JSON summary on stdout; exits 1 if some row decrypts with no configured
// key, naming those rows' ids on stderr. It never prints a value or a key.
import { parseArgs } from 'node:util';
import { loadConfigOrExit } from '../shared/config.ts';
import { openReadPool } from '../shared/db/orm.ts';
import { SecretCipher, secretContext } from '../shared/secrets/cipher.ts';
import { findSecretRecord, replaceSecretCiphertext, secretsAfter, type SecretRecord } from '../shared/repositories/policy.ts';

type Outcome = 'reencrypted' | 'alreadyCurrent' | 'unreadable' | 'deleted';

const config = loadConfigOrExit('tool');
if (!config.PADDOCK_SECRETS_KEY) {
  process.stderr.write('Invalid configuration:\n  PADDOCK_SECRETS_KEY: is required (the key to encrypt with)\n');
  process.exit(78); // EX_CONFIG, as for any bad variable
}
const batchSize = batchSizeOf(process.argv.slice(2));
const cipher = new SecretCipher(config.PADDOCK_SECRETS_KEY, config.PADDOCK_SECRETS_KEY_PREVIOUS);
const pool = openReadPool(config.DATABASE_URL, 2);

const summary: Record<Outcome, number> = { reencrypted: 0, alreadyCurrent: 0, unreadable: 0, deleted: 0 };
const unreadable: string[] = [];
try {
  // Keyset pagination on the primary key: rows added meanwhile are met or were written with
  // the current key already; none is read twice.
  let after = '0';
  for (;;) {
    const rows = await secretsAfter(pool, after, batchSize);
    for (const row of rows) {
      const outcome = await reencrypt(row);
      summary[outcome]++;
      if (outcome === 'unreadable') unreadable.push(row.id);
    }
    if (rows.length < batchSize) break;
    after = rows.at(-1)!.id;
  }
} finally {
  await pool.end();
}

process.stdout.write(`${JSON.stringify(summary)}\n`);
if (unreadable.length > 0) {
  process.stderr.write(
    `${unreadable.length} secret(s) decrypt with neither PADDOCK_SECRETS_KEY nor PADDOCK_SECRETS_KEY_PREVIOUS; ` +
      `secrets.id: ${unreadable.join(', ')}\n`,
  );
  process.exitCode = 1;
}

async function reencrypt(first: SecretRecord): Promise<Outcome> {
  let row = first;
  for (;;) {
    const context = secretContext(row.account_id, row.sandbox_id, row.name);
    let opened: { plaintext: string; current: boolean };
    try {
      opened = cipher.open(row.ciphertext, context);
    } catch {
      return 'unreadable';
    }
    if (opened.current) return 'alreadyCurrent';
    if (await replaceSecretCiphertext(pool, row.id, row.ciphertext, cipher.encrypt(opened.plaintext, context))) return 'reencrypted';
    // Replaced or deleted since it was read (through the API, which serves meanwhile): look again.
    const again = await findSecretRecord(pool, row.id);
    if (!again) return 'deleted';
    row = again;
  }
}

function batchSizeOf(args: string[]): number {
  try {
    const { values } = parseArgs({ args, options: { 'batch-size': { type: 'string', default: '500' } } });
    const size = Number(values['batch-size']);
    if (Number.isInteger(size) && size >= 1 && size <= 10_000) return size;
    throw new Error('--batch-size: expected a whole number from 1 to 10000');
  } catch (err) {
    process.stderr.write(`${(err as Error).message}\nusage: node scripts/reencrypt-secrets.ts [--batch-size N]\n`);
    process.exit(64); // EX_USAGE
  }
}
