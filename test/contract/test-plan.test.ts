import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { declaresOnce, findTestFiles, planTests } from '../../scripts/test-plan.ts';

// Which files `npm test` runs on both runtimes: a loss here is coverage lost without a failure.

const root = new URL('../..', import.meta.url).pathname;
const plan = planTests(root, findTestFiles(root));

test('a file that starts a sandbox stack runs on both runtimes', () => {
  for (const file of ['test/sandboxes/lifecycle.test.ts', 'test/exec/terminal.test.ts', 'test/files/operations.test.ts']) {
    assert.ok(plan.perRuntime.includes(file), file);
  }
});

test('the suites of what routes ask of a runtime never declare themselves once', () => {
  const boundary = /^test\/(exec|files|sandboxes|runtime)\//;
  const declared = findTestFiles(root).filter((f) => boundary.test(f) && declaresOnce(readFileSync(join(root, f), 'utf8')));
  assert.deepEqual(declared, []);
});

test('a file that never reaches a runtime runs once', () => {
  for (const file of ['test/contract/layers.test.ts', 'test/sandboxes/engine.test.ts']) assert.ok(plan.once.includes(file), file);
});

test('a file that declares `// test-plan: once` runs once although it starts a runtime', () => {
  assert.ok(plan.once.includes('test/security/api2-broken-authentication.test.ts'));
  assert.ok(!plan.perRuntime.includes('test/security/api2-broken-authentication.test.ts'));
});

test('every test file is planned exactly once', () => {
  const all = findTestFiles(root);
  assert.deepEqual([...plan.perRuntime, ...plan.once].sort(), all);
});
