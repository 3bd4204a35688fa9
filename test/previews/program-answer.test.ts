import assert from 'node:assert/strict';
import { PassThrough } from 'node:stream';
import { test } from 'node:test';
import { readProgramAnswer, type AnswerHead } from '../../api/services/previews/program-answer.ts';

// test-plan: once (a parser over bytes; the proxy that uses it is driven through HTTP on both
// runtimes by test/previews/)

interface Read {
  head?: AnswerHead;
  body: Buffer;
  outcome: 'end' | 'invalid' | 'closed';
}

/** Feeds `pieces` (cut where the test says) to the reader, then ends the connection. */
async function read(pieces: (string | Buffer)[], method = 'GET', end = true): Promise<Read> {
  const upstream = new PassThrough();
  const chunks: Buffer[] = [];
  const result = new Promise<Read>((resolve) => {
    let head: AnswerHead | undefined;
    readProgramAnswer(upstream, method, {
      head: (h) => ((head = h), true),
      data: (c) => (chunks.push(Buffer.from(c)), true),
      end: () => resolve({ head, body: Buffer.concat(chunks), outcome: 'end' }),
      fail: (why) => resolve({ head, body: Buffer.concat(chunks), outcome: why }),
    });
  });
  for (const piece of pieces) {
    upstream.write(typeof piece === 'string' ? Buffer.from(piece, 'latin1') : piece);
    await new Promise((r) => setImmediate(r));
  }
  if (end) upstream.end();
  return result;
}

/** `text` cut into pieces of one byte each: every boundary a socket could make. */
const bytewise = (text: string) => [...Buffer.from(text, 'latin1')].map((b) => Buffer.from([b]));

test('a length-framed answer: the head and exactly its bytes, whatever the cuts; bytes past it are not the answer\'s', async () => {
  const whole = 'HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nSet-Cookie: a=1\r\nSet-Cookie: b=2\r\nContent-Length: 5\r\n\r\nhello';
  for (const pieces of [[whole], bytewise(whole), [whole + 'EXTRA']]) {
    const got = await read(pieces);
    assert.equal(got.outcome, 'end');
    assert.equal(got.head?.status, 200);
    assert.equal(got.head?.reason, 'OK');
    assert.equal(got.head?.length, 5);
    assert.deepEqual(got.head?.fields, ['content-type', 'text/plain', 'set-cookie', 'a=1', 'set-cookie', 'b=2', 'content-length', '5']);
    assert.equal(got.body.toString(), 'hello');
  }
  // Cut short: the connection ended before the length was met.
  assert.equal((await read(['HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort'])).outcome, 'closed');
});

test('a chunked answer is unwrapped across every boundary, extensions and trailers included', async () => {
  const whole = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n';
  for (const pieces of [[whole], bytewise(whole)]) {
    const got = await read(pieces, 'GET', false);
    assert.equal(got.outcome, 'end');
    assert.equal(got.head?.length, undefined);
    assert.equal(got.body.toString(), 'hello 0123456789');
  }
  for (const bad of ['zz\r\nhello\r\n0\r\n\r\n', '5\r\nhelloXX0\r\n\r\n', `${'f'.repeat(13)}\r\n`]) {
    assert.equal((await read([`HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n${bad}`])).outcome, 'invalid', bad);
  }
});

test('interim answers are skipped; HEAD, 204 and 304 have no body; an unframed body runs to the close', async () => {
  const got = await read(['HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok']);
  assert.equal(got.head?.status, 201);
  assert.equal(got.body.toString(), 'ok');
  const head = await read(['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n'], 'HEAD', false);
  assert.equal(head.outcome, 'end');
  assert.equal(head.head?.length, 100);
  for (const status of [204, 304]) assert.equal((await read([`HTTP/1.1 ${status} X\r\n\r\n`], 'GET', false)).outcome, 'end');
  const open = await read(['HTTP/1.0 200 OK\n', 'Server: old\n\n', 'all of ', 'it']);
  assert.equal(open.outcome, 'end');
  assert.equal(open.head?.fields[1], 'old');
  assert.equal(open.body.toString(), 'all of it');
});

test('heads that could be read two ways, or are not HTTP, are refused', async () => {
  const heads = [
    'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: 5, 6\r\n\r\n',
    'HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nX-A: 1\r\n folded\r\n\r\n',
    'HTTP/1.1 200 OK\r\nBad Name: 1\r\n\r\n',
    'HTTP/1.1 200 OK\r\nX-A: a\x00b\r\n\r\n',
    'HTTP/1.1 101 Switching Protocols\r\n\r\n',
    'HTTP/2 200\r\n\r\n',
    'SSH-2.0-OpenSSH_9.2\r\n\r\n',
    `HTTP/1.1 200 OK\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
  ];
  for (const head of heads) assert.equal((await read([head])).outcome, 'invalid', JSON.stringify(head.slice(0, 60)));
  // A head that never ends is refused once past the cap, not buffered on.
  assert.equal((await read([`HTTP/1.1 200 OK\r\nX: ${'a'.repeat(20_000)}`], 'GET', false)).outcome, 'invalid');
  // The same length told twice is one length; a reason phrase with control bytes is dropped.
  const twice = await read(['HTTP/1.1 200 O\x01K\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\nok']);
  assert.equal(twice.outcome, 'end');
  assert.equal(twice.head?.reason, undefined);
});

test('a sink that is full pauses the connection until resumed', async () => {
  const upstream = new PassThrough();
  const taken: number[] = [];
  let ended = false;
  const reader = readProgramAnswer(upstream, 'GET', {
    head: () => true,
    data: (c) => (taken.push(c.byteLength), false),
    end: () => (ended = true),
    fail: () => assert.fail('no failure'),
  });
  upstream.write('HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nabc');
  upstream.write('def');
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(taken, [3]);
  assert.equal(upstream.isPaused(), true);
  reader.resume();
  await new Promise((r) => setImmediate(r));
  assert.deepEqual(taken, [3, 3]);
  assert.equal(ended, true);
});
