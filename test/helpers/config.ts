import { randomBytes } from 'node:crypto';
import { parseConfig, type Config } from '../../shared/config.ts';

/**
 * Sandboxes weigh as much as any process group in the tests (the product's default is a quarter of
 * one: shared/runtime/local/cgroups.ts). The suites run several whole stacks at once on two cores,
 * and their own load must not starve the sandboxes they test. The group is the host's: every
 * runtime a test makes sets the same (scripts/test.ts passes it to the processes it starts).
 */
export const TEST_SANDBOXES_CPU_WEIGHT = 100;

/**
 * A config for one test's own stack: the shared PostgreSQL and Redis the test runner started,
 * and a Redis prefix of its own, so rate-limit buckets and caches never leak between tests.
 */
export function testConfig(overrides: Record<string, string> = {}): Config {
  const databaseUrl = process.env.DATABASE_URL;
  const redisUrl = process.env.REDIS_URL;
  if (!databaseUrl || !redisUrl) {
    throw new Error('DATABASE_URL and REDIS_URL must be set: run the tests with `npm test`');
  }
  return parseConfig({
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: databaseUrl,
    REDIS_URL: redisUrl,
    PADDOCK_REDIS_PREFIX: `t${randomBytes(6).toString('hex')}`,
    PADDOCK_JWT_SECRET: randomBytes(32).toString('hex'),
    PADDOCK_SECRETS_KEY: randomBytes(32).toString('hex'),
    PADDOCK_WEBHOOK_SECRETS_KEY: randomBytes(32).toString('hex'),
    PADDOCK_SCRYPT_LOG_N: '12',
    PADDOCK_RATE_AUTH_PER_MIN: '1000',
    PADDOCK_LOG_LEVEL: process.env.PADDOCK_TEST_LOG_LEVEL ?? 'silent',
    PADDOCK_WORKER_METRICS_PORT: '0',
    PADDOCK_LOCAL_SANDBOXES_CPU_WEIGHT: String(TEST_SANDBOXES_CPU_WEIGHT),
    ...overrides,
  });
}

export function uniqueEmail(label = 'user'): string {
  return `${label}-${randomBytes(6).toString('hex')}@example.test`;
}
