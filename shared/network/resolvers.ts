import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';

// The DNS servers Paddock resolves sandboxes' names with (PADDOCK_EGRESS_RESOLVERS), for the
// names a sandbox's egress policy allows (shared/runtime/local/egress-resolver.ts).

export interface Upstream {
  address: string;
  port: number;
}

/**
 * The upstream servers: PADDOCK_EGRESS_RESOLVERS's comma-separated addresses (`198.51.100.2`,
 * `198.51.100.2:5353`, `[2001:db8::1]:53`), or the host's /etc/resolv.conf nameservers; throws
 * when the setting is not such a list.
 */
export function parseUpstreams(setting: string | undefined): Upstream[] {
  if (setting === undefined || setting.trim() === '') {
    const conf = (() => {
      try {
        return readFileSync('/etc/resolv.conf', 'utf8');
      } catch {
        return '';
      }
    })();
    return conf
      .split('\n')
      .map((line) => /^\s*nameserver\s+(\S+)/.exec(line)?.[1])
      .filter((address): address is string => address !== undefined && isIP(address.replace(/%.*$/, '')) !== 0)
      .map((address) => ({ address: address.replace(/%.*$/, ''), port: 53 }));
  }
  return setting.split(',').map((raw) => {
    const text = raw.trim();
    const bracketed = /^\[([^\]]+)\](?::([0-9]{1,5}))?$/.exec(text);
    const plain = /^([0-9.]+)(?::([0-9]{1,5}))?$/.exec(text);
    const [address, port] = bracketed ? [bracketed[1]!, bracketed[2]] : plain ? [plain[1]!, plain[2]] : [text, undefined];
    const portNumber = port === undefined ? 53 : Number(port);
    if (isIP(address) === 0 || portNumber < 1 || portNumber > 65_535) throw new RangeError(`not a resolver address: ${JSON.stringify(text)} (198.51.100.2, 198.51.100.2:5353, [2001:db8::1]:53)`);
    return { address, port: portNumber };
  });
}
