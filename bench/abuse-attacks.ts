import { request, type ClientRequest } from 'node:http';
import { connect, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

// The hostile client of bench/abuse.ts, one class of attack per phase. It runs in a
// process of its own (bench/abuse-attacker.ts), as a stranger's client would: its own work must
// not slow the neighbour's measurements, which share nothing with it but the server.

/** Loopback, but another client address than the neighbour's: the per-address caps are its own. */
export const ATTACKER_ADDRESS = '127.0.0.3';
export const SECRETS = 100;

interface AttackAnswer {
  status: number;
  request: ClientRequest;
}

/** One request from the attacker's address on a connection of its own; `hold` leaves the answer unread. */
export function attack(stack: { url: string }, key: string, method: string, path: string, body?: string | Buffer, hold = false): Promise<AttackAnswer> {
  const url = new URL(path, stack.url);
  return new Promise((resolve) => {
    const req = request(url, {
      method,
      localAddress: ATTACKER_ADDRESS,
      agent: false,
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
    });
    req.on('error', () => resolve({ status: 0, request: req }));
    req.on('response', (res) => {
      res.on('error', () => undefined);
      if (hold) {
        res.pause();
        resolve({ status: res.statusCode ?? 0, request: req });
        return;
      }
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, request: req }));
      res.on('close', () => resolve({ status: res.statusCode ?? 0, request: req }));
    });
    req.end(body);
  });
}

/** What the attacker knows: plain data, handed to its own process. */
export interface AttackerWorld {
  stack: { url: string };
  key: string;
  boxes: string[];
  /** A second account's sandbox, made full of files for the destroy phase. */
  fullKey: string;
  fullBox: string;
  statuses: Map<number, number>;
}

export interface Phase {
  name: string;
  run(world: AttackerWorld, end: number): Promise<void>;
}

const count = (world: AttackerWorld, status: number) => world.statuses.set(status, (world.statuses.get(status) ?? 0) + 1);

async function untilEnd(end: number, loops: number, body: () => Promise<void>): Promise<void> {
  await Promise.all(
    Array.from({ length: loops }, async () => {
      while (performance.now() < end) await body();
    }),
  );
}

const exec = (command: string, timeoutSeconds = 30) => JSON.stringify({ command, timeoutSeconds });

export const PHASES: Phase[] = [
  { name: 'quiet', run: async (_w, end) => void (await sleep(end - performance.now())) },
  {
    // The finding: 115 long commands within the bucket, timing out together (a kill storm).
    name: '230 long execs at once, timing out together',
    async run(w, end) {
      const seconds = Math.max(2, Math.floor((end - performance.now()) / 1000) - 2);
      await Promise.all(
        Array.from({ length: 230 }, async (_, i) => {
          const res = await attack(w.stack, w.key, 'POST', `/v1/sandboxes/${w.boxes[i % 2]}/exec`, exec(`sleep ${seconds + 5}`, seconds));
          count(w, res.status);
        }),
      );
      await sleep(Math.max(0, end - performance.now()));
    },
  },
  {
    name: '50 buffered execs of 1 MiB per stream, answers never read',
    async run(w, end) {
      const flood = 'head -c 1048576 /dev/zero | tr "\\0" x; head -c 1048576 /dev/zero | tr "\\0" y >&2';
      const held = await Promise.all(
        Array.from({ length: 50 }, (_, i) => attack(w.stack, w.key, 'POST', `/v1/sandboxes/${w.boxes[i % 2]}/exec`, exec(flood), true)),
      );
      for (const res of held) count(w, res.status);
      await sleep(Math.max(0, end - performance.now()));
      for (const res of held) res.request.destroy();
    },
  },
  {
    name: '2,000 connections holding half a header',
    async run(w, end) {
      const { hostname, port } = new URL(w.stack.url);
      const sockets: Socket[] = [];
      for (let i = 0; i < 2000; i++) {
        const socket = connect({ host: hostname, port: Number(port), localAddress: ATTACKER_ADDRESS });
        socket.on('error', () => undefined);
        socket.on('connect', () => socket.write('GET /v1/sandboxes HTTP/1.1\r\nHost: x\r\nX-Slow: '));
        sockets.push(socket);
        if (i % 100 === 99) await sleep(10);
      }
      // A byte every two seconds on those still open.
      while (performance.now() < end) {
        await sleep(Math.min(2000, Math.max(0, end - performance.now())));
        for (const s of sockets) if (!s.destroyed) s.write('a');
      }
      count(w, sockets.filter((s) => !s.destroyed).length > 0 ? -1 : -2);
      for (const s of sockets) s.destroy();
    },
  },
  {
    name: '10 MiB deeply nested bodies to exec, 1 MiB ones to secrets',
    async run(w, end) {
      const deep = Buffer.from(`{"command":${'['.repeat(10 * 1024 * 1024)}`);
      const wide = JSON.stringify({ name: 'WIDE', value: 'v'.repeat(1024 * 1024) });
      await untilEnd(end, 4, async () => {
        count(w, (await attack(w.stack, w.key, 'POST', `/v1/sandboxes/${w.boxes[0]}/exec`, deep)).status);
        count(w, (await attack(w.stack, w.key, 'POST', '/v1/secrets', wide)).status);
      });
    },
  },
  {
    name: `${SECRETS} secrets, output full of their beginnings to mask`,
    async run(w, end) {
      await untilEnd(end, 2, async () => {
        // Text full of the secrets' beginnings: the masker's worst case, one pass per chunk.
        const res = await attack(w.stack, w.key, 'POST', `/v1/sandboxes/${w.boxes[0]}/exec`, exec('for i in $(seq 20000); do echo s3cr3t-s3cr3t-s3cr; done'));
        count(w, res.status);
      });
    },
  },
  {
    name: 'crafted glob, grep and view',
    async run(w, end) {
      const box = w.boxes[1];
      const paths = [
        `/v1/sandboxes/${box}/files/glob?pattern=${encodeURIComponent('**/*a*a*a*a*a*a*b')}&path=deep`,
        `/v1/sandboxes/${box}/files/grep?pattern=${encodeURIComponent('(a|aa)+$')}&path=deep`,
        `/v1/sandboxes/${box}/files?path=newlines&startLine=1&endLine=1`,
      ];
      let i = 0;
      await untilEnd(end, 3, async () => {
        count(w, (await attack(w.stack, w.key, 'GET', paths[i++ % paths.length]!)).status);
      });
    },
  },
  {
    name: 'destroy of a sandbox holding 100,000 files',
    async run(w, end) {
      count(w, (await attack(w.stack, w.fullKey, 'DELETE', `/v1/sandboxes/${w.fullBox}`)).status);
      await sleep(Math.max(0, end - performance.now()));
    },
  },
  { name: 'quiet again', run: async (_w, end) => void (await sleep(end - performance.now())) },
];

