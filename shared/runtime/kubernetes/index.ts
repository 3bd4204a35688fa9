export { createKubernetesRuntime } from './runtime.ts';
export { sandboxPodManifest } from './manifest.ts';
export type { KubernetesRuntimeOptions } from './options.ts';
export { podNameFor, sandboxIdFor, MANAGED_SELECTOR } from './names.ts';
