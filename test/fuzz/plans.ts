import fc from 'fast-check';
import { z } from 'zod';
import type { Route } from '../../api/routes/route.ts';
import { tarOf } from '../files/tar-writer.ts';

// Request plans for the route fuzzer, derived from the route list itself: a route added to
// api/routes/index.ts is fuzzed without touching this file. Each route's zod schemas are turned
// into JSON Schema (as the OpenAPI document is) and from there into fast-check arbitraries of
// "valid-ish" input. A plan is either entirely valid-ish (so that requests get past validation
// and into the handlers, the database and the runtime) or has any of its parts (path, query,
// body, headers, credential, method, transport) replaced by something hostile.
//
// Plans are plain data, so a shrunk counterexample prints readably. Values that need the live
// state of the run (ids of real sandboxes and keys, a fresh email) are symbolic references,
// strings like "@sbx.mine", resolved when the request is sent (see client.ts).

export type AccountName = 'A' | 'B' | 'C';

export type CredentialChoice =
  | { kind: 'none' }
  /** The account's credential of the kind the route takes. */
  | { kind: 'own'; account: AccountName }
  /** The account's credential of the other kind. */
  | { kind: 'otherType'; account: AccountName }
  | { kind: 'revoked' }
  /** A dashboard token with a forged or stale detail (see client.ts). */
  | { kind: 'forged'; how: ForgeryKind }
  /** The Authorization header exactly as given. */
  | { kind: 'raw'; header: string };

export const FORGERIES = ['algNone', 'expired', 'notYet', 'wrongAudience', 'wrongSecret', 'hs512', 'noSubject', 'foreignSubject'] as const;
export type ForgeryKind = (typeof FORGERIES)[number];

export type BodyPlan =
  | { kind: 'json'; value: unknown }
  | { kind: 'text'; text: string }
  /** Bytes given as hex, for what is not UTF-8. */
  | { kind: 'bytes'; hex: string }
  /** Bytes of their own media type (an archive), given as hex. */
  | { kind: 'raw'; hex: string; contentType: string }
  /** A JSON body with one string field of `size` characters (built at send time, not printed). */
  | { kind: 'huge'; field: string; size: number; base: Record<string, unknown> };

export interface Segment {
  value: string;
  /** Sent as it is (already escaped or deliberately not); otherwise percent-encoded. */
  raw?: boolean;
}

export interface Plan {
  /** The route the plan was derived from: "POST /v1/sandboxes/:id/exec". */
  route: string;
  method: string;
  params: Record<string, Segment>;
  /** Query pairs (values may be references), or a raw query string. */
  query: [string, string][] | { raw: string };
  headers: Record<string, string>;
  credential: CredentialChoice;
  body?: BodyPlan;
  /** Chunked transfer encoding instead of Content-Length. */
  chunked?: boolean;
  /** Through a raw TCP socket, with something Node's client would never send. */
  tcp?: { mangle: TcpMangle };
}

export const TCP_MANGLES = [
  'utf8HeaderValue',
  'controlCharInHeader',
  'obsFold',
  'bareLf',
  'duplicateContentLength',
  'contentLengthAndChunked',
  'badMethod',
  'http10',
  'absoluteUri',
  'hugeHeader',
  'badChunk',
  'spaceBeforeColon',
] as const;
export type TcpMangle = (typeof TCP_MANGLES)[number];

export const routeKey = (route: Route) => `${route.spec.method.toUpperCase()} ${route.spec.path}`;

/** valid: every part valid-ish; any: each part may be hostile. */
type Mode = 'valid' | 'any';

/** `valid` most of the time, else `hostile`; oneof shrinks towards its first arbitrary, the valid one. */
function mostly<T>(valid: fc.Arbitrary<T>, hostile: fc.Arbitrary<T>, mode: Mode, hostileWeight = 1, validWeight = 4): fc.Arbitrary<T> {
  if (mode === 'valid') return valid;
  return fc.oneof({ weight: validWeight, arbitrary: valid }, { weight: hostileWeight, arbitrary: hostile });
}

// ---------------------------------------------------------------------------------------------
// Hostile values

const LONE_SURROGATES = ['\ud800', '\udfff', 'a\ud83d', '\ude00b', '\udbff\udbff'];
const TRICKY_STRINGS = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  ...LONE_SURROGATES,
  '\u202e',
  'abc\u200fdef',
  '\u2028\u2029',
  '\ufeff',
  '\uffff',
  '🦀',
  '👩‍👩‍👧‍👦',
  'e\u0301',
  'İ',
  'ß',
  '\r\nX-Injected: 1',
  '\t',
  '\u001b[31m',
  '../../../../etc/shadow',
  '/etc/passwd',
  '..',
  '.',
  '%00',
  '%2e%2e%2f',
  '${jndi:ldap://127.0.0.1/x}',
  "'; drop table accounts; --",
  '" or 1=1 --',
  '$(id)',
  '`id`',
  '<script>alert(1)</script>',
  '__proto__',
  'constructor',
  'prototype',
  'toString',
  'hasOwnProperty',
  'NaN',
  'Infinity',
  '-0',
  '1e309',
  'null',
  'true',
  '{}',
  '[]',
  '*',
  '**/*',
  '[',
  '(',
  '\\',
  'a'.repeat(255),
  'a'.repeat(256),
  'x'.repeat(4097),
];

export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 5, arbitrary: fc.constantFrom(...TRICKY_STRINGS) },
  { weight: 2, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
  { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 40 }) },
  {
    weight: 1,
    arbitrary: fc
      .tuple(fc.constantFrom(...LONE_SURROGATES, '\u0000', '\u202e'), fc.string({ maxLength: 10 }))
      .map(([odd, s]) => `${s}${odd}${s}`),
  },
  { weight: 1, arbitrary: fc.constantFrom(1000, 5000, 20_000).map((n) => 'é'.repeat(n)) },
);

/** Nested arrays or objects, `depth` deep, as JSON text (JSON.stringify would recurse as deep). */
const deepJson = fc
  .tuple(fc.constantFrom(50, 1000, 20_000), fc.boolean())
  .map(([depth, arrays]) => (arrays ? '['.repeat(depth) + ']'.repeat(depth) : `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`));

const PROTOTYPE_KEYS = ['__proto__', 'constructor', 'prototype'];

export const hostileValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  {
    weight: 2,
    arbitrary: fc.constantFrom<unknown>(null, true, false, 0, -1, 1.5, -0, 1e308, -1e308, Number.MAX_SAFE_INTEGER + 2, [], {}, [null], ['']),
  },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.array(hostileString, { maxLength: 5 }) },
  { weight: 1, arbitrary: fc.dictionary(hostileString, hostileString, { maxKeys: 4 }) },
  { weight: 1, arbitrary: fc.constantFrom(...PROTOTYPE_KEYS).map((k) => ({ [k]: { polluted: 'yes' } })) },
  { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
);

// ---------------------------------------------------------------------------------------------
// Valid-ish values: from JSON Schema, with hand-made ones for fields whose meaning matters

interface JsonSchema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: JsonSchema[];
  const?: unknown;
  oneOf?: JsonSchema[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  minLength?: number;
  maxLength?: number;
  pattern?: string;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  format?: string;
}

function jsonSchemaOf(schema: z.ZodType): JsonSchema {
  return z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

function patterned(pattern: string, maxLength: number): fc.Arbitrary<string> {
  try {
    const regex = new RegExp(pattern, 'u');
    fc.sample(fc.stringMatching(regex), 1);
    return fc.stringMatching(regex).map((s) => s.slice(0, maxLength));
  } catch {
    // A pattern fast-check cannot generate from (Unicode property classes): plain text.
    return fc.string({ unit: 'grapheme', maxLength: Math.min(maxLength, 30) });
  }
}

type Semantic = (field: string) => fc.Arbitrary<unknown> | undefined;

function fromSchema(schema: JsonSchema, field: string, semantic: Semantic): fc.Arbitrary<unknown> {
  const special = semantic(field);
  if (special) return special;
  if (schema.enum) return fc.constantFrom(...schema.enum);
  if (schema.const !== undefined) return fc.constant(schema.const);
  const alternatives = schema.anyOf ?? schema.oneOf;
  if (alternatives) return fc.oneof(...alternatives.map((s) => fromSchema(s, field, semantic)));
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  switch (type) {
    case 'string': {
      const maxLength = Math.min(schema.maxLength ?? 40, 40);
      if (schema.pattern) return patterned(schema.pattern, schema.maxLength ?? 200);
      return fc.string({ unit: 'grapheme', minLength: Math.min(schema.minLength ?? 0, maxLength), maxLength });
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -10, max: Math.min(schema.maximum ?? 1000, 1_000_000) });
    case 'number':
      return fc.double({ min: schema.exclusiveMinimum ?? schema.minimum ?? -10, max: schema.maximum ?? 1000, noNaN: true });
    case 'boolean':
      return fc.boolean();
    case 'array':
      return fc.array(schema.items ? fromSchema(schema.items, `${field}[]`, semantic) : fc.jsonValue(), {
        minLength: schema.minItems ?? 0,
        maxLength: Math.min(schema.maxItems ?? 4, 4),
      });
    case 'object': {
      if (schema.properties) {
        const props: Record<string, fc.Arbitrary<unknown>> = {};
        for (const [name, s] of Object.entries(schema.properties)) props[name] = fromSchema(s, name, semantic);
        return fc.record(props, { requiredKeys: schema.required ?? [] });
      }
      if (typeof schema.additionalProperties === 'object') {
        const keys = schema.propertyNames ? fromSchema(schema.propertyNames, `${field}{}`, semantic) : fc.string({ maxLength: 10 });
        return fc.dictionary(keys as fc.Arbitrary<string>, fromSchema(schema.additionalProperties, `${field}.*`, semantic), {
          maxKeys: 4,
        });
      }
      return fc.constant({});
    }
    default:
      return fc.jsonValue({ maxDepth: 2 });
  }
}

// "@sbx.mine" is a running sandbox of whoever asks; the others are fixed sandboxes of A or B.
export const SANDBOX_REFS = ['@sbx.A1', '@sbx.A2', '@sbx.B1', '@sbx.churn', '@sbx.dead', '@sbx.missing'] as const;
const sandboxRef = fc.oneof(
  { weight: 6, arbitrary: fc.constant('@sbx.mine') },
  { weight: 2, arbitrary: fc.constantFrom(...SANDBOX_REFS) },
);
const keyRef = fc.constantFrom('@key.spare', '@key.A', '@key.B', '@key.spare', '@key.missing');
const webhookRef = fc.constantFrom('@wh.A', '@wh.B', '@wh.A', '@wh.missing');
// Webhook URLs: mostly deliverable-looking ones (the test stack's network is offline: nothing is
// ever sent), and the refused kinds.
const webhookUrl = fc.oneof(
  { weight: 3, arbitrary: fc.constantFrom('https://fuzz.hooks.example/', 'https://hooks.example/in?x=1', 'https://[2001:db8::1]/h') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('http://hooks.example/', 'https://127.0.0.1/', 'https://[::1]/', 'https://169.254.169.254/', 'https://localhost/', 'https://u:p@hooks.example/', 'not a url', 'ftp://x/'),
  },
);

export const SANDBOX_PATHS = [
  'notes.txt',
  '/workspace/notes.txt',
  'dir/nested/file.txt',
  '/workspace',
  '.',
  '/',
  '/tmp',
  '/tmp/x',
  '/etc/passwd',
  '/etc/hosts',
  '/etc/shadow',
  '/proc/self/environ',
  '/proc/1/cmdline',
  '../../../../../etc/hostname',
  '/workspace/../../root',
  'link-to-root/etc',
  '/dev/null',
  '/dev/zero',
  '/dev/urandom',
  '/sys/kernel',
  'no/such/file',
  'notes.txt/child',
  '~',
  'x'.repeat(300),
  `${'a/'.repeat(200)}b`,
  '/workspace/🦀.txt',
  'ünïcödé/файл',
];

/** The file only edits touch, planted as `hello\n` in each sandbox of the world. */
export const EDITED_PATH = 'edited.txt';

/** The sandbox paths but notes.txt itself. */
const SCRATCH_PATHS = SANDBOX_PATHS.filter((p) => !/^(\/workspace\/)?notes\.txt$/.test(p));

export const COMMANDS: (string | string[])[] = [
  'echo hello',
  'true',
  'false',
  'exit 3',
  'ls -la /workspace',
  'cat notes.txt',
  'printf "%s" "$FUZZ_TOKEN"',
  'env',
  'id -u',
  'pwd',
  'echo out; echo err >&2',
  'seq 1 5000',
  'head -c 20000 /dev/zero | tr "\\0" x',
  'sleep 1',
  'cat',
  'ln -sfn / link-to-root',
  'mkdir -p dir/nested && echo hi > dir/nested/file.txt',
  'printf "\\377\\376 bad utf8"',
  'kill -TERM $$',
  ['echo', 'argv', 'form'],
  ['printf', '%s|', 'a b', '$HOME'],
  ['ls', '/'],
  ['no-such-program-xyz'],
  ['/bin/sh', '-c', 'echo via sh'],
  ['env'],
];

const ENV_NAMES = ['FUZZ_TOKEN', 'HOME', 'PATH', 'LD_PRELOAD', 'A', '_', 'X1', 'BASH_ENV', 'lower_case'];
const envName = fc.oneof(fc.constantFrom(...ENV_NAMES), fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,10}$/));
const smallText = fc.oneof(fc.string({ unit: 'grapheme', maxLength: 30 }), fc.constantFrom('hello', 'hello\nworld\n', 'x', ''));

const email = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('@email.fresh', '@email.A', '@email.B') },
  {
    weight: 1,
    arbitrary: fc.constantFrom('  Fuzz@Example.TEST ', 'no-at-sign', 'a@b', '@example.test', `${'a'.repeat(250)}@x.test`, 'ü@exämple.test', 'a@b@c.test'),
  },
);

/** Fields whose values are better chosen by hand than drawn from their schema. */
function semanticFor(route: Route): Semantic {
  const key = routeKey(route);
  return (field) => {
    switch (field) {
      case 'email':
        return email;
      case 'password':
        return fc.oneof({ weight: 3, arbitrary: fc.constant('@password') }, { weight: 1, arbitrary: fc.string({ maxLength: 30 }) });
      case 'command':
        return fc.oneof(
          { weight: 4, arbitrary: fc.constantFrom(...COMMANDS) },
          { weight: 1, arbitrary: fc.string({ minLength: 1, maxLength: 30 }) },
          { weight: 1, arbitrary: fc.array(fc.string({ maxLength: 10 }), { minLength: 1, maxLength: 4 }) },
        );
      case 'cwd':
        return fc.constantFrom('/workspace', '/tmp', '/', 'dir', '/no/such/dir', '/workspace/notes.txt', 'relative');
      case 'timeoutSeconds':
        // A sandbox's own timeout (its create's, or moved): long ones, so the world's sandboxes
        // outlive the run (the cap is 1800 s: the last ones are past it); and refused ones.
        if (!key.endsWith('/exec')) return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(900, 1200, 1700, 1799, 1800) }, { weight: 1, arbitrary: fc.constantFrom(0, -1, 1.5, 1e12, 1e308, 99_999) });
        return fc.oneof({ weight: 3, arbitrary: fc.constantFrom(0.5, 1, 2, 3, 5) }, { weight: 1, arbitrary: fc.constantFrom(6, 1e-9, 1e308, 0, -1) });
      case 'stdin':
        return smallText;
      case 'sandboxId':
        return sandboxRef;
      case 'path':
        // notes.txt is what the other file routes succeed on: a removal never takes it away.
        if (key === 'DELETE /v1/sandboxes/:id/files') return fc.constantFrom(...SCRATCH_PATHS);
        // Edits have a file of their own, which no other route writes: each keeps its one hello.
        if (key === 'PATCH /v1/sandboxes/:id/files') return fc.oneof({ weight: 3, arbitrary: fc.constant(EDITED_PATH) }, { weight: 1, arbitrary: fc.constantFrom(...SANDBOX_PATHS) });
        return fc.oneof({ weight: 2, arbitrary: fc.constant('notes.txt') }, { weight: 3, arbitrary: fc.constantFrom(...SANDBOX_PATHS) });
      case 'from':
      case 'to':
        // Nor does a move (onto it, or from it): what mkdir and writes made is moved about instead.
        return fc.oneof({ weight: 3, arbitrary: fc.constantFrom('dir/nested/file.txt', '/tmp/x') }, { weight: 1, arbitrary: fc.constantFrom(...SCRATCH_PATHS) });
      case 'pattern':
        return key.endsWith('/grep')
          ? fc.constantFrom('hello', '^h', 'x+', '(a|b)*c', '[', '\\', '.*', '(((((((((((a)))))))))))', 'é', 'a{1,99999}')
          : fc.constantFrom('*', '**/*', '*.txt', '**', '{a,b}/*', '[', '**/**/**/**', '/etc/*', '../*', '{a,{b,{c,d}}}');
      case 'glob':
        return fc.constantFrom('*', '*.txt', '**/*', '[', '{a,b}');
      case 'content':
        return fc.oneof({ weight: 2, arbitrary: fc.constant('hello\nworld\n') }, { weight: 2, arbitrary: smallText }, { weight: 1, arbitrary: fc.constant('hello hello\n') });
      case 'contentBase64':
        return fc.uint8Array({ maxLength: 64 }).map((b) => Buffer.from(b).toString('base64'));
      case 'oldText':
        // Mostly hello, which the edited file holds once whatever edits came before.
        return fc.oneof({ weight: 3, arbitrary: fc.constant('hello') }, { weight: 2, arbitrary: fc.constantFrom('world', 'x', '', 'hello\n', 'ü') });
      case 'newText':
        // Each holds hello once, and no other old text: an edit that succeeds leaves one hello to
        // replace, so edits succeed again and again.
        return fc.constantFrom('hello', 'hello\n', '¡hello!');
      case 'port':
        // Ports a preview is made for, so that a revocation finds one now and then; and refused ones.
        return fc.oneof({ weight: 4, arbitrary: fc.constantFrom(3000, 8000, 8080) }, { weight: 1, arbitrary: fc.constantFrom(0, -1, 65_536, 1.5, 1e308) });
      case 'name':
        return key.includes('/secrets') ? envName : undefined;
      case 'value':
        return fc.oneof(smallText, fc.constant('fuzz-secret-value'));
      case 'url':
        return webhookUrl;
      case 'env{}':
        return envName;
      case 'commands[]':
        return fc.constantFrom('echo', 'ls', 'cat', 'sh', 'true', 'printf', 'env', 'bash', 'python3');
      case 'image':
        return fc.constantFrom('docker.io/library/debian:bookworm-slim', 'docker.io/library/python:3.12-slim', 'evil.example/miner:1', 'localhost:5000/x');
      case 'metadata{}':
        return fc.constantFrom('purpose', 'team', 'a.b/c', 'x');
      case 'snapshot':
        // Mostly left out (undefined is not sent): a create that names one fails 404 (there is
        // none in this world), and the creates feed the churn the destroys take.
        return fc.oneof({ weight: 8, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: fc.constantFrom(`snap_${'0'.repeat(24)}`, 'snap_', 'sbx_x') }, { weight: 1, arbitrary: fc.string({ maxLength: 20 }) });
      default:
        return undefined;
    }
  };
}

// ---------------------------------------------------------------------------------------------
// The parts of a plan

const SEGMENT_ODDITIES = [
  '%00',
  '..',
  '.',
  '%2e%2e',
  '%2F',
  'a%2Fb',
  '%252F',
  '%',
  '%zz',
  '%E0%A4%A',
  '%C0%AF',
  '%ED%A0%80',
  '%EF%BB%BF',
  ';',
  '%3B',
  'SBX_AAAAAAAAAAAAAAAAAAAAAAAA',
  'sbx_',
  `sbx_${'a'.repeat(24)}%00`,
  'x'.repeat(101),
  'x'.repeat(6000),
  '*',
  '%20',
  '%0d%0aX-Injected:%201',
];

function segmentArb(name: string, mode: Mode): fc.Arbitrary<Segment> {
  const valid =
    name === 'id'
      ? sandboxRef
      : name === 'keyId'
        ? keyRef
        : name === 'name'
          ? fc.oneof(fc.constant('@secret.A'), envName)
          : name === 'webhookId'
            ? webhookRef
            : name === 'procId'
              ? fc.constantFrom('@proc.same', '@proc.same', '@proc.same', '@proc.missing')
              : name === 'port'
                ? fc.constantFrom('3000', '8000', '8080', '0', '65536', '08000')
                : fc.string({ minLength: 1, maxLength: 20 });
  return mostly(
    valid.map((value): Segment => ({ value })),
    fc.oneof(
      fc.constantFrom(...SEGMENT_ODDITIES).map((value): Segment => ({ value, raw: true })),
      hostileString.filter((s) => s.length > 0).map((value): Segment => ({ value })),
    ),
    mode,
    1,
    8,
  );
}

function paramsArb(route: Route, mode: Mode): fc.Arbitrary<Record<string, Segment>> {
  const names = [...route.spec.path.matchAll(/:(\w+)/g)].map((m) => m[1]!);
  const record: Record<string, fc.Arbitrary<Segment>> = {};
  for (const name of names) record[name] = segmentArb(name, mode);
  return fc.record(record);
}

const UNKNOWN_KEYS = ['debug', '__proto__', 'constructor', 'admin', 'accountId', 'role', 'id', 'state[$ne]', 'a[]', ''];

function queryArb(route: Route, semantic: Semantic, mode: Mode): fc.Arbitrary<Plan['query']> {
  const schema = route.spec.query ? jsonSchemaOf(route.spec.query) : {};
  const entries = Object.entries(schema.properties ?? {});
  const required = new Set(schema.required ?? []);
  const wellFormed: fc.Arbitrary<[string, string][]> =
    entries.length === 0
      ? fc.constant([])
      : fc
          .tuple(
            ...entries.map(([name, s]) => {
              const value =
                name === 'limit'
                  ? fc.constantFrom('1', '5', '100', '1000')
                  : fromSchema(s, name, semantic).map((v) => (typeof v === 'string' ? v : JSON.stringify(v)));
              const present = value.map((v): [string, string][] => [[name, v]]);
              const absent = fc.constant<[string, string][]>([]);
              return required.has(name)
                ? fc.oneof({ weight: 30, arbitrary: present }, { weight: 1, arbitrary: absent })
                : fc.oneof(absent, present);
            }),
          )
          .map((picked) => picked.flat());
  const hostilePair = fc.tuple(
    fc.oneof(fc.constantFrom(...UNKNOWN_KEYS, ...entries.map(([n]) => n)), hostileString),
    fc.oneof(hostileString, fc.constantFrom('0', '-1', '1e3', '1001', '99999999999999999999', 'true', 'TRUE', '')),
  );
  return mostly<Plan['query']>(
    wellFormed,
    fc.oneof(
      fc.tuple(wellFormed, fc.array(hostilePair, { minLength: 1, maxLength: 3 })).map(([a, b]) => [...a, ...b]),
      wellFormed.map((pairs) => [...pairs, ...pairs]),
      fc.constantFrom('%', '%zz=1', '%00=%00', '&&&', '=', 'path', 'a=1&a=2&a=3', '?', '#x', `x=${'y'.repeat(9000)}`).map((raw) => ({ raw })),
    ),
    mode,
    1,
    6,
  );
}

function bodyArb(route: Route, semantic: Semantic, mode: Mode): fc.Arbitrary<BodyPlan | undefined> {
  const { spec } = route;
  if (spec.streamedBody) {
    // A small valid archive, else what a streamed body must refuse: JSON, garbage, nothing.
    const archive: BodyPlan = { kind: 'raw', hex: tarOf([{ name: 'fuzz.txt', data: 'fuzz\n' }]).toString('hex'), contentType: spec.streamedBody.mediaTypes[0]! };
    const refused = fc.constantFrom<BodyPlan | undefined>(undefined, { kind: 'json', value: {} }, { kind: 'raw', hex: '00ff'.repeat(300), contentType: spec.streamedBody.mediaTypes[0]! }, { kind: 'text', text: 'x' });
    return mostly<BodyPlan | undefined>(fc.constant(archive), refused, mode, 1, 3);
  }
  if (!spec.body) {
    // A body where none is taken: usually nothing, sometimes JSON or garbage.
    return mostly<BodyPlan | undefined>(
      fc.constant(undefined),
      fc.constantFrom<BodyPlan>({ kind: 'json', value: {} }, { kind: 'json', value: { a: 1 } }, { kind: 'text', text: 'x' }),
      mode,
      1,
      10,
    );
  }
  const schema = jsonSchemaOf(spec.body);
  // A JSON-RPC message must also be a request, notification, result or error as a whole, which a
  // body drawn field by field seldom is: well-formed MCP requests are drawn besides.
  const drawn = fromSchema(schema, 'body', semantic) as fc.Arbitrary<Record<string, unknown>>;
  const valid =
    spec.path === '/v1/mcp'
      ? fc.oneof(drawn, fc.record({ jsonrpc: fc.constant('2.0'), id: fc.integer({ min: 1, max: 1000 }), method: fc.constantFrom('ping', 'tools/list', 'initialize', 'no/such/method') }))
      : drawn;
  const asJson = (value: unknown): BodyPlan => ({ kind: 'json', value });
  const fieldNames = Object.keys(schema.properties ?? {});
  const someField = fc.constantFrom(...(fieldNames.length ? fieldNames : ['x']));
  const hostile = fc.oneof(
    // One field replaced by something hostile.
    { weight: 3, arbitrary: fc.tuple(valid, someField, hostileValue).map(([body, name, value]) => asJson({ ...body, [name]: value })) },
    // An unknown field (mass assignment), prototype keys included.
    {
      weight: 2,
      arbitrary: fc
        .tuple(valid, fc.oneof(fc.constantFrom('accountId', 'id', 'role', 'isAdmin', 'state', 'passwordHash', 'keyHash', 'limit'), hostileString), hostileValue)
        .map(([body, name, value]) => asJson({ ...body, [name]: value })),
    },
    {
      weight: 2,
      arbitrary: fc
        .tuple(valid, fc.constantFrom('{"__proto__": {"polluted": "yes"}', '{"constructor": {"prototype": {"polluted": "yes"}}', '{"prototype": {"polluted": "yes"}'))
        .map(([body, head]): BodyPlan => {
          const rest = JSON.stringify(body).slice(1);
          return { kind: 'text', text: rest === '}' ? `${head}}` : `${head}, ${rest}` };
        }),
    },
    // The whole body of the wrong shape.
    { weight: 2, arbitrary: hostileValue.map(asJson) },
    {
      weight: 2,
      arbitrary: fc
        .oneof(
          deepJson,
          fc.constantFrom('', '{', '{"a":', 'nul', '[]', '"x"', '{}{}', '{"a":1,}', '\ufeff{}', "{'a':1}", '{"a":NaN}', '{"a":1e999999}', '{"a":"\\ud800"}', '{"a":"\\u0000"}'),
        )
        .map((text): BodyPlan => ({ kind: 'text', text })),
    },
    { weight: 1, arbitrary: fc.uint8Array({ minLength: 1, maxLength: 40 }).map((b): BodyPlan => ({ kind: 'bytes', hex: Buffer.from(b).toString('hex') })) },
    {
      weight: 1,
      arbitrary: fc
        .tuple(valid, someField, fc.constantFrom(70_000, 300_000, 600_000))
        .map(([base, field, size]): BodyPlan => ({ kind: 'huge', field, size, base })),
    },
  );
  return mostly<BodyPlan | undefined>(valid.map(asJson), hostile, mode, 1, 3);
}

const CONTENT_TYPES = [
  'application/json; charset=utf-8',
  'APPLICATION/JSON',
  'application/merge-patch+json',
  'application/json; charset=latin1',
  'application/json;;;',
  'text/plain',
  'text/json',
  'application/x-www-form-urlencoded',
  'multipart/form-data; boundary=x',
  'application/jsonx',
  'application/',
  '*/*',
  '',
  'application/json, text/plain',
];
const ACCEPTS = [
  'application/json',
  'application/x-ndjson',
  'application/x-ndjson, application/json;q=0.5',
  'application/json;q=0.1, application/x-ndjson',
  '*/*',
  'text/html',
  'application/problem+json',
  'image/png',
  '',
  ';;;',
  'application/x-ndjson;q=0',
];
const IDEMPOTENCY_KEYS = ['fuzz-key-1', 'fuzz-key-2', '', ' ', 'a b', 'x'.repeat(255), 'x'.repeat(256), '\u00e9t\u00e9', '\t', '"quoted"', 'k\u007f'];
const REQUEST_IDS = ['fuzz-request', 'x'.repeat(129), 'has space', '<script>', '\u00ff', 'a/b', ''];

function headersArb(route: Route, mode: Mode): fc.Arbitrary<Record<string, string>> {
  const isExec = route.spec.path.endsWith('/exec');
  const isCreate = route.spec.method === 'post' && route.spec.path === '/v1/sandboxes';
  // oneof shrinks towards its first arbitrary: a counterexample loses the headers it does not need.
  const optional = (name: string, values: fc.Arbitrary<string>, chance: number) =>
    chance === 0
      ? fc.constant({})
      : fc.oneof(
          { weight: Math.round((1 - chance) * 100), arbitrary: fc.constant({}) },
          { weight: Math.round(chance * 100), arbitrary: values.map((v) => ({ [name]: v })) },
        );
  const hostile = mode === 'any' ? 1 : 0;
  return fc
    .tuple(
      optional('content-type', fc.constantFrom(...CONTENT_TYPES), 0.12 * hostile),
      optional('accept', mode === 'valid' ? fc.constantFrom('application/json', 'application/x-ndjson', '*/*') : fc.constantFrom(...ACCEPTS), isExec ? 0.4 : 0.08 * hostile),
      optional(
        'idempotency-key',
        mode === 'valid' ? fc.stringMatching(/^[!-~]{1,20}$/) : fc.oneof(fc.constantFrom(...IDEMPOTENCY_KEYS), fc.stringMatching(/^[!-~]{1,20}$/)),
        isCreate ? 0.4 : 0.03 * hostile,
      ),
      optional('x-request-id', fc.constantFrom(...REQUEST_IDS), 0.05 * hostile),
      optional('x-forwarded-for', fc.constantFrom('10.0.0.1', '1.2.3.4, 5.6.7.8', 'garbage', ''), 0.03 * hostile),
      optional('origin', fc.constantFrom('https://evil.example', 'null'), 0.03 * hostile),
      optional('host', fc.constantFrom('evil.example', 'localhost:1', '[::1]', 'x'.repeat(300)), 0.02 * hostile),
      optional('content-encoding', fc.constantFrom('gzip', 'br', 'identity'), 0.02 * hostile),
    )
    .map((parts) => Object.assign({}, ...parts) as Record<string, string>);
}

const RAW_AUTHORIZATIONS = [
  'Bearer',
  'Bearer ',
  'Basic dXNlcjpwYXNz',
  'Token abc',
  'Bearer abc.def.ghi',
  'Bearer ...',
  'Bearer pdk_live_',
  `Bearer pdk_live_${'A'.repeat(50)}`,
  `Bearer pdk_live_${'0'.repeat(44)}${'0'.repeat(6)}`,
  `Bearer pdk_test_${'A'.repeat(50)}`,
  `Bearer ${'a'.repeat(5000)}`,
  `Bearer ${'a.'.repeat(3000)}a`,
  'Bearer \u00ff\u00fe',
  'Bearer null',
  'Bearer undefined',
  'Bearer eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.',
];

function credentialArb(route: Route, mode: Mode): fc.Arbitrary<CredentialChoice> {
  const account = fc.constantFrom<AccountName>('A', 'A', 'A', 'B', 'C');
  const hostile = fc.oneof(
    { weight: 2, arbitrary: fc.constant<CredentialChoice>({ kind: 'none' }) },
    { weight: 2, arbitrary: account.map((a): CredentialChoice => ({ kind: 'otherType', account: a })) },
    { weight: 1, arbitrary: fc.constant<CredentialChoice>({ kind: 'revoked' }) },
    { weight: 2, arbitrary: fc.constantFrom(...FORGERIES).map((how): CredentialChoice => ({ kind: 'forged', how })) },
    { weight: 2, arbitrary: fc.constantFrom(...RAW_AUTHORIZATIONS).map((header): CredentialChoice => ({ kind: 'raw', header })) },
    { weight: 1, arbitrary: fc.stringMatching(/^[!-~]{0,40}$/).map((s): CredentialChoice => ({ kind: 'raw', header: `Bearer ${s}` })) },
  );
  if (route.spec.auth === 'none') return mostly(fc.constant<CredentialChoice>({ kind: 'none' }), hostile, mode, 1, 9);
  return mostly(
    account.map((a): CredentialChoice => ({ kind: 'own', account: a })),
    hostile,
    mode,
    2,
    9,
  );
}

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS', 'PROPFIND', 'TRACE'];

function planIn(route: Route, mode: Mode): fc.Arbitrary<Plan> {
  const semantic = semanticFor(route);
  const key = routeKey(route);
  const method = route.spec.method.toUpperCase();
  return fc
    .record({
      method: mostly(fc.constant(method), fc.constantFrom(...METHODS), mode, 1, 24),
      params: paramsArb(route, mode),
      query: queryArb(route, semantic, mode),
      headers: headersArb(route, mode),
      credential: credentialArb(route, mode),
      body: bodyArb(route, semantic, mode),
      chunked: mostly(fc.constant(false), fc.constant(true), mode, 1, 15),
      tcp: mostly<{ mangle: TcpMangle } | undefined>(fc.constant(undefined), fc.constantFrom(...TCP_MANGLES).map((mangle) => ({ mangle })), mode, 1, 40),
    })
    .map((p): Plan => {
      const plan: Plan = { route: key, method: p.method, params: p.params, query: p.query, headers: p.headers, credential: p.credential };
      if (p.body !== undefined) plan.body = p.body;
      if (p.chunked && p.body) plan.chunked = true;
      if (p.tcp) plan.tcp = p.tcp;
      // How fast-check prints a counterexample: JSON, long strings cut.
      Object.defineProperty(plan, fc.toStringMethod, { value: () => describePlan(plan) });
      return plan;
    });
}

/** Every plan for one route: two in five entirely valid-ish, the rest with hostile parts. */
export function planArb(route: Route): fc.Arbitrary<Plan> {
  return fc.oneof({ weight: 2, arbitrary: planIn(route, 'valid') }, { weight: 3, arbitrary: planIn(route, 'any') });
}

/** A plan as JSON, with long strings cut so that a counterexample stays readable. */
export function describePlan(plan: Plan): string {
  return JSON.stringify(plan, (_k, v: unknown) => (typeof v === 'string' && v.length > 200 ? `${v.slice(0, 200)}… (${v.length} characters)` : v));
}

/** One arbitrary over every route, each route weighted by `weightOf`. */
export function anyPlanArb(routes: Route[], weightOf: (route: Route) => number): fc.Arbitrary<Plan> {
  return fc.oneof(...routes.map((route) => ({ weight: weightOf(route), arbitrary: planArb(route) })));
}
