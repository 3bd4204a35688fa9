// `npm run gen:api-docs`: writes docs/api.md, the API's reference, from the OpenAPI document the
// API serves (itself generated from the route specs and their zod schemas) and the hand-written
// conventions in scripts/api-reference-conventions.md. test/contract/api-reference.test.ts fails
// when the checked-in page has drifted from either.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildOpenApi } from '../api/openapi.ts';
import { allRoutes } from '../api/routes/index.ts';
import type { Schema } from './openapi-schema.ts';

type Parameter = { name: string; in: string; required: boolean; description?: string; schema: Schema };
type Media = Record<string, { schema: Schema }>;
type Response = { description: string; headers?: Record<string, { description: string }>; content?: Media };
type Operation = {
  operationId: string;
  summary: string;
  tags: string[];
  security: Record<string, string[]>[];
  'x-required-scope'?: string;
  'x-rate-limit-bucket'?: string;
  'x-in-flight-cap'?: string;
  parameters: Parameter[];
  requestBody?: { description?: string; content: Media };
  responses: Record<string, Response>;
};
type Document = {
  info: { title: string; description: string };
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

const root = resolve(import.meta.dirname, '..');
export const API_REFERENCE_FILE = resolve(root, 'docs', 'api.md');
export const CONVENTIONS_FILE = resolve(root, 'scripts', 'api-reference-conventions.md');
const SCOPES_MARK = '<!-- scopes: generated -->';

/** Text for a Markdown table cell: one line, its pipes escaped. */
const cell = (text: string) => text.replace(/\s*\n\s*/g, ' ').replace(/\|/g, '\\|');
const code = (text: string) => `\`${text}\``;

function resolveRef(doc: Document, schema: Schema): Schema {
  return schema.$ref ? (doc.components.schemas[schema.$ref.split('/').pop()!] ?? {}) : schema;
}

/** A short type for the subset of JSON Schema that zod emits. */
function typeOf(schema: Schema | undefined): string {
  if (!schema || Object.keys(schema).length === 0) return 'any';
  if (schema.$ref) return schema.$ref.split('/').pop()!;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map(typeOf).join(' or ');
  if (schema.allOf) return schema.allOf.map(typeOf).join(' and ');
  if (Array.isArray(schema.type)) return schema.type.join(' or ');
  if (schema.type === 'array') return `array of ${typeOf(schema.items)}`;
  if (schema.type === 'object' || (schema.type === undefined && schema.properties)) return 'object';
  return schema.type ?? 'any';
}

/** The fields of an object schema, one row each; each alternative of a union in turn; any other body by its type. */
function fields(doc: Document, schema: Schema): string[] {
  const resolved = resolveRef(doc, schema);
  const name = schema.$ref ? `${code(typeOf(schema))}: ` : '';
  const alternatives = resolved.anyOf ?? resolved.oneOf;
  if (alternatives?.every((a) => resolveRef(doc, a).properties)) {
    return [
      `${name}one of ${alternatives.length} objects.`,
      '',
      ...alternatives.flatMap((a, i) => {
        // Named by its discriminating member: the first whose value is fixed (a const or an enum).
        const tag = Object.entries(resolveRef(doc, a).properties ?? {}).find(([, p]) => p.const !== undefined || p.enum);
        return [`${i + 1}. ${tag ? `${code(tag[0])} ${cell(typeOf(tag[1]))}` : typeOf(a)}:`, '', ...table(resolveRef(doc, a))];
      }),
    ];
  }
  if (!resolved.properties) return [`${name}${typeOf(resolved)}${resolved.description ? `. ${resolved.description}` : ''}`, ''];
  return [`${name}an object.`, '', ...table(resolved)];
}

function table(schema: Schema): string[] {
  const required = new Set(schema.required ?? []);
  return [
    '| field | type | required | description |',
    '|---|---|---|---|',
    ...Object.entries(schema.properties ?? {}).map(
      ([field, s]) => `| ${code(field)} | ${cell(typeOf(s))} | ${required.has(field) ? 'yes' : 'no'} | ${cell(s.description ?? '')} |`,
    ),
    '',
  ];
}

function auth(op: Operation): string {
  if (op['x-required-scope']) return `API key with scope ${code(op['x-required-scope'])}`;
  if (op.security.some((s) => 'dashboardToken' in s)) return 'dashboard session token';
  if (op.security.some((s) => 'apiKey' in s)) return 'API key';
  return 'none';
}

function operation(doc: Document, method: string, path: string, op: Operation): string[] {
  const out = [`#### ${method.toUpperCase()} ${path}`, '', cell(op.summary), ''];
  out.push(`- Operation: ${code(op.operationId)}`, `- Auth: ${auth(op)}`);
  if (op['x-rate-limit-bucket']) out.push(`- Rate-limit bucket: ${code(op['x-rate-limit-bucket'])}`);
  if (op['x-in-flight-cap']) out.push(`- In-flight cap: ${code(op['x-in-flight-cap'])}`);
  out.push('');
  const params = op.parameters.filter((p) => p.name !== 'X-Request-Id');
  if (params.length > 0) {
    out.push('Parameters:', '', '| name | in | type | required | description |', '|---|---|---|---|---|');
    for (const p of params) {
      const description = [p.description, p.schema.description].filter(Boolean).join(' ');
      out.push(`| ${code(p.name)} | ${p.in} | ${cell(typeOf(p.schema))} | ${p.required ? 'yes' : 'no'} | ${cell(description)} |`);
    }
    out.push('');
  }
  if (op.requestBody) {
    const types = Object.entries(op.requestBody.content);
    const raw = types.filter(([, { schema }]) => schema.contentMediaType);
    if (raw.length > 0) out.push(`Request body (${raw.map(([type]) => code(type)).join(', ')}): ${cell(op.requestBody.description ?? 'raw bytes')}`, '');
    for (const [type, { schema }] of types) {
      if (!schema.contentMediaType) out.push(`Request body (${code(type)}):`, '', ...fields(doc, schema));
    }
  }
  out.push('Responses:', '', '| status | meaning | body |', '|---|---|---|');
  const bodies: string[] = [];
  for (const [status, r] of Object.entries(op.responses)) {
    const types = Object.entries(r.content ?? {});
    const problem = types.length === 1 && types[0]![0] === 'application/problem+json';
    const meaning = problem ? `error: ${r.description.split(', ').map(code).join(', ')}` : cell(r.description);
    const body = types.map(([type, { schema }]) => (problem ? 'Problem' : `${code(type)} ${schema.$ref ? typeOf(schema) : ''}`.trim())).join('; ');
    out.push(`| ${status} | ${meaning} | ${body || '-'} |`);
    if (!problem) {
      for (const [type, { schema }] of types) {
        if (!schema.$ref) continue;
        bodies.push(`${status} (${code(type)}): ${fields(doc, schema).join('\n')}`);
      }
    }
  }
  out.push('');
  for (const body of bodies) out.push(body.trimEnd(), '');
  return out;
}

/** Each error code with the statuses it is answered with, as the operations declare them. */
function errorTable(doc: Document): string[] {
  const statuses = new Map<string, Set<string>>();
  for (const code of resolveRef(doc, { $ref: '#/components/schemas/Problem' }).properties?.code?.enum ?? []) statuses.set(String(code), new Set());
  for (const ops of Object.values(doc.paths)) {
    for (const op of Object.values(ops)) {
      for (const [status, r] of Object.entries(op.responses)) {
        if (!r.content?.['application/problem+json']) continue;
        for (const c of r.description.split(', ')) statuses.get(c)?.add(status);
      }
    }
  }
  return [
    '| code | status |',
    '|---|---|',
    ...[...statuses].map(([c, s]) => `| ${code(c)} | ${[...s].sort().join(', ') || 'none declared: the server answers it outside the operations'} |`),
    '',
  ];
}

/** Each API key scope with the operations that need it. */
function scopeTable(doc: Document): string[] {
  const byScope = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const scope = op['x-required-scope'];
      if (scope) byScope.set(scope, [...(byScope.get(scope) ?? []), code(`${method.toUpperCase()} ${path}`)]);
    }
  }
  return ['| scope | operations |', '|---|---|', ...[...byScope].map(([scope, ops]) => `| ${code(scope)} | ${ops.join(', ')} |`)];
}

export function generateApiReference(): string {
  const doc = buildOpenApi(allRoutes, '1.0.0') as Document;
  const conventions = readFileSync(CONVENTIONS_FILE, 'utf8').trimEnd().replace(SCOPES_MARK, scopeTable(doc).join('\n'));
  const out = [
    '<!-- Generated by scripts/gen-api-reference.ts (`npm run gen:api-docs`) from the OpenAPI document',
    '(api/openapi.ts, served at GET /v1/openapi.json) and scripts/api-reference-conventions.md: edit those,',
    'then regenerate. -->',
    '',
    `# ${doc.info.title}`,
    '',
    doc.info.description,
    '',
    conventions,
    '',
    '## Error codes',
    '',
    'Every code of the closed list, with the statuses operations answer it with (each operation lists its own below).',
    '',
    ...errorTable(doc),
    '## Operations',
    '',
    'By tag, in the order the API declares them.',
    '',
  ];
  const byTag = new Map<string, string[]>();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const tag = op.tags[0] ?? 'other';
      byTag.set(tag, [...(byTag.get(tag) ?? []), ...operation(doc, method, path, op)]);
    }
  }
  for (const [tag, lines] of byTag) out.push(`### ${tag}`, '', ...lines);
  return `${out.join('\n').replace(/\n{3,}/g, '\n\n').trimEnd()}\n`;
}

if (import.meta.main) {
  writeFileSync(API_REFERENCE_FILE, generateApiReference());
  process.stderr.write(`wrote ${API_REFERENCE_FILE}\n`);
}
