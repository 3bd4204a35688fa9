import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from '../shared/errors.ts';
import type { Route } from './routes/route.ts';
import { routeErrors } from './routes/chain.ts';
import { SandboxList, SandboxObject } from './routes/sandboxes/schema.ts';
import { ExecBody, ExecResult, ExecStreamLine } from './routes/exec/schema.ts';
import { AccountResponse } from './routes/account/schema.ts';
import { SnapshotList, SnapshotObject } from './routes/snapshots/schema.ts';

/** The contract's own names for the schemas it is read by (the others are named for their operation). */
const NAMES = new Map<z.ZodType, string>([
  [SandboxObject, 'Sandbox'],
  [SandboxList, 'SandboxList'],
  [ExecBody, 'ExecRequest'],
  [ExecResult, 'ExecResult'],
  [ExecStreamLine, 'ExecStreamEvent'],
  [AccountResponse, 'Account'],
  [SnapshotObject, 'Snapshot'],
  [SnapshotList, 'SnapshotList'],
]);

const SECURITY: Record<string, Record<string, string[]>[]> = {
  none: [],
  dashboard: [{ dashboardToken: [] }],
  apiKey: [{ apiKey: [] }],
};

function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'input'): Record<string, unknown> {
  const { $schema: _dialect, ...rest } = z.toJSONSchema(schema, { io, unrepresentable: 'any' }) as Record<string, unknown>;
  return rest;
}

const pascal = (s: string) => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * Named component schemas: each request body and response schema once under
 * components.schemas, referenced by $ref. The schemas in NAMES have their own names; the others
 * are named for their operation (CreateSandboxRequest, ListSecretsResponse…), and a schema shared
 * by several operations keeps the first name it was given.
 */
class Components {
  readonly schemas: Record<string, object> = {};
  private readonly names = new Map<z.ZodType, string>();

  ref(schema: z.ZodType, fallback: string, io: 'input' | 'output'): object {
    let name = this.names.get(schema);
    if (!name) {
      name = NAMES.get(schema) ?? fallback;
      this.names.set(schema, name);
      this.schemas[name] = jsonSchema(schema, io);
    }
    return { $ref: `#/components/schemas/${name}` };
  }
}

const header = (description: string, schema: object = { type: 'integer', minimum: 0 }) => ({ description, schema });
const RATE_HEADERS = {
  'X-RateLimit-Limit': header("The bucket's size: requests per minute"),
  'X-RateLimit-Remaining': header('Tokens left in the bucket after this request'),
};
const RETRY_AFTER = { 'Retry-After': header('Whole seconds to wait before trying again') };
// Every answer, success or problem, names its request (the problem's requestId too): the one to quote.
const REQUEST_ID = { 'X-Request-Id': header("This request's id: the caller's own X-Request-Id when it is a safe token, else one made here", { type: 'string' }) };
const REQUEST_ID_PARAMETER = {
  name: 'X-Request-Id',
  in: 'header',
  required: false,
  // Not refused when malformed, replaced: hence no pattern on the schema, the rule in words.
  description: "An id of the caller's choosing for this request, answered back and logged when it is 1 to 128 of A-Z a-z 0-9 . _ : -; any other value is replaced",
  schema: { type: 'string' },
};

function queryOrPathParameters(schema: z.ZodType | undefined, where: 'query' | 'path') {
  if (!schema) return [];
  const js = jsonSchema(schema) as { properties?: Record<string, object>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({
    name,
    in: where,
    required: where === 'path' || (js.required ?? []).includes(name),
    schema: s,
  }));
}

/** A body of raw bytes in one of the media types (OpenAPI 3.1: a string of that media type). */
function streamedRequestBody(body: { mediaTypes: string[]; description: string }): object {
  const content = Object.fromEntries(body.mediaTypes.map((type) => [type, { schema: { type: 'string', contentMediaType: type } }]));
  return { required: true, description: body.description, content };
}

/** The OpenAPI 3.1 document, generated from the very specs and schemas that serve the routes. */
export function buildOpenApi(routes: Route[], version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  const components = new Components();
  for (const { spec } of routes) {
    const path = spec.path.replace(/:(\w+)/g, '{$1}');
    const name = pascal(spec.operationId);
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      const content: Record<string, object> = {};
      if (r.schema) content[r.contentType ?? 'application/json'] = { schema: components.ref(r.schema, `${name}Response`, 'output') };
      for (const alt of r.alternatives ?? []) content[alt.contentType] = { schema: components.ref(alt.schema, `${name}Stream`, 'output') };
      const own = Object.fromEntries(Object.entries(r.headers ?? {}).map(([h, description]) => [h, header(description, { type: 'string' })]));
      responses[status] = {
        description: r.description,
        headers: { ...REQUEST_ID, ...(spec.bucket && Number(status) < 300 ? RATE_HEADERS : {}), ...own },
        ...(Object.keys(content).length ? { content } : {}),
      };
    }
    const byStatus = new Map<number, ErrorCode[]>();
    for (const code of routeErrors(spec)) {
      const status = errorCatalogue[code].status;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    for (const [status, codes] of byStatus) {
      responses[String(status)] = {
        // The codes this operation can answer with this status (also the schema's enum).
        description: codes.join(', '),
        headers: { ...REQUEST_ID, ...(status === 429 || status === 503 ? RETRY_AFTER : {}) },
        content: {
          'application/problem+json': {
            schema: { allOf: [{ $ref: '#/components/schemas/Problem' }, { type: 'object', properties: { code: { enum: codes } } }] },
          },
        },
      };
    }
    const headers = (spec.requestHeaders ?? []).map((h) => ({ name: h.name, in: 'header', required: false, description: h.description, schema: { type: 'string', maxLength: 255 } }));
    paths[path] ??= {};
    paths[path][spec.method] = {
      operationId: spec.operationId,
      summary: spec.summary,
      tags: [spec.tag],
      // An API key's scopes ride on the security requirement, as OAuth scopes do.
      security: spec.scope ? [{ apiKey: [spec.scope] }] : SECURITY[spec.auth],
      ...(spec.scope ? { 'x-required-scope': spec.scope } : {}),
      ...(spec.bucket ? { 'x-rate-limit-bucket': spec.bucket } : {}),
      ...(spec.inFlight ? { 'x-in-flight-cap': spec.inFlight } : {}),
      parameters: [...queryOrPathParameters(spec.params, 'path'), ...queryOrPathParameters(spec.query, 'query'), ...headers, REQUEST_ID_PARAMETER],
      ...(spec.streamedBody ? { requestBody: streamedRequestBody(spec.streamedBody) } : {}),
      ...(spec.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: components.ref(spec.body, `${name}Request`, 'input') } } } }
        : {}),
      responses,
    };
  }
  return {
    openapi: '3.1.0',
    info: {
      title: 'Paddock API',
      version,
      description:
        'The Paddock sandbox control-plane. Errors are RFC 9457 problem documents whose `code` is stable; ' +
        'rate-limited routes answer X-RateLimit-Limit and X-RateLimit-Remaining, and Retry-After on 429.',
    },
    servers: [{ url: '/' }],
    paths,
    components: {
      securitySchemes: {
        dashboardToken: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT', description: 'From signup or login' },
        apiKey: { type: 'http', scheme: 'bearer', description: 'pdk_live_… from POST /v1/api-keys' },
      },
      schemas: {
        ...components.schemas,
        Problem: {
          type: 'object',
          required: ['type', 'title', 'status', 'detail', 'code', 'requestId'],
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: { type: 'string', enum: Object.keys(errorCatalogue) },
            requestId: { type: 'string' },
          },
        },
      },
    },
  };
}
