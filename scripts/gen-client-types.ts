// `npm run gen:types`: writes shared/sdk/api-types.ts, the SDK's types of the HTTP contract,
// from the OpenAPI document the API serves (itself generated from the route specs and their zod
// schemas). test/contract/client-types.test.ts fails when the checked-in file has drifted.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildOpenApi } from '../api/openapi.ts';
import { allRoutes } from '../api/routes/index.ts';
import { errorCodes } from '../shared/errors.ts';
import type { Schema } from './openapi-schema.ts';


export const CLIENT_TYPES_FILE = resolve(import.meta.dirname, '..', 'shared', 'sdk', 'api-types.ts');

const key = (name: string) => (/^[A-Za-z_$][\w$]*$/.test(name) ? name : JSON.stringify(name));
const indent = (text: string) => text.replace(/\n/g, '\n  ');

/** TypeScript for the subset of JSON Schema that zod emits. */
function typeOf(schema: Schema | undefined): string {
  if (!schema || Object.keys(schema).length === 0) return 'unknown';
  if (schema.$ref) return schema.$ref.split('/').pop()!;
  if (schema.const !== undefined) return JSON.stringify(schema.const);
  if (schema.enum) return schema.enum.map((v) => JSON.stringify(v)).join(' | ');
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return alternatives.map((s) => wrap(typeOf(s))).join(' | ');
  if (schema.allOf) return schema.allOf.map((s) => wrap(typeOf(s))).join(' & ');
  if (Array.isArray(schema.type)) return schema.type.map((t) => typeOf({ ...schema, type: t })).join(' | ');
  switch (schema.type) {
    case 'string':
      return 'string';
    case 'integer':
    case 'number':
      return 'number';
    case 'boolean':
      return 'boolean';
    case 'null':
      return 'null';
    case 'array':
      return `${wrap(typeOf(schema.items))}[]`;
    case 'object':
    case undefined: {
      const props = Object.entries(schema.properties ?? {});
      const extra = typeof schema.additionalProperties === 'object' ? `Record<string, ${typeOf(schema.additionalProperties)}>` : undefined;
      if (props.length === 0) return extra ?? 'Record<string, unknown>';
      const required = new Set(schema.required ?? []);
      const lines = props.map(([name, s]) => {
        const doc = s.description ? `/** ${s.description.replace(/\*\//g, '*\\/')} */\n` : '';
        return `${doc}${key(name)}${required.has(name) ? '' : '?'}: ${typeOf(s)};`;
      });
      const object = `{\n  ${indent(lines.join('\n'))}\n}`;
      return extra ? `${object} & ${extra}` : object;
    }
    default:
      return 'unknown';
  }
}

const wrap = (t: string) => (/[|&]/.test(t) && !t.startsWith('{') ? `(${t})` : t);

export function generateClientTypes(): string {
  const doc = buildOpenApi(allRoutes, '1.0.0') as {
    components: { schemas: Record<string, Schema> };
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  const out = [
    '// Generated from the OpenAPI document by scripts/gen-client-types.ts (`npm run gen:types`): do not',
    '// edit. The names are the document\'s component schemas; types.ts gives them the SDK\'s own names.',
    '',
    `/** Every code an error's problem document can carry (shared/errors.ts). */`,
    `export type ErrorCode =\n  | ${errorCodes.map((c) => JSON.stringify(c)).join('\n  | ')};`,
    '',
  ];
  for (const [name, schema] of Object.entries(doc.components.schemas).sort(([a], [b]) => a.localeCompare(b))) {
    out.push(`export type ${name} = ${typeOf(schema)};`, '');
  }
  const ops = Object.entries(doc.paths).flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `  ${op.operationId}: '${method.toUpperCase()} ${path}';`));
  out.push('/** Every operation of the API, by operationId. */', `export interface Operations {\n${ops.sort().join('\n')}\n}`, '');
  return out.join('\n');
}

if (import.meta.main) {
  writeFileSync(CLIENT_TYPES_FILE, generateClientTypes());
  process.stderr.write(`wrote ${CLIENT_TYPES_FILE}\n`);
}
