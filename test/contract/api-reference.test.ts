import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { buildOpenApi } from '../../api/openapi.ts';
import { allRoutes } from '../../api/routes/index.ts';
import { API_REFERENCE_FILE, generateApiReference } from '../../scripts/gen-api-reference.ts';

// docs/api.md is the contract a client reads: generated from the OpenAPI document and the
// conventions beside its generator, it fails here when the checked-in page has drifted from
// either (a route, a schema or an error list changed without `npm run gen:api-docs`).

test('docs/api.md is what the OpenAPI document generates (run `npm run gen:api-docs`)', () => {
  const generated = generateApiReference();
  const checkedIn = readFileSync(API_REFERENCE_FILE, 'utf8');
  if (generated !== checkedIn) {
    const a = generated.split('\n');
    const b = checkedIn.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    assert.fail(`docs/api.md has drifted from the contract at line ${line + 1}:\n  generated: ${a[line]}\n  checked in: ${b[line]}\nRun npm run gen:api-docs.`);
  }
});

test('docs/api.md lists every operation of the OpenAPI document, and every error code it declares', () => {
  const doc = buildOpenApi(allRoutes, '1.0.0') as { paths: Record<string, Record<string, { responses: Record<string, { description: string; content?: object }> }>> };
  const page = generateApiReference();
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const heading = `#### ${method.toUpperCase()} ${path}\n`;
      const start = page.indexOf(heading);
      assert.ok(start >= 0, `no section for ${method.toUpperCase()} ${path}`);
      const next = page.indexOf('\n#### ', start + 1);
      const section = page.slice(start, next === -1 ? undefined : next);
      for (const [status, r] of Object.entries(op.responses)) {
        assert.match(section, new RegExp(`^\\| ${status} \\|`, 'm'), `${method.toUpperCase()} ${path}: no row for ${status}`);
        if (r.content && 'application/problem+json' in r.content) {
          for (const code of r.description.split(', ')) assert.ok(section.includes(`\`${code}\``), `${method.toUpperCase()} ${path}: ${code} missing`);
        }
      }
    }
  }
});

test('the sections that comments and docs cite exist in docs/api.md', () => {
  const page = readFileSync(API_REFERENCE_FILE, 'utf8');
  for (const section of ['Conventions', 'API key scopes', 'Events and webhooks', 'Background processes', 'Archives', 'Remote MCP', 'Terminal', 'Error codes']) {
    assert.match(page, new RegExp(`^#+ ${section}$`, 'm'), `no section "${section}"`);
  }
});
