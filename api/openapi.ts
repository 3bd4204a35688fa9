import { z } from 'zod';
import { errorCatalogue, type ErrorCode } from '../shared/errors.ts';
import type { Route } from './routes/route.ts';

// What the JSON body reader answers on every route that reads a body (see routes/mount.ts).
const BODY_ERRORS: ErrorCode[] = ['invalid_json', 'unsupported_media_type', 'payload_too_large'];

const SECURITY: Record<string, Record<string, string[]>[]> = {
  none: [],
  dashboard: [{ dashboardToken: [] }],
  apiKey: [{ apiKey: [] }],
};

function jsonSchema(schema: z.ZodType): object {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
}

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

/** The OpenAPI 3.1 document, generated from the very specs and schemas that serve the routes. */
export function buildOpenApi(routes: Route[], version: string): object {
  const paths: Record<string, Record<string, object>> = {};
  for (const { spec } of routes) {
    const path = spec.path.replace(/:(\w+)/g, '{$1}');
    const responses: Record<string, object> = {};
    for (const [status, r] of Object.entries(spec.responses)) {
      const content: Record<string, object> = {};
      if (r.schema) content[r.contentType ?? 'application/json'] = { schema: jsonSchema(r.schema) };
      for (const alt of r.alternatives ?? []) content[alt.contentType] = { schema: jsonSchema(alt.schema) };
      responses[status] = Object.keys(content).length ? { description: r.description, content } : { description: r.description };
    }
    const byStatus = new Map<number, ErrorCode[]>();
    const readsBody = ['post', 'put', 'patch'].includes(spec.method) || spec.body !== undefined;
    for (const code of new Set<ErrorCode>([...spec.errors, ...(readsBody ? BODY_ERRORS : []), 'internal_error', 'service_unavailable'])) {
      const status = errorCatalogue[code].status;
      byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
    }
    for (const [status, codes] of byStatus) {
      responses[String(status)] = {
        description: codes.join(', '),
        content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
      };
    }
    paths[path] ??= {};
    paths[path][spec.method] = {
      summary: spec.summary,
      tags: [spec.tag],
      security: SECURITY[spec.auth],
      ...(spec.bucket ? { 'x-rate-limit-bucket': spec.bucket } : {}),
      parameters: [...queryOrPathParameters(spec.params, 'path'), ...queryOrPathParameters(spec.query, 'query')],
      ...(spec.body
        ? { requestBody: { required: true, content: { 'application/json': { schema: jsonSchema(spec.body) } } } }
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
