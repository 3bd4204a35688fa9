// `npm run gen:types` (with gen-client-types.ts): writes shared/sdk-python/paddock/_types.py, the
// Python SDK's types of the HTTP contract, from the same OpenAPI document: a TypedDict for each
// object schema (its nested objects named after their place: ListSecretsResponse.data[] is
// ListSecretsResponseData), Literal for enums, Union for alternatives. It runs on Python 3.9+
// without typing_extensions, so a schema with both required and optional members is a class of
// the required ones and a `total=False` class over it. test/contract/python-types.test.ts fails
// when the checked-in file has drifted.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildOpenApi } from '../api/openapi.ts';
import { allRoutes } from '../api/routes/index.ts';
import { errorCodes } from '../shared/errors.ts';
import type { Schema } from './openapi-schema.ts';

export const PYTHON_TYPES_FILE = resolve(import.meta.dirname, '..', 'shared', 'sdk-python', 'paddock', '_types.py');

const PY_KEYWORDS = new Set(
  'False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield'.split(' '),
);
const identifier = (name: string) => /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !PY_KEYWORDS.has(name);
const pascal = (text: string) =>
  text
    .split(/[^A-Za-z0-9]+/)
    .filter(Boolean)
    .map((w) => w[0]!.toUpperCase() + w.slice(1))
    .join('');
const literal = (value: unknown) => (value === null ? 'None' : typeof value === 'boolean' ? (value ? 'True' : 'False') : JSON.stringify(value));
const comment = (text: string, pad: string) => text.split('\n').map((l) => `${pad}#: ${l}`).join('\n');

/** The Python definitions of one document, nested ones written before the ones that use them. */
class Writer {
  readonly out: string[] = [];
  readonly #taken = new Set<string>();

  constructor(reserved: string[]) {
    for (const name of reserved) this.#taken.add(name);
  }

  #claim(name: string): string {
    let chosen = name;
    for (let i = 2; this.#taken.has(chosen); i++) chosen = `${name}${i}`;
    this.#taken.add(chosen);
    return chosen;
  }

  /** A top-level component: a class for an object, else an alias. */
  component(name: string, schema: Schema): void {
    if (this.#isClass(schema)) {
      this.#taken.delete(name);
      this.typeOf(schema, name);
      return;
    }
    // An alias keeps its name: an object inside it (the items of a list, the one alternative
    // besides null) takes the next free one.
    const type = this.typeOf(schema, name);
    this.out.push(`${schema.description ? `${comment(schema.description, '')}\n` : ''}${name} = ${type}\n`);
  }

  #isClass(schema: Schema): boolean {
    return (schema.type === 'object' || schema.type === undefined) && Object.keys(schema.properties ?? {}).length > 0 && !schema.anyOf && !schema.oneOf;
  }

  /** The Python type of a schema; `name` is the class name an object here would take. */
  typeOf(schema: Schema | undefined, name: string): string {
    if (!schema || Object.keys(schema).length === 0) return 'Any';
    if (schema.$ref) return schema.$ref.split('/').pop()!;
    if (schema.const !== undefined) return `Literal[${literal(schema.const)}]`;
    if (schema.enum) return `Literal[${schema.enum.map(literal).join(', ')}]`;
    const alternatives = schema.anyOf ?? schema.oneOf;
    if (alternatives) return this.#union(alternatives, name);
    if (schema.allOf) return 'Dict[str, Any]';
    if (Array.isArray(schema.type)) return this.#union(schema.type.map((type) => ({ ...schema, type })), name);
    switch (schema.type) {
      case 'string':
        return 'str';
      case 'integer':
        return 'int';
      case 'number':
        return 'float';
      case 'boolean':
        return 'bool';
      case 'null':
        return 'None';
      case 'array':
        return `List[${this.typeOf(schema.items, name)}]`;
      case 'object':
      case undefined: {
        if (!this.#isClass(schema)) {
          return typeof schema.additionalProperties === 'object' ? `Dict[str, ${this.typeOf(schema.additionalProperties, name)}]` : 'Dict[str, Any]';
        }
        return this.#typedDict(schema, this.#claim(name));
      }
      default:
        return 'Any';
    }
  }

  #union(alternatives: Schema[], name: string): string {
    const nullable = alternatives.some((s) => s.type === 'null');
    const named = alternatives.filter((s) => s.type !== 'null');
    const types = named.map((s, i) => this.typeOf(s, named.length > 1 ? name + this.#altName(s, i) : name));
    const unique = [...new Set(types)];
    const inner = unique.length === 1 ? unique[0]! : `Union[${unique.join(', ')}]`;
    return nullable ? `Optional[${inner}]` : inner;
  }

  /** An alternative's name: from its `type` member's value(s) when it has one, else its place. */
  #altName(schema: Schema, index: number): string {
    const tag = schema.properties?.type;
    const values = tag?.const !== undefined ? [tag.const] : tag?.enum;
    return values ? values.map((v) => pascal(String(v))).join('') : String(index + 1);
  }

  #typedDict(schema: Schema, name: string): string {
    const required = new Set(schema.required ?? []);
    const props = Object.entries(schema.properties ?? {}).map(([key, s]) => ({
      key,
      type: this.typeOf(s, name + pascal(key)),
      doc: s.description,
      required: required.has(key),
    }));
    const doc = schema.description ?? `The ${name} object of the API.`;
    if (props.some((p) => !identifier(p.key))) {
      // A member Python cannot name (`from`): the functional form, every member optional.
      const members = props.map((p) => `${p.doc ? `${comment(p.doc, '        ')}\n` : ''}        ${JSON.stringify(p.key)}: ${p.type},`).join('\n');
      this.out.push(`${comment(doc, '')}\n${name} = TypedDict(\n    ${JSON.stringify(name)},\n    {\n${members}\n    },\n    total=False,\n)\n`);
      return name;
    }
    const body = (list: typeof props) => list.map((p) => `${p.doc ? `${comment(p.doc, '    ')}\n` : ''}    ${p.key}: ${p.type}`).join('\n');
    const mandatory = props.filter((p) => p.required);
    const optional = props.filter((p) => !p.required);
    const docstring = `    ${JSON.stringify(doc).replace(/^"|"$/g, '"""')}`;
    if (optional.length === 0) {
      this.out.push(`class ${name}(TypedDict):\n${docstring}\n\n${body(mandatory)}\n`);
    } else if (mandatory.length === 0) {
      this.out.push(`class ${name}(TypedDict, total=False):\n${docstring}\n\n${body(optional)}\n`);
    } else {
      const base = this.#claim(`_${name}Required`);
      this.out.push(`class ${base}(TypedDict):\n${body(mandatory)}\n`);
      this.out.push(`class ${name}(${base}, total=False):\n${docstring}\n\n${body(optional)}\n`);
    }
    return name;
  }
}

export function generatePythonTypes(): string {
  const doc = buildOpenApi(allRoutes, '1.0.0') as {
    components: { schemas: Record<string, Schema> };
    paths: Record<string, Record<string, { operationId: string }>>;
  };
  const components = Object.entries(doc.components.schemas).sort(([a], [b]) => a.localeCompare(b));
  const writer = new Writer(['ErrorCode', 'Json', 'OPERATIONS', ...components.map(([name]) => name)]);
  for (const [name, schema] of components) writer.component(name, schema);
  const ops = Object.entries(doc.paths)
    .flatMap(([path, methods]) => Object.entries(methods).map(([method, op]) => `    ${JSON.stringify(op.operationId)}: "${method.toUpperCase()} ${path}",`))
    .sort();
  return [
    '# Generated from the OpenAPI document by scripts/gen-python-types.ts (`npm run gen:types`): do not',
    '# edit. The names are the document\'s component schemas; a nested object is named after its place.',
    '"""The API\'s objects as TypedDicts (what the SDK\'s methods answer), generated from its OpenAPI document."""',
    '',
    'from typing import Any, Dict, List, Literal, Optional, TypedDict, Union',
    '',
    '#: A JSON object whose members the SDK does not type.',
    'Json = Dict[str, Any]',
    '',
    "#: Every code an error's problem document can carry.",
    `ErrorCode = Literal[\n${errorCodes.map((c) => `    ${JSON.stringify(c)},`).join('\n')}\n]`,
    '',
    ...writer.out.map((d) => `\n${d}`),
    '#: Every operation of the API, by operationId.',
    `OPERATIONS: Dict[str, str] = {\n${ops.join('\n')}\n}`,
    '',
  ].join('\n');
}

if (import.meta.main) {
  writeFileSync(PYTHON_TYPES_FILE, generatePythonTypes());
  process.stderr.write(`wrote ${PYTHON_TYPES_FILE}\n`);
}
