import { badRequest, StatusError } from './status.ts';

// Enough of the API server's validation to catch the mistakes a runtime could make: a name with
// an underscore, a bad label, a container without an image. Answers what the real one answers:
// 422 Invalid with one cause per field.

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const LABEL_NAME = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/;
const QUANTITY = /^[+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+)?$/;
const RESTART_POLICIES = ['Always', 'OnFailure', 'Never'];

interface Cause {
  field: string;
  message: string;
}

export function validatePod(body: unknown, namespace: string): void {
  if (!isObject(body)) throw badRequest('the request body must be a Pod object');
  if (body.kind !== undefined && body.kind !== 'Pod') throw badRequest(`expected kind Pod, got ${String(body.kind)}`);
  if (body.apiVersion !== undefined && body.apiVersion !== 'v1') {
    throw badRequest(`expected apiVersion v1, got ${String(body.apiVersion)}`);
  }
  const causes: Cause[] = [];
  const metadata = isObject(body.metadata) ? body.metadata : {};
  const name = metadata.name;
  if (typeof name !== 'string' || name === '') {
    causes.push({ field: 'metadata.name', message: 'Required value: name or generateName is required' });
  } else if (name.length > 253 || !DNS_SUBDOMAIN.test(name)) {
    causes.push({
      field: 'metadata.name',
      message: `Invalid value: ${JSON.stringify(name)}: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character`,
    });
  }
  if (metadata.namespace !== undefined && metadata.namespace !== namespace) {
    throw badRequest('the namespace of the provided object does not match the namespace sent on the request');
  }
  validateLabels(metadata.labels, causes);
  validateSpec(body.spec, causes);
  if (causes.length) {
    const shown = typeof name === 'string' ? name : '';
    throw new StatusError(
      422,
      'Invalid',
      `Pod ${JSON.stringify(shown)} is invalid: ${causes.map((c) => `${c.field}: ${c.message}`).join(', ')}`,
      { name: shown, kind: 'Pod', causes: causes.map((c) => ({ reason: 'FieldValueInvalid', ...c })) },
    );
  }
}

function validateLabels(labels: unknown, causes: Cause[]): void {
  if (labels === undefined) return;
  if (!isObject(labels)) return void causes.push({ field: 'metadata.labels', message: 'must be a map of strings' });
  for (const [key, value] of Object.entries(labels)) {
    const field = `metadata.labels[${JSON.stringify(key)}]`;
    const slash = key.lastIndexOf('/');
    const prefix = slash === -1 ? undefined : key.slice(0, slash);
    const local = slash === -1 ? key : key.slice(slash + 1);
    if ((prefix !== undefined && (prefix.length > 253 || !DNS_SUBDOMAIN.test(prefix))) || local.length > 63 || !LABEL_NAME.test(local)) {
      causes.push({ field, message: `Invalid value: ${JSON.stringify(key)}: not a valid label key` });
    }
    if (typeof value !== 'string' || value.length > 63 || (value !== '' && !LABEL_NAME.test(value))) {
      causes.push({ field, message: `Invalid value: ${JSON.stringify(value)}: not a valid label value` });
    }
  }
}

function validateSpec(spec: unknown, causes: Cause[]): void {
  if (!isObject(spec)) return void causes.push({ field: 'spec', message: 'Required value' });
  if (spec.restartPolicy !== undefined && !RESTART_POLICIES.includes(spec.restartPolicy as string)) {
    causes.push({ field: 'spec.restartPolicy', message: `Unsupported value: ${JSON.stringify(spec.restartPolicy)}` });
  }
  if (spec.activeDeadlineSeconds !== undefined && !(Number.isInteger(spec.activeDeadlineSeconds) && (spec.activeDeadlineSeconds as number) > 0)) {
    causes.push({ field: 'spec.activeDeadlineSeconds', message: 'must be a positive integer' });
  }
  const volumes = new Set<string>();
  if (spec.volumes !== undefined) {
    if (!Array.isArray(spec.volumes)) causes.push({ field: 'spec.volumes', message: 'must be a list' });
    else for (const v of spec.volumes) if (isObject(v) && typeof v.name === 'string') volumes.add(v.name);
  }
  const containers = spec.containers;
  if (!Array.isArray(containers) || containers.length === 0) {
    return void causes.push({ field: 'spec.containers', message: 'Required value' });
  }
  const names = new Set<string>();
  containers.forEach((c: unknown, i) => {
    const at = `spec.containers[${i}]`;
    if (!isObject(c)) return void causes.push({ field: at, message: 'must be an object' });
    if (typeof c.name !== 'string' || c.name.length > 63 || !DNS_LABEL.test(c.name)) {
      causes.push({ field: `${at}.name`, message: `Invalid value: ${JSON.stringify(c.name)}: a lowercase RFC 1123 label is required` });
    } else if (names.has(c.name)) {
      causes.push({ field: `${at}.name`, message: `Duplicate value: ${JSON.stringify(c.name)}` });
    } else names.add(c.name);
    if (typeof c.image !== 'string' || c.image.trim() === '') causes.push({ field: `${at}.image`, message: 'Required value' });
    for (const list of ['command', 'args'] as const) {
      const value = c[list];
      if (value !== undefined && !(Array.isArray(value) && value.every((a) => typeof a === 'string'))) {
        causes.push({ field: `${at}.${list}`, message: 'must be a list of strings' });
      }
    }
    validateResources(c.resources, `${at}.resources`, causes);
    if (Array.isArray(c.volumeMounts)) {
      c.volumeMounts.forEach((m: unknown, j) => {
        if (!isObject(m) || typeof m.name !== 'string' || !volumes.has(m.name)) {
          causes.push({ field: `${at}.volumeMounts[${j}].name`, message: 'Not found: no volume of that name' });
        }
      });
    }
  });
}

function validateResources(resources: unknown, at: string, causes: Cause[]): void {
  if (resources === undefined) return;
  if (!isObject(resources)) return void causes.push({ field: at, message: 'must be an object' });
  for (const kind of ['requests', 'limits'] as const) {
    const values = resources[kind];
    if (values === undefined) continue;
    if (!isObject(values)) {
      causes.push({ field: `${at}.${kind}`, message: 'must be a map of quantities' });
      continue;
    }
    for (const [resource, quantity] of Object.entries(values)) {
      if (typeof quantity !== 'string' || !QUANTITY.test(quantity)) {
        causes.push({ field: `${at}.${kind}[${resource}]`, message: `Invalid value: ${JSON.stringify(quantity)}: must be a quantity` });
      }
    }
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
