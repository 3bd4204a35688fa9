import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A certificate authority of the tests' and benchmarks' own, and a certificate for their test
// hosts' names signed by it (openssl, in a temporary directory): what a brokered host serves,
// and what Paddock's egress trusts upstream through PADDOCK_EGRESS_UPSTREAM_CA.

export interface TestCertificates {
  /** The authority's certificate, a PEM file. */
  caFile: string;
  /** The hosts' certificate and key (PEM), for scripts/netns-host.ts's `tls`. */
  cert: string;
  key: string;
  /** The directory removed. */
  remove(): void;
}

export function makeTestCertificates(names: string[]): TestCertificates {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-test-tls-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: ['ignore', 'ignore', 'pipe'] });
  run('req', '-x509', '-new', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2',
    '-subj', '/CN=Test upstream CA', '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign');
  run('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-out', 'host.key');
  run('req', '-new', '-x509', '-key', 'host.key', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-out', 'host.pem', '-days', '2', '-subj', `/CN=${names[0]}`,
    '-addext', `subjectAltName=${names.map((name) => `DNS:${name}`).join(',')}`, '-addext', 'basicConstraints=critical,CA:FALSE');
  return {
    caFile: join(dir, 'ca.pem'),
    cert: readFileSync(join(dir, 'host.pem'), 'utf8'),
    key: readFileSync(join(dir, 'host.key'), 'utf8'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
