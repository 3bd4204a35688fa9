import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { CLIENT_TYPES_FILE, generateClientTypes } from '../../scripts/gen-client-types.ts';

// The SDK's types come from the contract: shared/sdk/api-types.ts is generated from the
// OpenAPI document, and this fails when the checked-in file has drifted from it (a route or schema
// changed without `npm run gen:types`). shared/sdk/types.ts checks its own names against it at
// compile time.

test('shared/sdk/api-types.ts is what the OpenAPI document generates (run `npm run gen:types`)', () => {
  const generated = generateClientTypes();
  const checkedIn = readFileSync(CLIENT_TYPES_FILE, 'utf8');
  if (generated !== checkedIn) {
    const a = generated.split('\n');
    const b = checkedIn.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    assert.fail(`api-types.ts has drifted from the contract at line ${line + 1}:\n  generated: ${a[line]}\n  checked in: ${b[line]}\nRun npm run gen:types.`);
  }
  assert.match(generated, /export type ErrorCode =/);
  assert.match(generated, /export type Sandbox = \{/);
  assert.match(generated, /createSandbox: 'POST \/v1\/sandboxes';/);
});
