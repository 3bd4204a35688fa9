import { randomUUID } from 'node:crypto';
import { newId } from '../../shared/ids.ts';
import type { SandboxRuntime } from '../../shared/runtime/types.ts';
import { alreadyExists, notFound, StatusError } from './status.ts';
import type { ContainerStatusJson, PodJson, StoreEvent, WatchEventType } from './types.ts';
import { validatePod } from './validate.ts';
import { EventLog } from './event-log.ts';

// Images whose name contains this never pull, the way a typo or a private image would not.
export const UNPULLABLE = 'does-not-exist';

export interface StoreOptions {
  backend: SandboxRuntime;
  /** How long an unpullable image shows ErrImagePull before it turns into ImagePullBackOff. */
  pullBackOffMs: number;
  /** Watches may resume from a resourceVersion this many events back; older ones get 410 Expired. */
  eventWindow: number;
  /** A running pod's address by its name; undefined: 127.0.0.1. */
  podIp(name: string): string | undefined;
}

interface Entry {
  pod: PodJson;
  /** The backend sandbox behind the pod's one container: the stand-in's "container id". */
  backendId?: string;
  starting?: Promise<void>;
  removing?: Promise<void>;
  /** activeDeadlineSeconds: one timer per pod, armed once at creation. */
  deadline?: NodeJS.Timeout;
  /** Only for an unpullable image: when ErrImagePull turns into ImagePullBackOff. */
  backOff?: NodeJS.Timeout;
}

/** The pods of every namespace, their lifecycle on the backend, and the event log watches read. */
export class PodStore {
  private readonly entries = new Map<string, Entry>();
  private readonly log: EventLog<PodJson>;
  private readonly options: StoreOptions;
  private closed = false;

  constructor(options: StoreOptions) {
    this.options = options;
    this.log = new EventLog(options.eventWindow);
  }

  get currentVersion(): number {
    return this.log.currentVersion;
  }

  create(namespace: string, body: unknown): PodJson {
    validatePod(body, namespace);
    const input = body as Partial<PodJson> & { metadata: { name: string }; spec: PodJson['spec'] };
    const name = input.metadata.name;
    if (this.entries.has(key(namespace, name))) throw alreadyExists(name);
    const now = timestamp();
    const pod: PodJson = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { ...input.metadata, namespace, uid: randomUUID(), resourceVersion: '', creationTimestamp: now },
      spec: {
        restartPolicy: 'Always',
        terminationGracePeriodSeconds: 30,
        dnsPolicy: 'ClusterFirst',
        schedulerName: 'default-scheduler',
        serviceAccountName: 'default',
        ...input.spec,
        nodeName: 'standin-node',
      },
      status: {
        phase: 'Pending',
        hostIP: '127.0.0.1',
        startTime: now,
        conditions: [{ type: 'PodScheduled', status: 'True', lastTransitionTime: now }],
        containerStatuses: input.spec.containers.map((c) => waitingStatus(c.name, c.image, 'ContainerCreating')),
      },
    };
    const entry: Entry = { pod };
    this.entries.set(key(namespace, name), entry);
    this.record('ADDED', pod);
    const created = clone(pod);
    this.start(entry);
    return created;
  }

  get(namespace: string, name: string): PodJson {
    const entry = this.entries.get(key(namespace, name));
    if (!entry) throw notFound(name);
    return clone(entry.pod);
  }

  list(namespace: string, matches: (pod: PodJson) => boolean): PodJson[] {
    return [...this.entries.values()]
      .map((e) => e.pod)
      .filter((p) => p.metadata.namespace === namespace && matches(p))
      .sort((a, b) => a.metadata.name.localeCompare(b.metadata.name))
      .map(clone);
  }

  /** Marks the pod terminating and answers it; it disappears once its sandbox is destroyed. */
  delete(namespace: string, name: string, gracePeriodSeconds: number | undefined): PodJson {
    const entry = this.entries.get(key(namespace, name));
    if (!entry) throw notFound(name);
    if (!entry.removing) {
      this.update(entry, (pod) => {
        pod.metadata.deletionTimestamp = timestamp();
        pod.metadata.deletionGracePeriodSeconds = gracePeriodSeconds ?? pod.spec.terminationGracePeriodSeconds ?? 30;
      });
      entry.removing = this.remove(namespace, name, entry);
    }
    return clone(entry.pod);
  }

  /** What an exec into this pod runs on: its backend sandbox, when the pod is running. */
  execTarget(namespace: string, name: string, container: string): { backendId: string; deadlineMs: number } {
    const entry = this.entries.get(key(namespace, name));
    if (!entry) throw notFound(name);
    const pod = entry.pod;
    if (!pod.spec.containers.some((c) => c.name === container)) {
      throw new StatusError(400, 'BadRequest', `container ${container} is not valid for pod ${name}`);
    }
    if (pod.status.phase === 'Succeeded' || pod.status.phase === 'Failed') {
      throw new StatusError(400, 'BadRequest', `cannot exec into a container in a completed pod; current phase is ${pod.status.phase}`);
    }
    if (pod.status.phase !== 'Running' || !entry.backendId || entry.removing) {
      throw new StatusError(400, 'BadRequest', `unable to upgrade connection: container not found ("${container}")`);
    }
    const deadline = pod.spec.activeDeadlineSeconds;
    const deadlineMs = deadline ? Date.parse(pod.status.startTime ?? pod.metadata.creationTimestamp) + deadline * 1000 - Date.now() : 3_600_000;
    return { backendId: entry.backendId, deadlineMs: Math.max(1, deadlineMs) };
  }

  /**
   * What a port-forward into this pod reaches: its backend sandbox, the stand-in's pod sandbox.
   * As containerd does, a pod whose sandbox is not running (yet, or any more) is refused.
   */
  portForwardTarget(namespace: string, name: string): { backendId: string } {
    const entry = this.entries.get(key(namespace, name));
    if (!entry) throw notFound(name);
    if (entry.pod.status.phase !== 'Running' || !entry.backendId || entry.removing) {
      throw new StatusError(500, 'InternalError', 'sandbox container is not running');
    }
    return { backendId: entry.backendId };
  }

  eventsSince(since: number): StoreEvent[] | undefined {
    return this.log.eventsSince(since);
  }

  subscribe(listener: (event: StoreEvent) => void): () => void {
    return this.log.subscribe(listener);
  }

  /** Destroys every backend sandbox still held, so a test leaves nothing running. */
  async close(): Promise<void> {
    this.closed = true;
    const pending: Promise<void>[] = [];
    for (const [k, entry] of this.entries) {
      const [namespace, name] = k.split('/') as [string, string];
      pending.push(entry.removing ?? this.remove(namespace, name, entry));
    }
    await Promise.allSettled(pending);
    this.log.close();
  }

  private start(entry: Entry): void {
    const pod = entry.pod;
    const container = pod.spec.containers[0]!;
    // Like the kubelet's, the deadline runs from the pod's start, pending or not.
    const deadline = pod.spec.activeDeadlineSeconds;
    if (deadline) entry.deadline = setTimeout(() => this.deadlineExceeded(entry), deadline * 1000);
    if (container.image.includes(UNPULLABLE)) return this.failPull(entry, container.image);
    const backendId = newId('sbx');
    entry.starting = this.options.backend
      .create({
        id: backendId,
        accountId: pod.metadata.labels?.['paddock.dev/account-id'] ?? 'acct_standin',
        // No image: the host's userland stands in for whatever the pod names (the pull is what
        // the stand-in plays, above), and the local runtime refuses any image but its own.
        capSeconds: deadline ?? 3600,
      })
      .then(
        () => {
          entry.backendId = backendId;
          if (entry.removing || entry.pod.status.phase !== 'Pending') return;
          this.update(entry, (p) => {
            const now = timestamp();
            p.status.phase = 'Running';
            p.status.podIP = this.options.podIp(p.metadata.name) ?? '127.0.0.1';
            p.status.conditions = ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready'].map((type) => ({
              type,
              status: 'True',
              lastTransitionTime: now,
            }));
            p.status.containerStatuses = p.spec.containers.map((c) => ({
              ...waitingStatus(c.name, c.image, ''),
              containerID: `standin://${backendId}`,
              ready: true,
              started: true,
              state: { running: { startedAt: now } },
            }));
          });
        },
        (err: unknown) => {
          // A half-made sandbox may still hold something: remember it so removal destroys it.
          entry.backendId = backendId;
          if (entry.removing) return;
          this.update(entry, (p) => terminate(p, 'Failed', 'StartError', (err as Error)?.message ?? String(err), 128));
        },
      );
  }

  private failPull(entry: Entry, image: string): void {
    const pullError = `rpc error: code = NotFound desc = failed to pull and unpack image "${image}": not found`;
    this.update(entry, (p) => setWaiting(p, 'ErrImagePull', pullError));
    entry.backOff = setTimeout(() => {
      if (entry.removing || entry.pod.status.phase !== 'Pending') return;
      const message = `Back-off pulling image "${image}": ErrImagePull: ${pullError}`;
      this.update(entry, (p) => setWaiting(p, 'ImagePullBackOff', message));
    }, this.options.pullBackOffMs);
  }

  // As the kubelet does: the pod fails, its containers are killed, the object stays until deleted.
  private deadlineExceeded(entry: Entry): void {
    if (entry.removing || entry.pod.status.phase === 'Succeeded' || entry.pod.status.phase === 'Failed') return;
    clearTimeout(entry.backOff);
    this.update(entry, (p) =>
      terminate(p, 'Failed', 'DeadlineExceeded', 'Pod was active on the node longer than the specified deadline', 137),
    );
    void (entry.starting ?? Promise.resolve()).then(() => this.destroyBackend(entry));
  }

  private async remove(namespace: string, name: string, entry: Entry): Promise<void> {
    clearTimeout(entry.deadline);
    clearTimeout(entry.backOff);
    await entry.starting?.catch(() => undefined);
    await this.destroyBackend(entry);
    if (this.entries.get(key(namespace, name)) !== entry) return;
    this.entries.delete(key(namespace, name));
    this.record('DELETED', entry.pod);
  }

  private async destroyBackend(entry: Entry): Promise<void> {
    if (!entry.backendId) return;
    try {
      await this.options.backend.destroy(entry.backendId);
    } catch (err) {
      if (!this.closed) console.error('k8s stand-in: destroying a backend sandbox failed', err);
    }
  }

  private update(entry: Entry, mutate: (pod: PodJson) => void): void {
    mutate(entry.pod);
    this.record('MODIFIED', entry.pod);
  }

  private record(type: WatchEventType, pod: PodJson): void {
    this.log.record(type, pod);
  }
}

function waitingStatus(name: string, image: string, reason: string): ContainerStatusJson {
  return {
    name,
    image,
    imageID: '',
    ready: false,
    started: false,
    restartCount: 0,
    state: { waiting: { reason } },
  };
}

function setWaiting(pod: PodJson, reason: string, message: string): void {
  for (const c of pod.status.containerStatuses) c.state = { waiting: { reason, message } };
}

function terminate(pod: PodJson, phase: 'Failed' | 'Succeeded', reason: string, message: string, exitCode: number): void {
  const now = timestamp();
  pod.status.phase = phase;
  pod.status.reason = reason;
  pod.status.message = message;
  for (const condition of pod.status.conditions) {
    if (condition.type === 'Ready' || condition.type === 'ContainersReady') {
      condition.status = 'False';
      condition.lastTransitionTime = now;
    }
  }
  for (const c of pod.status.containerStatuses) {
    c.ready = false;
    c.started = false;
    c.state = { terminated: { exitCode, reason: reason === 'DeadlineExceeded' ? 'Error' : reason, message, finishedAt: now } };
  }
}

function key(namespace: string, name: string): string {
  return `${namespace}/${name}`;
}

function timestamp(): string {
  // The API server's format: RFC 3339 in seconds.
  return new Date().toISOString().replace(/\.\d{3}Z$/, 'Z');
}

function clone<T>(value: T): T {
  return structuredClone(value);
}
