import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';

/** Who a ticket stands for: the key that asked for it (by hash, to check it again) and its one sandbox. */
export interface TicketGrant {
  accountId: string;
  keyId: string;
  keyHash: string;
  sandboxId: string;
}

const TICKET = /^pdt_[0-9a-f]{48}$/;

/**
 * Terminal tickets, in Redis so that any API replica redeems what another issued. Redis holds a
 * hash of each ticket, never the ticket, and redeeming is one GETDEL: two connections racing with
 * one ticket cannot both get it.
 */
export class TerminalTickets {
  private readonly redis: Redis;
  private readonly prefix: string;
  private readonly ttlSeconds: number;

  constructor(redis: Redis, prefix: string, ttlSeconds: number) {
    this.redis = redis;
    this.prefix = prefix;
    this.ttlSeconds = ttlSeconds;
  }

  private key(ticket: string): string {
    return `${this.prefix}:terminal-ticket:${createHash('sha256').update(ticket).digest('hex')}`;
  }

  async issue(grant: TicketGrant): Promise<{ ticket: string; expiresAt: string }> {
    const ticket = `pdt_${randomBytes(24).toString('hex')}`;
    await this.redis.set(this.key(ticket), JSON.stringify(grant), 'EX', this.ttlSeconds);
    return { ticket, expiresAt: new Date(Date.now() + this.ttlSeconds * 1000).toISOString() };
  }

  /** The grant, once: the ticket is gone afterwards. Undefined for a malformed, unknown, used or expired one. */
  async redeem(ticket: string): Promise<TicketGrant | undefined> {
    if (!TICKET.test(ticket)) return undefined;
    const value = await this.redis.getdel(this.key(ticket));
    return value ? (JSON.parse(value) as TicketGrant) : undefined;
  }
}
