import { spawn } from 'node:child_process';
import { access, chmod, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { withLock } from './lock.ts';
import { NETWORK_PROGRAM_ENV } from './nft.ts';

// The egress's certificate authority (egress-broker.ts), one per data directory: made by the first
// runtime that needs it, with openssl, under a host-wide lock. Its key is root's alone and never
// leaves the host's side; its certificate is public, and every sandbox of the host trusts it
// (launch.ts binds `trust` into each): a bundle of the host's own authorities and it, where
// programs look for them, and the certificate alone for Node's NODE_EXTRA_CA_CERTS.

/** The host's bundle of trusted authorities (Debian's ca-certificates). */
export const SYSTEM_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';
/** Where a sandbox finds the egress's certificate alone. */
export const SANDBOX_CA_PATH = '/etc/ssl/egress-ca.pem';
const CA_DAYS = 3650;
const OPENSSL_TIMEOUT_MS = 10_000;

export interface EgressCa {
  /** The certificate (PEM) and its key, root's alone. */
  cert: string;
  key: string;
  /** The key of every certificate the broker makes for a name, root's alone. */
  leafKey: string;
  /** What sandboxes trust: the host's bundle with the certificate appended; the certificate alone. */
  trust: { bundle: string; ca: string };
}

/** The data directory's authority, made first if it has none. */
export async function ensureEgressCa(options: { root: string; openssl: string; lockPrefix: string; deadline: number }): Promise<EgressCa> {
  const dir = join(options.root, 'egress-ca');
  const ca: EgressCa = {
    cert: join(dir, 'ca.pem'),
    key: join(dir, 'ca.key'),
    leafKey: join(dir, 'leaf.key'),
    trust: { bundle: join(dir, 'trusted.pem'), ca: join(dir, 'ca.pem') },
  };
  // Every runtime's start asks: whether the files are there, not their bytes (the bundle is a few hundred KB).
  const made = () => Promise.all([access(ca.trust.bundle), access(ca.key)]).then(() => true, () => false);
  if (await made()) return ca;
  await withLock(`${options.lockPrefix}/egress-ca`, options.deadline, async () => {
    if (await made()) return;
    await mkdir(dir, { recursive: true, mode: 0o755 });
    const work = join(dir, `.new.${process.pid}`);
    await rm(work, { recursive: true, force: true });
    await mkdir(work, { mode: 0o700 });
    try {
      await openssl(options.openssl, [
        'req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
        '-keyout', join(work, 'ca.key'), '-out', join(work, 'ca.pem'), '-days', String(CA_DAYS),
        '-subj', '/O=Paddock/CN=Paddock egress CA',
        '-addext', 'basicConstraints=critical,CA:TRUE,pathlen:0',
        '-addext', 'keyUsage=critical,keyCertSign,cRLSign',
      ]);
      await openssl(options.openssl, ['genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', join(work, 'leaf.key')]);
      const cert = await readFile(join(work, 'ca.pem'), 'utf8');
      const system = await readFile(SYSTEM_BUNDLE, 'utf8').catch(() => '');
      await writeFile(join(work, 'trusted.pem'), `${system}${system.endsWith('\n') || system === '' ? '' : '\n'}${cert}`, { mode: 0o644 });
      await chmod(join(work, 'ca.key'), 0o600);
      await chmod(join(work, 'leaf.key'), 0o600);
      await chmod(join(work, 'ca.pem'), 0o644);
      // The key first, the bundle last: `made` looks for the bundle.
      await rename(join(work, 'ca.key'), ca.key);
      await rename(join(work, 'leaf.key'), ca.leafKey);
      await rename(join(work, 'ca.pem'), ca.cert);
      await rename(join(work, 'trusted.pem'), ca.trust.bundle);
    } finally {
      await rm(work, { recursive: true, force: true });
    }
  });
  return ca;
}

/** Runs openssl; its stdout, or a rejection with what it said. */
export function openssl(program: string, args: string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(program, args, { cwd: '/', env: NETWORK_PROGRAM_ENV, stdio: ['ignore', 'pipe', 'pipe'], timeout: OPENSSL_TIMEOUT_MS });
    let out = '';
    let said = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (said = (said + chunk).slice(-2000)));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`openssl exited with ${code}: ${said.trim()}`))));
  });
}
