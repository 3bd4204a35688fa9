// Rendering and validating deploy/kubernetes, offline: kustomize renders (the `kubectl` on the
// PATH, whose built-in kustomize is used, or a standalone `kustomize`; PADDOCK_KUSTOMIZE names
// another binary), and every rendered object is checked against the Kubernetes schemas twice:
//
// - kubernetes-models (a devDependency): JSON schemas generated from Kubernetes' OpenAPI
//   document, compiled with ajv: types, required fields, enums, formats. It ignores fields it
//   does not know, so
// - the models of @kubernetes/client-node (generated from Kubernetes' OpenAPI document too)
//   reject every field the API does not have: a typo such as `readinesProbe` would otherwise
//   pass, and the API server would drop it silently.
//
// An object of a kind neither knows fails validation: nothing passes unchecked.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { loadAll } from 'js-yaml';

export const ROOT = resolve(import.meta.dirname, '../..');
export const DEPLOY = join(ROOT, 'deploy/kubernetes');

/** A rendered object; typed loosely, since checking its shape is the point. */
export interface KubeObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  [field: string]: unknown;
}

export interface Renderer {
  /** The command line before the directory, e.g. ['kubectl', 'kustomize']. */
  argv: string[];
  kustomizeVersion: string;
}

// `labels` with includeSelectors, `components` and `patches` need kustomize 4.1 or later;
// kubectl has shipped kustomize 5 since 1.27.
const MIN_KUSTOMIZE_MAJOR = 5;

/** The kustomize to render with; throws, saying what to install, when there is none. */
export function findRenderer(): Renderer {
  const tried: string[] = [];
  const candidates = process.env.PADDOCK_KUSTOMIZE ? [process.env.PADDOCK_KUSTOMIZE] : ['kubectl', 'kustomize'];
  for (const bin of candidates) {
    const isKubectl = /(^|\/)kubectl[^/]*$/.test(bin);
    const probe = isKubectl
      ? spawnSync(bin, ['version', '--client', '-o', 'json'], { encoding: 'utf8', timeout: 30_000 })
      : spawnSync(bin, ['version'], { encoding: 'utf8', timeout: 30_000 });
    if (probe.error || probe.status !== 0) {
      tried.push(`${bin}: ${probe.error?.message ?? probe.stderr.trim().split('\n')[0]}`);
      continue;
    }
    let version = '';
    if (isKubectl) {
      try {
        version = String((JSON.parse(probe.stdout) as { kustomizeVersion?: string }).kustomizeVersion ?? '');
      } catch {
        version = '';
      }
    } else {
      version = /v?\d+\.\d+\.\d+/.exec(probe.stdout)?.[0] ?? '';
    }
    const major = Number(/^v?(\d+)\./.exec(version)?.[1] ?? 0);
    if (major < MIN_KUSTOMIZE_MAJOR) {
      tried.push(`${bin}: kustomize ${version || 'unknown (too old)'}, need v${MIN_KUSTOMIZE_MAJOR} or later`);
      continue;
    }
    return { argv: isKubectl ? [bin, 'kustomize'] : [bin, 'build'], kustomizeVersion: version };
  }
  throw new Error(
    `No kustomize to render deploy/kubernetes with. Tried:\n  ${tried.join('\n  ')}\n` +
      `Install kubectl 1.27 or later (its built-in kustomize is v5), or a kustomize v5 binary, ` +
      `or point PADDOCK_KUSTOMIZE at one.`,
  );
}

/** Renders one kustomization directory into its objects. */
export function render(renderer: Renderer, dir: string): KubeObject[] {
  const [cmd, ...args] = renderer.argv;
  const result = spawnSync(cmd!, [...args, dir], { encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024 });
  if (result.error || result.status !== 0) {
    throw new Error(`${renderer.argv.join(' ')} ${dir} failed: ${result.error?.message ?? result.stderr}`);
  }
  return loadAll(result.stdout).filter((doc): doc is KubeObject => doc !== null && doc !== undefined);
}

/**
 * A private copy of deploy/kubernetes to render from: the example overlay's secrets.env (which
 * the repository never holds) made from secrets.env.example with usable values, and extra
 * kustomizations beside the real ones (`overlays/<name>/kustomization.yaml`) where a test needs one.
 */
export function workingCopy(extraOverlays: Record<string, string> = {}): string {
  const dir = mkdtempSync(join(tmpdir(), 'paddock-deploy-'));
  const copy = join(dir, 'kubernetes');
  cpSync(DEPLOY, copy, { recursive: true, filter: (src) => !src.endsWith('/secrets.env') });
  const example = readFileSync(join(copy, 'overlays/example/secrets.env.example'), 'utf8');
  writeFileSync(join(copy, 'overlays/example/secrets.env'), fillSecrets(example));
  for (const [name, kustomization] of Object.entries(extraOverlays)) {
    const overlay = join(copy, 'overlays', name);
    if (existsSync(overlay)) throw new Error(`overlay ${name} exists already`);
    cpSync(join(copy, 'overlays/example'), overlay, { recursive: true });
    writeFileSync(join(overlay, 'kustomization.yaml'), kustomization);
  }
  return copy;
}

/** Values that pass Paddock's configuration, for every secret the example lists. */
export const USABLE_SECRETS: Record<string, string> = {
  DATABASE_URL: 'postgres://paddock:pw@postgres.example.internal:5432/paddock',
  REDIS_URL: 'rediss://:pw@redis.example.internal:6380',
  PADDOCK_JWT_SECRET: 'x'.repeat(48),
  PADDOCK_SECRETS_KEY: 'ab'.repeat(32),
  PADDOCK_JWT_SECRET_PREVIOUS: 'y'.repeat(48),
  PADDOCK_SECRETS_KEY_PREVIOUS: 'cd'.repeat(32),
  PADDOCK_METRICS_TOKEN: 't'.repeat(24),
  PADDOCK_WEBHOOK_SECRETS_KEY: 'ef'.repeat(32),
};

function fillSecrets(example: string): string {
  return example
    .split('\n')
    .map((line) => {
      const m = /^([A-Z_][A-Z0-9_]*)=/.exec(line);
      if (!m) return line;
      const value = USABLE_SECRETS[m[1]!];
      if (value === undefined) throw new Error(`secrets.env.example has ${m[1]}, which the tests have no value for`);
      return `${m[1]}=${value}`;
    })
    .join('\n');
}

/** KEY=value lines of an env file (kustomize's `envs:` format). */
export function parseEnvFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const trimmed = line.trim();
    if (trimmed === '' || trimmed.startsWith('#')) continue;
    const eq = trimmed.indexOf('=');
    if (eq <= 0) throw new Error(`not KEY=value: ${line}`);
    out[trimmed.slice(0, eq)] = trimmed.slice(eq + 1);
  }
  return out;
}

// ---- validation ---------------------------------------------------------------------------------

type ModelClass = new (data: unknown) => { validate(): void };
interface AjvError {
  instancePath?: string;
  message?: string;
  params?: Record<string, unknown>;
}

/** The kubernetes-models class for an apiVersion and kind, or undefined when it has none. */
async function schemaModel(apiVersion: string, kind: string): Promise<ModelClass | undefined> {
  if (!/^([a-z0-9.-]+\/)?v[0-9a-z]+$/.test(apiVersion) || !/^[A-Z][A-Za-z0-9]*$/.test(kind)) return undefined;
  try {
    const module = (await import(`kubernetes-models/${apiVersion}`)) as Record<string, unknown>;
    const model = module[kind];
    return typeof model === 'function' ? (model as ModelClass) : undefined;
  } catch {
    return undefined;
  }
}

interface Attribute {
  baseName: string;
  type: string;
}
type ClientModel = { getAttributeTypeMap(): Attribute[] };
const clientModels = k8s as unknown as Record<string, unknown>;

function clientModel(typeName: string): ClientModel | undefined {
  const candidate = clientModels[typeName] as Partial<ClientModel> | undefined;
  return typeof candidate?.getAttributeTypeMap === 'function' ? (candidate as ClientModel) : undefined;
}

/** The client-node model name of a top-level object: `V1` + Deployment, `V2` + HorizontalPodAutoscaler. */
function clientModelName(apiVersion: string, kind: string): string {
  const version = apiVersion.split('/').pop() ?? '';
  return `${version.charAt(0).toUpperCase()}${version.slice(1)}${kind}`;
}

// Leaf types of the client-node models: values the schema check has already typed.
const LEAF_TYPES = new Set(['string', 'number', 'boolean', 'Date', 'any', 'IntOrString', 'object']);

function unknownFields(value: unknown, type: string, path: string, out: string[]): void {
  if (value === null || value === undefined) return;
  const array = /^Array<(.+)>$/.exec(type);
  if (array) {
    if (Array.isArray(value)) value.forEach((item, i) => unknownFields(item, array[1]!, `${path}[${i}]`, out));
    return;
  }
  const map = /^\{ \[key: string\]: (.+); \}$/.exec(type);
  if (map) {
    if (typeof value === 'object') for (const [k, v] of Object.entries(value)) unknownFields(v, map[1]!, `${path}[${JSON.stringify(k)}]`, out);
    return;
  }
  if (LEAF_TYPES.has(type)) return;
  const model = clientModel(type);
  if (!model) {
    out.push(`${path}: no model ${type} to check its fields against`);
    return;
  }
  if (typeof value !== 'object' || Array.isArray(value)) return; // a type error, which the schema reports
  const attributes = new Map(model.getAttributeTypeMap().map((a) => [a.baseName, a.type]));
  for (const [field, v] of Object.entries(value)) {
    const fieldType = attributes.get(field);
    if (fieldType === undefined) out.push(`${path}.${field}: unknown field (not in ${type})`);
    else unknownFields(v, fieldType, `${path}.${field}`, out);
  }
}

/**
 * kustomize writes long Secret values as base64 broken over several lines, which the API server
 * accepts (Go's base64 decoder skips line breaks) and the schema's `byte` format does not.
 */
function forSchema(o: KubeObject): KubeObject {
  if (o.kind !== 'Secret' || !o.data || typeof o.data !== 'object') return o;
  const data = Object.fromEntries(Object.entries(o.data).map(([k, v]) => [k, typeof v === 'string' ? v.replace(/[\r\n]/g, '') : v]));
  return { ...o, data };
}

/** Everything wrong with one object against the Kubernetes API's schemas; empty when valid. */
export async function validateObject(object: unknown): Promise<string[]> {
  const o = object as Partial<KubeObject> | null;
  if (!o || typeof o !== 'object' || typeof o.apiVersion !== 'string' || typeof o.kind !== 'string') {
    return ['not a Kubernetes object (no apiVersion and kind)'];
  }
  const id = `${o.apiVersion} ${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name ?? '(no name)'}`;
  const model = await schemaModel(o.apiVersion, o.kind);
  const clientName = clientModelName(o.apiVersion, o.kind);
  if (!model || !clientModel(clientName)) {
    return [`${id}: no schema for ${o.apiVersion} ${o.kind}; every rendered object must be a kind the Kubernetes API defines`];
  }
  const problems: string[] = [];
  try {
    new model(forSchema(o as KubeObject)).validate();
  } catch (err) {
    const errors = (err as { errors?: AjvError[] }).errors;
    if (!errors) throw err;
    for (const e of errors) problems.push(`${id}: ${e.instancePath || '/'} ${e.message ?? 'is invalid'} ${e.params ? JSON.stringify(e.params) : ''}`.trim());
  }
  const unknown: string[] = [];
  unknownFields(object, clientName, '', unknown);
  problems.push(...unknown.map((u) => `${id}: ${u}`));
  return problems;
}
