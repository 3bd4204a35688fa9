import { badRequest } from './status.ts';
import type { PodJson } from './types.ts';

// Equality-based selectors only (`a=b`, `a==b`, `a!=b`, comma-separated, all must hold), which
// is what the runtime sends. Set-based ones are refused loudly rather than silently matching.

interface Requirement {
  key: string;
  value: string;
  equal: boolean;
}

export type Selector = (pod: PodJson) => boolean;

function parse(text: string | null, what: string): Requirement[] {
  if (!text) return [];
  return text.split(',').map((part) => {
    const m = /^\s*([^!=\s]+)\s*(==|=|!=)\s*([^!=\s]*)\s*$/.exec(part);
    if (!m) throw badRequest(`unable to parse requirement: ${what} ${JSON.stringify(part)} (the stand-in supports =, == and != only)`);
    return { key: m[1]!, value: m[3]!, equal: m[2] !== '!=' };
  });
}

/** Matches any object by its labels: pods, and the objects kept as given. */
export function labelSelector(text: string | null): (object: { metadata: { labels?: Record<string, string> } }) => boolean {
  const reqs = parse(text, 'labelSelector');
  return (object) => reqs.every((r) => (object.metadata.labels?.[r.key] === r.value) === r.equal);
}

const FIELDS: Record<string, (pod: PodJson) => string> = {
  'metadata.name': (pod) => pod.metadata.name,
  'metadata.namespace': (pod) => pod.metadata.namespace,
  'status.phase': (pod) => pod.status.phase,
  'status.podIP': (pod) => pod.status.podIP ?? '',
};

export function fieldSelector(text: string | null): Selector {
  const reqs = parse(text, 'fieldSelector');
  for (const r of reqs) {
    if (!FIELDS[r.key]) throw badRequest(`field label not supported: ${r.key}`);
  }
  return (pod) => reqs.every((r) => (FIELDS[r.key]!(pod) === r.value) === r.equal);
}
