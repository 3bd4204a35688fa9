import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { PermanentRuntimeError } from '../types.ts';
import { EGRESS_TABLE, egressRuleset, hostAddresses, policyUpdate, REFUSED_COUNTER, resolvedByPaddock, SLIRP, type InstalledPolicy } from './egress-filter.ts';
import type { NetworkPolicy } from '../../network/policy.ts';
import { nameRules } from '../../network/rules.ts';
import type { BrokeredCredential } from '../../network/brokered.ts';
import { answeredNames, dnsRefusals, ensureResolver, newTag, readInstalled, stopResolver, writeInstalled, type ResolverTarget } from './egress-resolver-process.ts';
import { carriedOver } from './egress-resolver.ts';
import { sandboxMarker } from './launch.ts';
import { untilReady } from './ready-signal.ts';
import { NETWORK_PROGRAM_ENV, nftIn } from './nft.ts';

// Network for a sandbox whose policy opens any (shared/network/policy.ts), set up by root while bubblewrap
// holds the init: the sandbox keeps the network namespace of its own that bubblewrap made, root
// installs the egress filter in it, and slirp4netns gives it a tap device whose traffic leaves
// through user-mode sockets on the host. Nothing in the sandbox has a capability over that
// namespace, so the filter holds whatever the sandbox runs.
//
// slirp4netns runs as root (the host's /dev/net/tun may be root's alone), and locks itself down
// at once: its own mount namespace with only /etc and /run, every capability but
// NET_BIND_SERVICE dropped, no new privileges, and a seccomp filter. --disable-host-loopback
// stops its gateway (10.0.2.2) from forwarding to the host's 127.0.0.1, which the filter refuses
// as well. Its first argument is the sandbox's marker, as the init's last one is, so a teardown
// that has no state (its creator died) finds and kills it; it also joins the sandbox's cgroups.
// A sandbox whose policy names domains is served by the host's resolver (egress-resolver-process.ts).


/** A sandbox's network as the runtime reaches it, its resolver's settings too. */
export interface NetworkTarget extends ResolverTarget {
  slirp4netns: string;
  /** Where slirp4netns and nft say what went wrong. */
  logFile: string;
  /** Puts slirp4netns into the sandbox's cgroups, right after it starts. */
  admit(pid: number): Promise<void>;
  /** The sandbox's egress, within the floor. */
  policy: NetworkPolicy;
}

/**
 * Installs the egress filter, then starts slirp4netns and waits for its device, then the
 * sandbox's resolver when its policy names domains; slirp4netns's pid.
 */
export async function attachNetwork(target: NetworkTarget): Promise<number> {
  const netns = `/proc/${target.pid}/ns/net`;
  const installed = { policy: target.policy, tag: newTag() };
  // Before the device exists: nothing leaves the namespace unfiltered, not for a moment.
  await runNft(target, netns, egressRuleset({ hostAddresses: hostAddresses(), installed }), 'install');
  await writeInstalled(target.files, installed);
  const log = openSync(target.logFile, 'a', 0o600);
  const slirp = (() => {
    try {
      const args = [
        '--configure',
        `--mtu=${SLIRP.mtu}`,
        '--disable-host-loopback',
        '--enable-sandbox',
        '--enable-seccomp',
        '--ready-fd=3',
        '--netns-type=path',
        netns,
        SLIRP.tap,
      ];
      // Its own session, like the init: it lives as long as the sandbox, not as its creator.
      return spawn(target.slirp4netns, args, {
        argv0: sandboxMarker(target.id),
        detached: true,
        cwd: '/',
        env: NETWORK_PROGRAM_ENV,
        stdio: ['ignore', log, log, 'pipe'],
      });
    } finally {
      closeSync(log);
    }
  })();
  let pid: number;
  try {
    pid = await untilReady(slirp, { what: 'slirp4netns', deadline: target.deadline, admit: target.admit });
  } catch (err) {
    const said = (await readFile(target.logFile, 'utf8').catch(() => '')).trim();
    throw said ? new PermanentRuntimeError(`could not give the sandbox its network: ${said}`) : err;
  }
  if (resolvedByPaddock(installed)) await ensureResolver(target);
  return pid;
}

/**
 * What the sandbox's egress refused so far: packets its filter refused (a refused connection is
 * one), and names its resolver refused; undefined when the filter cannot be read.
 */
export async function refusedSoFar(target: Pick<NetworkTarget, 'pid' | 'nsenter' | 'nft' | 'files'>): Promise<number | undefined> {
  const listed = await nftIn(target, `/proc/${target.pid}/ns/net`, ['-j', 'list', 'counter', 'inet', EGRESS_TABLE, REFUSED_COUNTER]).catch(() => undefined);
  if (listed?.code !== 0) return undefined;
  try {
    const counted = (JSON.parse(listed.out) as { nftables?: { counter?: { packets?: number } }[] }).nftables?.find((item) => item.counter)?.counter?.packets;
    return typeof counted === 'number' ? counted + (await dnsRefusals(target.files)) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The running sandbox's policy replaced (its filter installed when its network was attached):
 * the filter's in one transaction, then the policy the resolver reads; the resolver told to
 * serve the sandbox for a policy that names domains, and to forget it for one that names none.
 */
export async function changePolicy(target: ResolverTarget, policy: NetworkPolicy): Promise<void> {
  const previous = await readInstalled(target.files);
  await install(target, previous, { policy, tag: newTag(), ...(previous?.brokered ? { brokered: previous.brokered } : {}) });
}

/**
 * The running sandbox's brokered credentials replaced: their hosts where its resolver reads them
 * (with its filter changed when that starts or stops sending its DNS to Paddock's resolver), and
 * the credentials themselves to the resolver's broker, which alone holds them.
 */
export async function changeBrokered(target: ResolverTarget, credentials: readonly BrokeredCredential[]): Promise<void> {
  const previous = await readInstalled(target.files);
  if (!previous) return;
  const hosts = [...new Set(credentials.flatMap((c) => c.hosts))].sort();
  const installed: InstalledPolicy = { ...previous, brokered: hosts };
  if (hosts.length === 0) delete installed.brokered;
  const same = (previous.brokered ?? []).join(' ') === hosts.join(' ');
  if (!same && resolvedByPaddock(previous) !== resolvedByPaddock(installed)) await install(target, previous, { ...installed, tag: newTag() }, credentials);
  else {
    if (!same) await writeInstalled(target.files, installed);
    if (resolvedByPaddock(installed)) await ensureResolver(target, credentials);
  }
}

/** A policy installed in place of `previous`, in one transaction, then to the resolver. */
async function install(target: ResolverTarget, previous: InstalledPolicy | undefined, installed: InstalledPolicy, credentials?: readonly BrokeredCredential[]): Promise<void> {
  // What the names the new policy still allows were answered with stays open, in the same transaction.
  const carried = carriedOver(nameRules(installed.policy), previous && nameRules(previous.policy).length > 0 ? await answeredNames(target) : []);
  await runNft(target, `/proc/${target.pid}/ns/net`, policyUpdate(installed, previous?.tag, carried), 'change');
  await writeInstalled(target.files, installed);
  if (resolvedByPaddock(installed)) await ensureResolver(target, credentials);
  else await stopResolver(target);
}

async function runNft(target: Pick<NetworkTarget, 'nsenter' | 'nft'>, netns: string, script: string, what: 'install' | 'change'): Promise<void> {
  const ran = await nftIn(target, netns, ['-f', '-'], script);
  if (ran.code !== 0) throw new PermanentRuntimeError(`could not ${what} the sandbox's egress filter: ${ran.said.trim()}`);
}
