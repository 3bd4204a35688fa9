import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { MASK_MIN_BYTES, MaskSet, SecretMasker } from '../../shared/exec/masker.ts';

/**
 * The masking rule stated plainly: every occurrence of any secret is masked; occurrences that
 * overlap are one ***, occurrences back to back one *** each.
 */
function reference(text: Buffer, secrets: string[]): Buffer {
  const found: [number, number][] = [];
  for (const secret of secrets.map((s) => Buffer.from(s)).filter((s) => s.length >= MASK_MIN_BYTES)) {
    for (let at = text.indexOf(secret); at !== -1; at = text.indexOf(secret, at + 1)) found.push([at, at + secret.length]);
  }
  found.sort((a, b) => a[0] - b[0]);
  const merged: [number, number][] = [];
  for (const [s, e] of found) {
    const last = merged.at(-1);
    if (last && s < last[1]) last[1] = Math.max(last[1], e);
    else merged.push([s, e]);
  }
  const parts: Buffer[] = [];
  let from = 0;
  for (const [s, e] of merged) {
    parts.push(text.subarray(from, s), SecretMasker.MASK);
    from = e;
  }
  parts.push(text.subarray(from));
  return Buffer.concat(parts);
}

function maskInChunks(text: Buffer, secrets: string[], cuts: number[]): Buffer {
  // Built as an exec builds it, once, into a set its maskers share.
  const masker = new SecretMasker(MaskSet.of(secrets));
  const out: Buffer[] = [];
  let from = 0;
  for (const cut of [...new Set(cuts.map((c) => c % (text.length + 1)))].sort((a, b) => a - b)) {
    out.push(masker.push(text.subarray(from, cut)));
    from = cut;
  }
  out.push(masker.push(text.subarray(from)), masker.flush());
  return Buffer.concat(out);
}

test('masking in any chunking equals the plain rule, for overlapping, nested and repeated secrets', () => {
  const alphabet = fc.constantFrom(...'abcab€\n');
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: alphabet, minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 5 }),
      fc.string({ unit: alphabet, maxLength: 80 }),
      fc.array(fc.nat(), { maxLength: 6 }),
      (secrets, text, cuts) => {
        const bytes = Buffer.from(text);
        assert.deepEqual(maskInChunks(bytes, secrets, cuts).toString('latin1'), reference(bytes, secrets).toString('latin1'));
      },
    ),
    { numRuns: Number(process.env.MASKER_RUNS ?? 3000) },
  );
});

test('only bytes that could still begin a secret are held back', () => {
  const masker = new SecretMasker(['supersecret', 'another-one']);
  assert.equal(masker.push(Buffer.from('plain output with no secret\n')).toString(), 'plain output with no secret\n');
  assert.equal(masker.held, 0);
  assert.equal(masker.push(Buffer.from('token: sup')).toString(), 'token: ');
  assert.equal(masker.held, 3);
  assert.equal(masker.push(Buffer.from('ersecret!')).toString(), '***!');
  assert.equal(masker.flush().toString(), '');
});

test('values shorter than the minimum are not masked', () => {
  const masker = new SecretMasker(['ab', 'x', 'longer']);
  assert.equal(Buffer.concat([masker.push(Buffer.from('ab x longer')), masker.flush()]).toString(), 'ab x ***');
});

test('one pass whatever the number of secrets: a thousand secrets over 4 MiB', () => {
  const secrets = Array.from({ length: 1000 }, (_, i) => `secret-value-${i.toString(36)}-${'q'.repeat(i % 40)}`);
  const masker = new SecretMasker(secrets);
  const chunk = Buffer.from(`${'output line without any of them, but with secret-value- prefixes\n'.repeat(1024)}`);
  const started = performance.now();
  let out = 0;
  for (let i = 0; i < 64; i++) out += masker.push(chunk).length;
  out += masker.flush().length;
  const ms = performance.now() - started;
  assert.equal(out, chunk.length * 64);
  // Not a speed goal, a complexity check: 1000 indexOf scans per chunk took seconds.
  assert.ok(ms < 3000, `${ms} ms`);
});

test('a release passes on what is held back, and the rest of a secret begun before it is still masked', () => {
  const masker = new SecretMasker(['supersecret', 'another-one']);
  assert.equal(masker.push(Buffer.from('token: sup')).toString(), 'token: ');
  assert.equal(masker.held, 3);
  // A pause: the held bytes go out (they only might have begun a secret).
  assert.equal(masker.release().toString(), 'sup');
  assert.equal(masker.held, 0);
  // The output goes on to finish the secret: what had not gone out yet is masked.
  assert.equal(Buffer.concat([masker.push(Buffer.from('ersecret and another-one')), masker.flush()]).toString(), '*** and ***');

  // Released bytes that did not begin a secret change nothing after them.
  const other = new SecretMasker(['supersecret']);
  assert.equal(other.push(Buffer.from('sup')).toString(), '');
  assert.equal(other.release().toString(), 'sup');
  assert.equal(Buffer.concat([other.push(Buffer.from('per supersecret')), other.flush()]).toString(), 'per ***');
});

test('releases at any points: no secret ever goes out whole, and what is not released early is masked as without them', () => {
  const alphabet = fc.constantFrom(...'abcab€\n');
  fc.assert(
    fc.property(
      fc.array(fc.string({ unit: alphabet, minLength: MASK_MIN_BYTES, maxLength: 8 }), { minLength: 1, maxLength: 4 }),
      fc.string({ unit: alphabet, maxLength: 60 }),
      fc.array(fc.tuple(fc.nat(), fc.boolean()), { maxLength: 8 }),
      (secrets, text, cuts) => {
        const bytes = Buffer.from(text);
        const masker = new SecretMasker(secrets);
        const out: Buffer[] = [];
        let from = 0;
        const points = [...new Map(cuts.map(([c, r]) => [c % (bytes.length + 1), r])).entries()].sort((a, b) => a[0] - b[0]);
        for (const [cut, release] of points) {
          out.push(masker.push(bytes.subarray(from, cut)));
          if (release) out.push(masker.release());
          from = cut;
        }
        out.push(masker.push(bytes.subarray(from)), masker.flush());
        const result = Buffer.concat(out);
        for (const secret of secrets) assert.ok(!result.includes(Buffer.from(secret)), `${JSON.stringify(secret)} in ${JSON.stringify(result.toString())}`);
        if (!points.some(([, release]) => release)) assert.deepEqual(result.toString('latin1'), reference(bytes, secrets).toString('latin1'));
      },
    ),
    { numRuns: Number(process.env.MASKER_RUNS ?? 3000) },
  );
});

test('after a release, a secret finished a byte at a time is masked from where the release left it', () => {
  const masker = new SecretMasker(['supersecret']);
  assert.equal(masker.push(Buffer.from('x sup')).toString(), 'x ');
  assert.equal(masker.release().toString(), 'sup');
  const out = [...'ersecret'].map((ch) => masker.push(Buffer.from(ch)).toString());
  // Held until the next byte shows the secret cannot go on (as without a release).
  assert.deepEqual(out, ['', '', '', '', '', '', '', '']);
  assert.equal(masker.push(Buffer.from(' done')).toString() + masker.flush().toString(), '*** done');
});

test('maskers of one built set share its automaton, each with its own place in its own stream', () => {
  const set = MaskSet.of(['abcd', 'efgh', 'k9-shared-secret'])!;
  const automaton = (masker: SecretMasker) => Reflect.get(masker, 'automaton') as object;
  const [stdout, stderr] = [new SecretMasker(set), new SecretMasker(set)];
  assert.equal(automaton(stdout), automaton(stderr));
  // Interleaved, as an exec's two streams are: a secret begun in one is not finished by the other.
  const out = [stdout.push(Buffer.from('x ab')), stderr.push(Buffer.from('cd k9-shared')), stdout.push(Buffer.from('cd y')), stderr.push(Buffer.from('-secret'))];
  assert.equal(Buffer.concat([out[0]!, out[2]!, stdout.flush()]).toString(), 'x *** y');
  assert.equal(Buffer.concat([out[1]!, out[3]!, stderr.flush()]).toString(), 'cd ***');
  assert.equal(MaskSet.of(['abc', '']), undefined, 'nothing long enough to mask: no set');
  assert.equal(new SecretMasker(undefined).active, false);
});
