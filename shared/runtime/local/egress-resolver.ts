import { createSocket } from 'node:dgram';
import { connect, isIP } from 'node:net';
import { egressMode, nameRuleCovers, nameRules, type NameRule } from '../../network/rules.ts';
import { hostsCover, policyReaches } from '../../network/brokered.ts';
import { addressInFloor } from '../../network/floor.ts';
import { answeredAddresses, isStandardQuery, localAnswer, RCODE_NOTIMP, RCODE_NXDOMAIN, RCODE_SERVFAIL, readQuestion, refusal, type Question } from './dns-message.ts';
import { BROKER, type InstalledPolicy, type OpenEntry } from './egress-filter.ts';
import type { Upstream } from '../../network/resolvers.ts';

// What Paddock's resolver answers one sandbox whose policy names domains (egress-filter.ts sends
// its DNS queries to the host's resolver, egress-resolver-main.ts, which keeps one of these a sandbox): a name the policy allows is asked of the upstream servers
// (PADDOCK_EGRESS_RESOLVERS, or the host's), and the addresses of the answer are opened for that
// sandbox, on the rule's port, before the answer is passed on, so that a connect right after the
// lookup passes; any other name gets NXDOMAIN at once. The answer goes on as the upstream gave it
// (its TTLs, its other records); an address of the floor in it is opened nowhere, so a name that
// resolves to a private address reaches nothing (egress-filter.ts refuses the floor first anyway).

/** How long an answered address stays open, whatever its TTL: clients keep answers past it. */
const OPEN_MIN_SECONDS = 300;
const OPEN_MAX_SECONDS = 3600;
/** A brokered host's answer, the egress's address (and any name's, the gateway's): short, so a change of credentials is heard soon. */
const BROKERED_TTL_SECONDS = 30;
/** One upstream's turn at a question. */
const UDP_TIMEOUT_MS = 2000;
const TCP_TIMEOUT_MS = 5000;
/** Questions under way at once; past it a UDP query is dropped (the client asks again), a TCP one fails. */
const MAX_PENDING = 128;
/** Addresses remembered as open, to spare their renewal; past it the memory starts again. */
const OPENED_KEPT = 4096;
/**
 * Answers kept for the same question asked again (the same bytes past its id) under the same
 * policy: for their shortest TTL, at most a minute, well within the time their addresses stay
 * open; an answer of no address for 10 s. Past ANSWERS_KEPT the memory starts again.
 */
const ANSWER_MAX_SECONDS = 60;
const EMPTY_ANSWER_SECONDS = 10;
/** A sandbox's kept answers: so many, each at most so large (one resolver serves every sandbox of the host). */
const ANSWERS_KEPT = 128;
const ANSWER_KEPT_BYTES = 2048;


/** An address an allowed name was answered with, open until `until` (ms since the epoch). */
export interface AnsweredName {
  name: string;
  family: 4 | 6;
  address: string;
  until: number;
}

/** Names remembered with the addresses opened for them; past it the memory starts again. */
const NAMES_KEPT = 4096;

export interface EgressResolverDeps {
  /** The policy in force and its tag, as the runtime last installed it; undefined when none is readable. */
  installed(): Promise<InstalledPolicy | undefined>;
  upstreams: readonly Upstream[];
  /** Opens the entries in the named sets of the policy tagged `tag`; rejects when it could not (that policy replaced). */
  open(tag: number, entries: OpenEntry[]): Promise<void>;
  /** A name the policy does not allow was asked for. */
  refused(name: string): void;
  /**
   * The address allowed names and brokered hosts are answered with in place of theirs: the
   * Kubernetes egress gateway's, which the pod reaches alone and which carries its connections on
   * by name (kubernetes/gateway/). Absent: theirs, opened first; brokered hosts, the broker's.
   * Under `all`, other names are answered with theirs either way.
   */
  via?: string;
}

export class EgressResolver {
  readonly #deps: EgressResolverDeps;
  readonly #opened = new Map<string, number>();
  readonly #answers = new Map<string, { answer: Buffer; until: number }>();
  /** What each allowed name opened, by `name address`: a change of policy carries over what the new one still allows. */
  readonly #names = new Map<string, AnsweredName>();
  #pending = 0;

  constructor(deps: EgressResolverDeps) {
    this.#deps = deps;
  }

  /**
   * The answer to a query that came over `transport` (the bytes of one message, without TCP's
   * length); undefined when nothing is to be answered (not a query, or too many under way).
   */
  async answer(query: Buffer, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    const question = readQuestion(query);
    if (!question) return undefined;
    if (!isStandardQuery(query)) return refusal(query, question, RCODE_NOTIMP);
    const installed = await this.#deps.installed();
    // A brokered host the policy lets the sandbox reach is answered with the egress's own address:
    // its HTTPS ends there, where the credential is added (egress-broker.ts), and nowhere else.
    if (installed && hostsCover(installed.brokered ?? [], question.name) && policyReaches(installed.policy, question.name)) {
      return localAnswer(query, question, this.#deps.via ?? BROKER.address, BROKERED_TTL_SECONDS);
    }
    // Under `all` (served for its brokered hosts alone) every other name is asked, and opens nothing: all is open.
    const everything = installed !== undefined && egressMode(installed.policy) === 'all';
    const rules = installed ? nameRules(installed.policy).filter((rule) => nameRuleCovers(rule, question.name)) : [];
    if (!installed || (rules.length === 0 && !everything)) {
      this.#deps.refused(question.name);
      return refusal(query, question, RCODE_NXDOMAIN);
    }
    if (this.#deps.via !== undefined && !everything) return localAnswer(query, question, this.#deps.via, BROKERED_TTL_SECONDS);
    const kept = `${installed.tag} ${transport} ${query.toString('latin1', 2)}`;
    const cached = this.#answers.get(kept);
    if (cached && cached.until > Date.now()) {
      const answer = Buffer.from(cached.answer);
      answer.writeUInt16BE(question.id, 0);
      return answer;
    }
    if (this.#pending >= MAX_PENDING) return transport === 'tcp' ? refusal(query, question, RCODE_SERVFAIL) : undefined;
    this.#pending++;
    try {
      const answer = await this.#ask(query, question, transport);
      const addresses = answer && answeredAddresses(answer, question);
      if (!answer || !addresses) return refusal(query, question, RCODE_SERVFAIL);
      const outside = everything ? [] : addresses.filter((a) => !addressInFloor(a.family, a.address));
      const entries = outside.flatMap((a) => entriesFor(rules, a.family, a.address, a.ttl));
      const fresh = entries.filter((entry) => this.#needsOpening(installed.tag, entry));
      if (fresh.length > 0) {
        try {
          await this.#deps.open(installed.tag, fresh);
        } catch {
          // The policy was replaced meanwhile: its addresses open nothing now.
          return refusal(query, question, RCODE_SERVFAIL);
        }
        for (const entry of fresh) this.#remember(installed.tag, entry);
      }
      for (const a of outside) {
        if (this.#names.size >= NAMES_KEPT) this.#names.clear();
        const until = Date.now() + openSeconds(a.ttl) * 1000;
        const key = `${question.name} ${a.address}`;
        if ((this.#names.get(key)?.until ?? 0) < until) this.#names.set(key, { name: question.name, family: a.family, address: a.address, until });
      }
      if ((answer.readUInt16BE(2) & 0xf) === 0) {
        const seconds = addresses.length > 0 ? Math.min(ANSWER_MAX_SECONDS, ...addresses.map((a) => a.ttl)) : EMPTY_ANSWER_SECONDS;
        if (this.#answers.size >= ANSWERS_KEPT) this.#answers.clear();
        if (seconds > 0 && answer.byteLength <= ANSWER_KEPT_BYTES) this.#answers.set(kept, { answer, until: Date.now() + seconds * 1000 });
      }
      return answer;
    } finally {
      this.#pending--;
    }
  }

  async #ask(query: Buffer, question: Question, transport: 'udp' | 'tcp'): Promise<Buffer | undefined> {
    for (const upstream of this.#deps.upstreams) {
      const answer = transport === 'udp' ? await askOverUdp(query, question.id, upstream) : await askOverTcp(query, upstream);
      if (answer) return answer;
    }
    return undefined;
  }

  /** The names answered, with the addresses still open for them. */
  answeredNames(): AnsweredName[] {
    const now = Date.now();
    for (const [key, answered] of this.#names) if (answered.until <= now) this.#names.delete(key);
    return [...this.#names.values()];
  }

  /** Whether the entry is not known open for at least half its time to come. */
  #needsOpening(tag: number, entry: OpenEntry): boolean {
    const until = this.#opened.get(openedKey(tag, entry));
    return until === undefined || until - Date.now() < (entry.seconds * 1000) / 2;
  }

  #remember(tag: number, entry: OpenEntry): void {
    if (this.#opened.size >= OPENED_KEPT) this.#opened.clear();
    this.#opened.set(openedKey(tag, entry), Date.now() + entry.seconds * 1000);
  }
}

function openedKey(tag: number, entry: OpenEntry): string {
  return `${tag} ${entry.address} ${entry.port ?? '*'}`;
}

/** How long an answer's address stays open, from its TTL. */
function openSeconds(ttl: number): number {
  return Math.min(OPEN_MAX_SECONDS, Math.max(OPEN_MIN_SECONDS, ttl));
}

/**
 * What a policy's rules open of the answered names (a change of policy carries them over): each
 * address of a name the rules still cover, on their ports, for the time it had left.
 */
export function carriedOver(rules: NameRule[], answered: AnsweredName[], now = Date.now()): OpenEntry[] {
  return answered.flatMap((a) => {
    const covering = rules.filter((rule) => nameRuleCovers(rule, a.name));
    const seconds = Math.ceil((a.until - now) / 1000);
    if (covering.length === 0 || seconds <= 0) return [];
    return portsOf(covering).map((port) => ({ family: a.family, address: a.address, ...(port === undefined ? {} : { port }), seconds }));
  });
}

/** The ports the rules open: every port (undefined) when one of them names none. */
function portsOf(rules: NameRule[]): (number | undefined)[] {
  const ports = new Set(rules.map((rule) => rule.port));
  return ports.has(undefined) ? [undefined] : [...ports];
}

/** One entry per rule that covers the name: on its port, or on every port. */
function entriesFor(rules: NameRule[], family: 4 | 6, address: string, ttl: number): OpenEntry[] {
  const seconds = openSeconds(ttl);
  return portsOf(rules).map((port) => ({ family, address, ...(port === undefined ? {} : { port }), seconds }));
}


/** The query asked of one upstream over UDP, from a port of its own: its answer, or undefined after UDP_TIMEOUT_MS. */
function askOverUdp(query: Buffer, id: number, upstream: Upstream): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const socket = createSocket(isIP(upstream.address) === 6 ? 'udp6' : 'udp4');
    const done = (answer: Buffer | undefined) => {
      clearTimeout(timer);
      socket.close();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), UDP_TIMEOUT_MS);
    socket.on('message', (message, from) => {
      // Only the server asked, with the query's id: anything else is not its answer.
      if (from.address === upstream.address && from.port === upstream.port && message.byteLength >= 2 && message.readUInt16BE(0) === id) done(message);
    });
    socket.on('error', () => done(undefined));
    socket.send(query, upstream.port, upstream.address);
  });
}

/** The query asked of one upstream over TCP (RFC 7766 framing): its answer, or undefined. */
function askOverTcp(query: Buffer, upstream: Upstream): Promise<Buffer | undefined> {
  return new Promise((resolve) => {
    const socket = connect({ host: upstream.address, port: upstream.port });
    const chunks: Buffer[] = [];
    let got = 0;
    const done = (answer: Buffer | undefined) => {
      clearTimeout(timer);
      socket.destroy();
      resolve(answer);
    };
    const timer = setTimeout(() => done(undefined), TCP_TIMEOUT_MS);
    socket.on('error', () => done(undefined));
    socket.on('close', () => done(undefined));
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      got += chunk.byteLength;
      if (got < 2) return;
      const all = Buffer.concat(chunks);
      const length = all.readUInt16BE(0);
      if (all.byteLength >= 2 + length) done(all.subarray(2, 2 + length));
    });
    const length = Buffer.alloc(2);
    length.writeUInt16BE(query.byteLength);
    socket.write(Buffer.concat([length, query]));
  });
}
