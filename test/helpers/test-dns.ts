import { after } from 'node:test';
import { startTestDns as startDns, type TestDns } from '../../scripts/test-dns.ts';

/** A DNS server of the test's own on loopback (scripts/test-dns.ts), gone when the file's tests are. */
export async function startTestDns(): Promise<TestDns> {
  const dns = await startDns();
  after(() => dns.close());
  return dns;
}
