import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { PYTHON_TYPES_FILE, generatePythonTypes } from '../../scripts/gen-python-types.ts';

// The Python SDK's types come from the contract too: shared/sdk-python/paddock/_types.py is
// generated from the OpenAPI document, and this fails when the checked-in file has drifted from it
// (a route or schema changed without `npm run gen:types`).

test('shared/sdk-python/paddock/_types.py is what the OpenAPI document generates (run `npm run gen:types`)', () => {
  const generated = generatePythonTypes();
  const checkedIn = readFileSync(PYTHON_TYPES_FILE, 'utf8');
  if (generated !== checkedIn) {
    const a = generated.split('\n');
    const b = checkedIn.split('\n');
    const line = a.findIndex((l, i) => l !== b[i]);
    assert.fail(`_types.py has drifted from the contract at line ${line + 1}:\n  generated: ${a[line]}\n  checked in: ${b[line]}\nRun npm run gen:types.`);
  }
  assert.match(generated, /^ErrorCode = Literal\[$/m);
  assert.match(generated, /^class Sandbox\(TypedDict\):$/m);
  assert.match(generated, /^ExecStreamEvent = Union\[ExecStreamEventStdoutStderr, ExecStreamEventExit, ExecStreamEventError\]$/m);
  assert.match(generated, /"createSandbox": "POST \/v1\/sandboxes",/);
});
