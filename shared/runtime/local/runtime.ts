import { chmod, chown, mkdir, readdir, stat } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Duplex } from 'node:stream';
import { setTimeout as delay } from 'node:timers/promises';
import {
  type EgressSweep,
  PermanentRuntimeError,
  SandboxGoneError,
  type BesideRequest,
  type ExecRequest,
  type ExecResult,
  type TerminalRequest,
  type TerminalSession,
  type RuntimeSandbox,
  type SandboxRuntime,
  type SandboxSpec,
  type PortReads,
} from '../types.ts';
import { sandboxArgs, systemDirArgs } from './bwrap-args.ts';
import { ESSENTIAL, openCgroups, settledAll, type Cgroups } from './cgroups.ts';
import { execCommand, execCommandLine, execFrame } from './exec.ts';
import { agentBinary } from './agent/binary.ts';
import { AgentGoneError, runThroughAgent } from './agent/client.ts';
import { moveAgentDeadline } from './agent/deadline.ts';
import { openThroughAgent } from './agent/port.ts';
import { mountPts, terminalCommand } from './terminal.ts';
import { hostUidFor, runningAsRoot } from './identity.ts';
import { runOnHost } from './host-command.ts';
import { sandboxMarker } from './launch.ts';
import {
  initLogFile,
  isSandboxId,
  networkLogFile,
  egressFiles,
  prepareLayout,
  sandboxDir,
  workspaceDir,
  diskImage,
  agentSocket,
  type Layout,
} from './layout.ts';
import { isLocked, withLock } from './lock.ts';
import { killByArgument, isRunning, killQuietly, readStat, waitUntilEnded, watcherOf } from './processes.ts';
import { LOCAL_IMAGE, resolveLocalImage, type LocalRuntimeOptions } from './options.ts';
import { findPrograms, type Programs } from './programs.ts';
import { resolvedByPaddock } from './egress-filter.ts';
import { attachNetwork, changeBrokered, changePolicy, refusedSoFar } from './network.ts';
import { ensureEgressCa, SANDBOX_CA_PATH, type EgressCa } from './egress-ca.ts';
import type { BrokeredCredential } from '../../network/brokered.ts';
import { ensureResolver, readInstalled, type ResolverTarget } from './egress-resolver-process.ts';
import { parseUpstreams } from '../../network/resolvers.ts';
import { NO_EGRESS, type NetworkPolicy } from '../../network/policy.ts';
import { egressMode } from '../../network/rules.ts';
import { discard, sweepTrash } from './remove-tree.ts';
import { attachDisk, detachDisk, unmountDisk } from './disk.ts';
import { CommandSpawner } from './spawner.ts';
import { markEnding, readState, writeState, type SandboxState } from './state.ts';

const DEFAULT_CREATE_TIMEOUT_MS = 30_000;
const DESTROY_TIMEOUT_MS = 30_000;
const CLOSE_WAITS_FOR_REMOVALS_MS = 10_000;
/** Sandboxes whose refusals are read at once, each by a process of its own. */
const REFUSALS_READ_AT_ONCE = 4;

const NETWORK_NEEDS =
  'sandboxes with network (an egress policy other than none) need Paddock to run as root, with slirp4netns and nft installed';
const ENDED = 'its processes have ended (its session cap and grace passed, its init exited, or the host restarted)';
const PORTS_NEED_AGENT =
  'this sandbox runs without the sandbox agent (the host had no C compiler when it was made), and only the agent reaches its ports: ' +
  'install a C compiler (cc) and create a new sandbox to use its previews';
/** PADDOCK_LOCAL_DEADLINE_GRACE_SECONDS's default, as Kubernetes' activeDeadlineSeconds grace. */
const DEFAULT_DEADLINE_GRACE_SECONDS = 120;

/** What the runtime learns about its host once, on first use. */
interface Host {
  layout: Layout;
  cgroups: Cgroups | undefined;
  programs: Programs | undefined;
  systemDirs: string[];
  /** The agent binary new sandboxes run as their init; without it, commands go through nsenter. */
  agent: string | undefined;
  /** The egress's authority (egress-ca.ts), on a host where sandboxes may have network; every sandbox trusts it. */
  egressCa: EgressCa | undefined;
}

type Found =
  | { kind: 'running' | 'ended' | 'ending'; state: SandboxState }
  /** A directory without a state: being created, or its creator died first. */
  | { kind: 'unfinished' };

export function localRuntime(settings: LocalRuntimeOptions): SandboxRuntime {
  const log = settings.log;
  let setup: Promise<Host> | undefined;
  // States this process has read: exec's fast path, checked against /proc on every use.
  const known = new Map<string, SandboxState>();
  const spawner = new CommandSpawner();
  const diskMb = settings.diskMb ?? 0;
  // Enough for a large project tree, never more than the disk's size can format.
  const diskInodes = Math.min(settings.diskInodes ?? 131_072, diskMb * 64);
  const diskMbps = settings.diskMbps ?? 0;
  const graceMs = (settings.deadlineGraceSeconds ?? DEFAULT_DEADLINE_GRACE_SECONDS) * 1000;
  const upstreams = parseUpstreams(settings.egressResolvers);
  let sweeping: Promise<void> | undefined;
  // Destroyed sandboxes' files still being removed: close waits for them (bounded), so a
  // worker that stops leaves no trash behind and cuts no `rm` short.
  const removals = new Set<Promise<void>>();

  function host(): Promise<Host> {
    setup ??= openHost().catch((err: unknown) => {
      setup = undefined; // a later call tries again
      throw err;
    });
    return setup;
  }

  async function openHost(): Promise<Host> {
    const [layout, cgroups, programs, systemDirs, agent] = await Promise.all([
      prepareLayout(settings.dataDir),
      openCgroups({ log, root: settings.cgroupRoot, sandboxesCpuWeight: settings.sandboxesCpuWeight }),
      findPrograms(),
      systemDirArgs(),
      settings.agent === false ? undefined : agentBinary(log),
    ]);
    return { layout, cgroups, programs, systemDirs, agent, egressCa: await egressAuthority(layout, programs) };
  }

  /** The data directory's egress authority, where sandboxes may have network and openssl can make it; else none, and nothing brokered. */
  async function egressAuthority(layout: Layout, programs: Programs | undefined): Promise<EgressCa | undefined> {
    if (!(runningAsRoot && programs?.nft && programs.slirp4netns && programs.openssl)) return undefined;
    return ensureEgressCa({ root: dirname(layout.sandboxes), openssl: programs.openssl, lockPrefix: layout.lockPrefix, deadline: Date.now() + DEFAULT_CREATE_TIMEOUT_MS }).catch(
      (err: unknown) => {
        log?.warn({ err: (err as Error).message }, "could not make the egress's certificate authority; no credential is brokered");
        return undefined;
      },
    );
  }

  /** What a command's environment gains on this host: Node's trust of the egress's authority. */
  function hostEnv(h: Host): Record<string, string> {
    return h.egressCa ? { NODE_EXTRA_CA_CERTS: SANDBOX_CA_PATH } : {};
  }

  const lockName = (h: Host, id: string): string => `${h.layout.lockPrefix}/${id}`;

  async function find(h: Host, id: string): Promise<Found | undefined> {
    const dir = sandboxDir(h.layout, id);
    const recorded = await readState(dir);
    if (!recorded) return (await exists(dir)) ? { kind: 'unfinished' } : undefined;
    const { state, ending } = recorded;
    if (ending) return { kind: 'ending', state };
    return { kind: isRunning(state.pid, state.startTime) ? 'running' : 'ended', state };
  }

  async function describe(h: Host, id: string): Promise<RuntimeSandbox | undefined> {
    const found = await find(h, id);
    switch (found?.kind) {
      case undefined:
        return undefined;
      case 'running':
        return { id, accountId: found.state.accountId, status: 'running' };
      case 'ended':
        return { id, accountId: found.state.accountId, status: 'failed', reason: `the sandbox ${ENDED}` };
      case 'ending':
        return { id, accountId: found.state.accountId, status: 'terminated' };
      case 'unfinished':
        return (await isLocked(lockName(h, id)))
          ? { id, status: 'pending' }
          : { id, status: 'failed', reason: 'its creation was interrupted' };
    }
  }

  async function start(h: Host, programs: Programs, spec: SandboxSpec, deadline: number): Promise<RuntimeSandbox> {
    const dir = sandboxDir(h.layout, spec.id);
    const workspace = workspaceDir(h.layout, spec.id);
    const hostUid = hostUidFor(spec.id);
    await mkdir(dir);
    await chmod(dir, 0o711);
    await mkdir(workspace, { mode: 0o700 });
    if (runningAsRoot) await chown(workspace, hostUid, hostUid);
    let network: SandboxState['network'];
    /** The loop device of the sandbox's disk, once attached, and the programs that mount it (create checked them). */
    let device: string | undefined;
    const disking = diskMb > 0 ? diskPrograms(programs) : undefined;
    try {
      // The disk and the groups are independent: made side by side, a create waits for the slower.
      const disk = async (): Promise<void> => {
        if (!disking) return;
        device = await attachDisk(spawner.host, diskImage(h.layout, spec.id), { megabytes: diskMb, inodes: diskInodes }, hostUid);
      };
      await settledAll([disk(), h.cgroups?.create(spec.id, { memoryMb: settings.memoryMb, pidsMax: settings.pidsMax, cpus: settings.cpus ?? 1 }) ?? Promise.resolve()]);
      if (device && diskMbps > 0 && h.cgroups) {
        const limit = { device: deviceOf((await stat(device)).rdev), bytesPerSecond: diskMbps * 1_000_000 };
        if (!(await h.cgroups.limitDevice(spec.id, limit)) && h.cgroups.limited.io === 'v2') {
          log?.warn({ sandboxId: spec.id, device: limit.device }, 'could not cap the sandbox disk\'s bandwidth (io.max); it runs without');
        }
      }
      const cgroupDir = h.agent && runningAsRoot ? await h.cgroups?.delegate(spec.id, hostUid) : undefined;
      const args = sandboxArgs({
        systemDirs: h.systemDirs,
        workspace,
      });
      const request = {
        bwrap: programs.bwrap,
        id: spec.id,
        args,
        hostUid,
        logFile: initLogFile(h.layout, spec.id),
        // The cap counts from now (the worker computed it from expiresAt just before this create).
        endsAt: Date.now() + spec.capSeconds * 1000 + graceMs,
        ...(h.agent ? { agent: { binary: h.agent, socket: agentSocket(h.layout, spec.id), cgroupDir } } : {}),
        ...(h.cgroups ? { admitTo: h.cgroups.initProcsFiles(spec.id, { cpuOnceReady: true }) } : {}),
        ...(device && disking ? { disk: { device, workspace, programs: disking } } : {}),
        ...(h.egressCa ? { trust: h.egressCa.trust } : {}),
        deadline,
      };
      // Only a sandbox with network needs this process while its init is held: outbound network
      // through slirp4netns, filtered so that nothing of the host or its private networks is
      // reached (egress-filter.ts); otherwise a sandbox has only its own loopback.
      const policy = spec.network ?? NO_EGRESS;
      const withItsNetwork = async (initPid: number) => {
        network = await withNetwork(h, programs, spec.id, initPid, deadline, policy);
      };
      const { pid, startTime } = await spawner.launch(request, egressMode(policy) === 'none' ? undefined : withItsNetwork);
      // Ready, and nothing of the tenant's has run: the sandbox joins its CPU group before its first command.
      await h.cgroups?.admitInitToCpu(spec.id, pid);
      // Root alone may mount. Without its devpts the sandbox still runs, and only its terminals
      // fail (socat's complaint is their output).
      if (runningAsRoot && programs.mount) {
        await mountPts(spawner.host, programs.nsenter, programs.mount, pid).catch((err: unknown) =>
          log?.warn({ sandboxId: spec.id, err }, 'could not mount the sandbox its own devpts; its terminals will not open'),
        );
      }
      const createdAt = new Date().toISOString();
      const state: SandboxState = {
        id: spec.id,
        accountId: spec.accountId,
        pid,
        startTime,
        hostUid,
        createdAt,
        ...(h.agent ? { agent: true } : {}),
        ...(network ? { network } : {}),
      };
      await writeState(dir, state);
      known.set(spec.id, state);
      log?.info({ sandboxId: spec.id, pid, hostUid }, 'sandbox started');
      return { id: spec.id, accountId: spec.accountId, status: 'running' };
    } catch (err) {
      // A device the launch never mounted is still attached: no unmount would free it.
      if (device) await detachDisk(spawner.host, diskImage(h.layout, spec.id));
      await teardown(h, spec.id, undefined, Date.now() + DESTROY_TIMEOUT_MS).catch((cleanup: unknown) =>
        log?.error({ sandboxId: spec.id, err: cleanup }, 'could not clean up after a failed start'),
      );
      throw err;
    }
  }

  async function withNetwork(
    h: Host,
    programs: Programs,
    id: string,
    initPid: number,
    deadline: number,
    policy: NetworkPolicy,
  ): Promise<SandboxState['network']> {
    const { slirp4netns, nft } = programs;
    // Checked in create: here for the types.
    if (!slirp4netns || !nft) throw new PermanentRuntimeError(NETWORK_NEEDS);
    const pid = await attachNetwork({
      ...resolverTarget(h, programs, id, initPid, deadline),
      slirp4netns,
      logFile: networkLogFile(h.layout, id),
      admit: async (slirp) => h.cgroups?.admitInit(id, slirp),
      policy,
    });
    const stat = readStat(pid);
    if (!stat) throw new PermanentRuntimeError('slirp4netns ended as soon as it started');
    return { pid, startTime: stat.startTime };
  }

  /** What reaches a sandbox's resolver and named sets (network.ts). */
  function resolverTarget(h: Host, programs: Programs, id: string, initPid: number, deadline: number): ResolverTarget {
    if (!programs.nft) throw new PermanentRuntimeError(NETWORK_NEEDS);
    return {
      id,
      pid: initPid,
      nsenter: programs.nsenter,
      nft: programs.nft,
      files: egressFiles(h.layout, id),
      upstreams,
      layout: h.layout,
      deadline,
      ...(h.egressCa && programs.openssl
        ? { broker: { ca: { cert: h.egressCa.cert, key: h.egressCa.key, leafKey: h.egressCa.leafKey }, openssl: programs.openssl, ...(settings.egressUpstreamCa ? { upstreamCa: settings.egressUpstreamCa } : {}) } }
        : {}),
    };
  }

  /** Kills everything in the sandbox, waits for it to be gone, then removes its groups and files. */
  async function teardown(h: Host, id: string, state: SandboxState | undefined, deadline: number): Promise<void> {
    known.delete(id);
    const dir = sandboxDir(h.layout, id);
    // Read before the init dies: its watcher, of the sandbox's uid, is part of what must end.
    const watcher = state && isRunning(state.pid, state.startTime) ? watcherOf(state.pid) : undefined;
    if (state) {
      await markEnding(dir);
      // Killing a pid namespace's init kills everything in it.
      if (isRunning(state.pid, state.startTime)) killQuietly(state.pid);
      // Its watcher ends once the init has; killed too, so that one stopped or starved holds up no destroy.
      if (watcher && isRunning(watcher.pid, watcher.startTime)) killQuietly(watcher.pid);
      // slirp4netns is outside the namespace (and in no cgroup on a host without them).
      if (state.network && isRunning(state.network.pid, state.network.startTime)) killQuietly(state.network.pid);
    } else {
      // No state: its init, if any, is found by the marker it was started with.
      await killByArgument(sandboxMarker(id), deadline);
      // And its disk may be attached and never mounted, which nothing else would free.
      await detachDisk(spawner.host, diskImage(h.layout, id));
    }
    // Whatever escaped the namespace's end (nsenter's host-side halves, say) is still in the groups.
    await h.cgroups?.killAndRemove(id, deadline);
    if (state) await waitUntilEnded(state.pid, state.startTime, deadline);
    if (watcher) await waitUntilEnded(watcher.pid, watcher.startTime, deadline);
    if (state?.network) await waitUntilEnded(state.network.pid, state.network.startTime, deadline);
    // Nothing of the sandbox runs: its disk can go, and its image with the directory.
    await unmountDisk(spawner.host, workspaceDir(h.layout, id));
    const { removed: removal } = await discard(spawner.host, dir, h.layout.trash, log);
    removals.add(removal);
    void removal.finally(() => removals.delete(removal));
  }

  /** The state of a sandbox that runs now, for exec. */
  async function runningState(h: Host, id: string): Promise<SandboxState> {
    const cached = known.get(id);
    if (cached && isRunning(cached.pid, cached.startTime)) return cached;
    // Not cached, or another process replaced it: the disk says what runs now.
    const recorded = isSandboxId(id) ? await readState(sandboxDir(h.layout, id)) : undefined;
    if (recorded && !recorded.ending && isRunning(recorded.state.pid, recorded.state.startTime)) {
      known.set(id, recorded.state);
      return recorded.state;
    }
    known.delete(id);
    throw new SandboxGoneError(recorded ? `sandbox ${id} is not running` : `no sandbox ${id}`);
  }

  /** Whether the sandbox an exec ran in still runs, or is being destroyed (its init may not have died yet). */
  async function stillRuns(h: Host, state: SandboxState): Promise<boolean> {
    const recorded = await readState(sandboxDir(h.layout, state.id));
    return (
      recorded !== undefined &&
      !recorded.ending &&
      recorded.state.pid === state.pid &&
      isRunning(state.pid, state.startTime)
    );
  }

  return {
    name: 'local',
    defaultImage: LOCAL_IMAGE,
    resolveImage: resolveLocalImage,
    egressByName: true,
    egressBrokering: true,

    async create(spec, options) {
      if (!isSandboxId(spec.id)) throw new PermanentRuntimeError(`not a sandbox id: ${JSON.stringify(spec.id)}`);
      resolveLocalImage(spec.image);
      const h = await host();
      const programs = h.programs;
      if (!programs) {
        throw new PermanentRuntimeError('bubblewrap (bwrap) and nsenter must be installed for the local runtime');
      }
      refuseWithoutLimits(h.cgroups, settings.allowUnlimited ?? false);
      if (diskMb > 0 && !runningAsRoot) {
        throw new PermanentRuntimeError('a disk quota per sandbox (PADDOCK_LOCAL_DISK_MB) needs Paddock to run as root; set PADDOCK_LOCAL_DISK_MB=0 to run sandboxes without one');
      }
      if (diskMb > 0 && !diskPrograms(programs)) {
        throw new PermanentRuntimeError('a disk quota per sandbox (PADDOCK_LOCAL_DISK_MB) needs mount, unshare, losetup and setpriv (util-linux); set PADDOCK_LOCAL_DISK_MB=0 to run sandboxes without one');
      }
      if (egressMode(spec.network ?? NO_EGRESS) !== 'none' && !(runningAsRoot && programs.slirp4netns && programs.nft)) {
        throw new PermanentRuntimeError(NETWORK_NEEDS);
      }
      const deadline = Date.now() + (options?.timeoutMs ?? DEFAULT_CREATE_TIMEOUT_MS);
      return withLock(lockName(h, spec.id), deadline, async () => {
        const found = await find(h, spec.id);
        if (found?.kind === 'running') return { id: spec.id, accountId: found.state.accountId, status: 'running' };
        if (found?.kind === 'ended') throw new PermanentRuntimeError(`sandbox ${spec.id} cannot run again: ${ENDED}`);
        if (found?.kind === 'ending') throw new PermanentRuntimeError(`sandbox ${spec.id} is being destroyed`);
        // We hold the lock, so an unfinished one's creator died: start afresh.
        if (found) await teardown(h, spec.id, undefined, deadline);
        return start(h, programs, spec, deadline);
      });
    },

    async destroy(id) {
      if (!isSandboxId(id)) return;
      const h = await host();
      const deadline = Date.now() + DESTROY_TIMEOUT_MS;
      await withLock(lockName(h, id), deadline, async () => {
        const found = await find(h, id);
        known.delete(id);
        if (!found) return;
        await teardown(h, id, found.kind === 'unfinished' ? undefined : found.state, deadline);
        log?.info({ sandboxId: id }, 'sandbox destroyed');
      });
    },

    async get(id) {
      return isSandboxId(id) ? describe(await host(), id) : undefined;
    },

    async list() {
      const h = await host();
      // The reaper lists on every sweep: the moment to retry what destroys could not remove.
      sweeping ??= sweepTrash(spawner.host, h.layout.trash, log).finally(() => (sweeping = undefined));
      const ids = (await readdir(h.layout.sandboxes)).filter(isSandboxId);
      const found = await Promise.all(ids.map((id) => describe(h, id)));
      return found.filter((sandbox) => sandbox !== undefined);
    },

    async exec(id: string, request: ExecRequest): Promise<ExecResult> {
      const h = await host();
      const state = await runningState(h, id);
      // Already aborted: nothing runs, and the answer is the one an abort gives (as in kubernetes).
      if (request.signal?.aborted) return { exitCode: null, signal: 'SIGKILL', timedOut: false, durationMs: 0 };
      const group = await h.cgroups?.openExec(id, state.agent && runningAsRoot);
      let result: ExecResult;
      try {
        if (state.agent && group?.killer && group.own) {
          const target = { socket: agentSocket(h.layout, id), initPid: state.pid, procs: group.own, killer: group.killer, group: group.name };
          result = await runThroughAgent(target, execCommand({ ...request, env: { ...hostEnv(h), ...request.env } }), request).catch(async (err: unknown) => {
            if (err instanceof AgentGoneError && !(await stillRuns(h, state))) {
              known.delete(id);
              throw new SandboxGoneError(`sandbox ${id} ended while the command ran`);
            }
            throw err;
          });
        } else {
          if (!h.programs) throw new Error('nsenter is not installed');
          const commandLine = execCommandLine({ nsenter: h.programs.nsenter, pid: state.pid, cgroupProcs: group?.procsFiles ?? [] });
          result = await spawner.run(commandLine, request, { frame: execFrame({ ...request, env: { ...hostEnv(h), ...request.env } }), killer: group?.killer });
        }
      } finally {
        void group?.release();
      }
      // nsenter fails, or is killed, when the sandbox ends under it: that is not the command's exit.
      if (!result.timedOut && result.exitCode !== 0 && !(await stillRuns(h, state))) {
        known.delete(id);
        throw new SandboxGoneError(`sandbox ${id} ended while the command ran`);
      }
      return result;
    },

    ...(runningAsRoot
      ? {
          async execBeside(id: string, request: BesideRequest): Promise<ExecResult> {
            const h = await host();
            const state = await runningState(h, id);
            if (!h.programs) throw new Error('nsenter is not installed');
            // The sandbox's own view of its files (its mount namespace, whose root is read-only:
            // the programs run are the host's), as its user; the host's processes, network and
            // CPUs otherwise: only Paddock's own fixed commands come here.
            const uid = hostUidFor(id);
            const argv = [h.programs.nsenter, `--target=${state.pid}`, '--mount', `--setuid=${uid}`, `--setgid=${uid}`, '--', ...request.argv];
            return runOnHost({ ...request, argv, env: request.env ?? {} });
          },
        }
      : {}),

    async terminal(id: string, request: TerminalRequest): Promise<TerminalSession> {
      const h = await host();
      const state = await runningState(h, id);
      if (!h.programs) throw new Error('nsenter is not installed');
      if (!h.programs.socat?.startsWith('/usr/')) throw new Error('terminals on the local runtime need socat installed under /usr (the sandboxes see only that)');
      const command = terminalCommand(h.programs.socat, request.argv, request.cols, request.rows);
      const frame = execFrame({ argv: command.argv, env: { ...request.env, ...command.env } });
      const group = await h.cgroups?.openExec(id);
      const commandLine = execCommandLine({ nsenter: h.programs.nsenter, pid: state.pid, cgroupProcs: group?.procsFiles ?? [] });
      let session: TerminalSession;
      try {
        session = await spawner.terminal(commandLine, request, { frame, killer: group?.killer });
      } catch (err) {
        void group?.release();
        throw err;
      }
      const exit = session.exit.then(
        async (result) => {
          void group?.release();
          // nsenter fails, or is killed, when the sandbox ends under it: that is not the command's exit.
          if (result.exitCode !== 0 && !request.signal?.aborted && !(await stillRuns(h, state))) {
            known.delete(id);
            throw new SandboxGoneError(`sandbox ${id} ended while the terminal was open`);
          }
          return result;
        },
        (err: unknown) => {
          void group?.release();
          throw err;
        },
      );
      exit.catch(() => undefined);
      return { write: session.write, resize: session.resize, exit };
    },

    async setExpiresAt(id: string, expiresAt: Date): Promise<boolean> {
      const h = await host();
      const state = await runningState(h, id);
      // A shell init took its deadline on its command line, for good.
      if (!state.agent) return false;
      await moveAgentDeadline(agentSocket(h.layout, id), expiresAt.getTime() + graceMs);
      return true;
    },

    async openPort(id: string, port: number, options: { signal?: AbortSignal; reads?: PortReads } = {}): Promise<Duplex> {
      if (!Number.isInteger(port) || port < 1 || port > 65_535) throw new RangeError(`not a port: ${port}`);
      const h = await host();
      const state = await runningState(h, id);
      options.signal?.throwIfAborted();
      // The relay is the agent's (a fork of it inside the sandbox, one per connection): a sandbox
      // without it (made on a host with no C compiler, see agent/binary.ts) would need a host
      // process per connection (an nsenter, and a relay of its own), which is not offered.
      if (!state.agent) throw new Error(PORTS_NEED_AGENT);
      return openThroughAgent(agentSocket(h.layout, id), port, options.signal, options.reads).catch(async (err: unknown) => {
        if (err instanceof AgentGoneError && !(await stillRuns(h, state))) {
          known.delete(id);
          throw new SandboxGoneError(`sandbox ${id} ended before its port ${port} could be reached`);
        }
        throw err;
      });
    },

    async sweepEgress(): Promise<EgressSweep> {
      const h = await host();
      const programs = h.programs;
      const counted = new Map<string, number>();
      const uncredentialed: string[] = [];
      if (!programs?.nft || !runningAsRoot) return { refused: counted, uncredentialed };
      const ids = (await readdir(h.layout.sandboxes)).filter(isSandboxId);
      // A few at a time: each is a process (nsenter, then nft) on the host.
      let next = 0;
      const lane = async () => {
        while (next < ids.length) {
          const id = ids[next++]!;
          const recorded = await readState(sandboxDir(h.layout, id)).catch(() => undefined);
          if (!recorded?.state.network || recorded.ending || !isRunning(recorded.state.pid, recorded.state.startTime)) continue;
          const files = egressFiles(h.layout, id);
          const refused = await refusedSoFar({ pid: recorded.state.pid, nsenter: programs.nsenter, nft: programs.nft!, files });
          if (refused !== undefined) counted.set(id, refused);
          // The host's resolver serves every sandbox whose policy names domains or that has brokered
          // hosts: started again here if it died, when the credentials it held died with it.
          const installed = await readInstalled(files).catch(() => undefined);
          if (installed && resolvedByPaddock(installed)) {
            const serving = await ensureResolver(resolverTarget(h, programs, id, recorded.state.pid, Date.now() + DEFAULT_CREATE_TIMEOUT_MS)).catch((err: unknown) => {
              log?.warn({ err: (err as Error).message, sandboxId: id }, "the sandboxes' resolver could not serve a sandbox");
              return undefined;
            });
            if (serving && !serving.credentialsSent && (installed.brokered?.length ?? 0) > 0) uncredentialed.push(id);
          }
        }
      };
      await Promise.all(Array.from({ length: REFUSALS_READ_AT_ONCE }, lane));
      return { refused: counted, uncredentialed };
    },

    async setNetwork(id: string, policy: NetworkPolicy): Promise<void> {
      if (!isSandboxId(id)) throw new SandboxGoneError(`no sandbox ${id}`);
      const h = await host();
      const programs = h.programs;
      const deadline = Date.now() + DEFAULT_CREATE_TIMEOUT_MS;
      await withLock(lockName(h, id), deadline, async () => {
        // Read from the disk, not this process's cache: another process may have attached it since.
        known.delete(id);
        const state = await runningState(h, id);
        if (state.network) {
          // Attached at its create or by an earlier change: only its policy changes.
          await changePolicy(resolverTarget(h, programs!, id, state.pid, deadline), policy);
          return;
        }
        // A sandbox without network has only its loopback, which no policy changes.
        if (egressMode(policy) === 'none') return;
        if (!(runningAsRoot && programs?.slirp4netns && programs.nft)) throw new PermanentRuntimeError(NETWORK_NEEDS);
        const network = await withNetwork(h, programs, id, state.pid, deadline, policy);
        const recorded: SandboxState = { ...state, network };
        await writeState(sandboxDir(h.layout, id), recorded);
        known.set(id, recorded);
      });
    },

    async broker(id: string, credentials: readonly BrokeredCredential[]): Promise<void> {
      if (!isSandboxId(id)) throw new SandboxGoneError(`no sandbox ${id}`);
      const h = await host();
      const programs = h.programs;
      const deadline = Date.now() + DEFAULT_CREATE_TIMEOUT_MS;
      await withLock(lockName(h, id), deadline, async () => {
        const state = await runningState(h, id);
        // Without network, or on a host with no authority, nothing would carry them.
        if (!state.network || !programs || !h.egressCa) return;
        await changeBrokered(resolverTarget(h, programs, id, state.pid, deadline), credentials);
      });
    },

    // A worker's first create would otherwise wait for the spawner's start (a Node process: about
    // a second on a busy host) before the disk's first command.
    warm: () => spawner.warm(),

    async close() {
      known.clear();
      // What is still running after this is left in the trash, for the next process's sweep.
      const pending = Promise.allSettled([...removals, ...(sweeping ? [sweeping] : [])]);
      await Promise.race([pending, delay(CLOSE_WAITS_FOR_REMOVALS_MS, undefined, { ref: false })]);
      await spawner.close();
    },
  };
}

/** Untrusted code without memory and process-count limits can take the host down: only an operator's explicit word allows it. */
function refuseWithoutLimits(cgroups: Cgroups | undefined, allowUnlimited: boolean): void {
  const missing = cgroups ? ESSENTIAL.filter((r) => cgroups.missing.includes(r)) : ESSENTIAL;
  if (missing.length === 0 || allowUnlimited) return;
  throw new PermanentRuntimeError(
    `this host offers no usable cgroup ${missing.join(' and ')} controller (v2 or v1; Paddock must run as root), ` +
      'so sandboxes would run without those limits; set PADDOCK_LOCAL_ALLOW_UNLIMITED=true to run them anyway',
  );
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  );
}

/** A device number as cgroups name it, MAJ:MIN (glibc's gnu_dev_major and gnu_dev_minor). */
export function deviceOf(dev: number): string {
  const n = BigInt(dev);
  const major = ((n >> 8n) & 0xfffn) | ((n >> 32n) & 0xfffff000n);
  const minor = (n & 0xffn) | ((n >> 12n) & 0xffffff00n);
  return `${major}:${minor}`;
}

/** The programs a disk's mount takes, or undefined when the host lacks one. */
function diskPrograms({ unshare, mount, losetup, setpriv }: Programs): { unshare: string; mount: string; losetup: string; setpriv: string } | undefined {
  return unshare && mount && losetup && setpriv ? { unshare, mount, losetup, setpriv } : undefined;
}
