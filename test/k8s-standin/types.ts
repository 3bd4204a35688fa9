// The JSON shapes the stand-in stores and serves. Plain JSON on purpose (timestamps are strings),
// unlike client-node's model classes, because this is what goes over the wire.

export interface ContainerJson {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  volumeMounts?: { name: string; mountPath: string }[];
  [field: string]: unknown;
}

export interface ContainerStatusJson {
  name: string;
  image: string;
  imageID: string;
  containerID?: string;
  ready: boolean;
  started: boolean;
  restartCount: number;
  state: {
    waiting?: { reason: string; message?: string };
    running?: { startedAt: string };
    terminated?: { exitCode: number; reason: string; message?: string; startedAt?: string; finishedAt: string };
  };
}

export interface PodJson {
  apiVersion: 'v1';
  kind: 'Pod';
  metadata: {
    name: string;
    namespace: string;
    uid: string;
    resourceVersion: string;
    creationTimestamp: string;
    labels?: Record<string, string>;
    deletionTimestamp?: string;
    deletionGracePeriodSeconds?: number;
    [field: string]: unknown;
  };
  spec: {
    containers: ContainerJson[];
    activeDeadlineSeconds?: number;
    terminationGracePeriodSeconds?: number;
    restartPolicy?: string;
    volumes?: { name: string; [field: string]: unknown }[];
    [field: string]: unknown;
  };
  status: {
    phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed';
    reason?: string;
    message?: string;
    startTime?: string;
    hostIP?: string;
    podIP?: string;
    conditions: { type: string; status: 'True' | 'False'; reason?: string; lastTransitionTime: string }[];
    containerStatuses: ContainerStatusJson[];
    [field: string]: unknown;
  };
}

export type WatchEventType = 'ADDED' | 'MODIFIED' | 'DELETED';

/** A change as a watch replays it; of a pod unless said otherwise. */
export interface StoreEvent<T = PodJson> {
  type: WatchEventType;
  resourceVersion: number;
  object: T;
}
