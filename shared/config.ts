import { z } from 'zod';

// Environment variables arrive as strings; these helpers turn them into typed values with a
// message that says what was expected, so a bad deployment fails at start naming the variable.
const int = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.coerce
    .number({ error: 'expected a whole number' })
    .int({ error: 'expected a whole number' })
    .min(min, { error: `expected a whole number of at least ${min}` })
    .max(max, { error: `expected a whole number of at most ${max}` });

const positiveNumber = z.coerce
  .number({ error: 'expected a number' })
  .positive({ error: 'expected a positive number' });

const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'], { error: 'expected true or false' })
  .transform((v) => v === 'true' || v === '1' || v === 'yes');

const url = (protocols: string[]) =>
  z.string().refine(
    (v) => {
      try {
        return protocols.includes(new URL(v).protocol);
      } catch {
        return false;
      }
    },
    { error: `expected a URL starting with ${protocols.map((p) => `${p}//`).join(' or ')}` },
  );

export const configSchema = z.object({
  NODE_ENV: z.enum(['development', 'test', 'production']).default('production'),
  HOST: z.string().min(1).default('0.0.0.0'),
  PORT: int(0, 65535).default(3000),
  DATABASE_URL: url(['postgres:', 'postgresql:']),
  PADDOCK_DB_POOL_MAX: int(1, 1000).default(10),
  REDIS_URL: url(['redis:', 'rediss:']),
  PADDOCK_REDIS_PREFIX: z
    .string()
    .regex(/^[A-Za-z0-9:_-]{1,64}$/, { error: 'expected 1-64 letters, digits, ":", "_" or "-"' })
    .default('paddock'),
  PADDOCK_JWT_SECRET: z.string().min(32, { error: 'expected at least 32 characters' }).optional(),
  PADDOCK_JWT_TTL_SECONDS: int(60, 7 * 24 * 3600).default(3600),
  PADDOCK_SCRYPT_LOG_N: int(10, 20).default(15),
  PADDOCK_API_KEY_CACHE_SECONDS: int(0, 3600).default(300),
  PADDOCK_RATE_SANDBOX_OPS_PER_MIN: int(1).default(120),
  PADDOCK_RATE_SANDBOX_LIFECYCLE_PER_MIN: int(1).default(20),
  PADDOCK_RATE_AUTH_PER_MIN: int(1).default(10),
  PADDOCK_TRUST_PROXY: bool.default(false),
  PADDOCK_BODY_LIMIT_BYTES: int(1024).default(1024 * 1024),
  PADDOCK_QUOTA_CONCURRENT_SANDBOXES: int(0).default(2),
  PADDOCK_QUOTA_MONTHLY_SANDBOX_HOURS: positiveNumber.default(20),
  PADDOCK_SESSION_CAP_SECONDS: int(1).default(1800),
  PADDOCK_SHUTDOWN_TIMEOUT_SECONDS: int(1).default(25),
  PADDOCK_METRICS_TOKEN: z.string().min(16, { error: 'expected at least 16 characters' }).optional(),
  PADDOCK_LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
});

export type Config = z.infer<typeof configSchema>;

export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Parses the environment once; throws a ConfigError naming every bad variable. */
export function parseConfig(env: Record<string, string | undefined>): Config {
  // An empty variable is treated as unset, as most process managers cannot unset one.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const result = configSchema.safeParse(cleaned);
  if (!result.success) {
    const lines = result.error.issues.map((issue) => {
      const name = String(issue.path[0] ?? '(config)');
      const message = issue.code === 'invalid_type' && cleaned[name] === undefined ? 'is required' : issue.message;
      return `  ${name}: ${message}`;
    });
    throw new ConfigError(`Invalid configuration:\n${lines.join('\n')}`);
  }
  const config = result.data;
  if (config.NODE_ENV === 'production' && !config.PADDOCK_JWT_SECRET) {
    throw new ConfigError(
      'Invalid configuration:\n  PADDOCK_JWT_SECRET: is required outside development (at least 32 random characters)',
    );
  }
  return config;
}

/** Variables that look like ours but that the schema does not know: almost always a typo. */
export function unknownPaddockVariables(env: Record<string, string | undefined>): string[] {
  const known = new Set(Object.keys(configSchema.shape));
  return Object.keys(env).filter((k) => k.startsWith('PADDOCK_') && !known.has(k) && !EXTRA_KNOWN.has(k));
}

// Variables read by other parts (the CLI, the dev stack) and not by the server processes.
const EXTRA_KNOWN = new Set(['PADDOCK_BASE_URL', 'PADDOCK_API_KEY', 'PADDOCK_HOME']);

/** Parses process.env or stops the process with a message naming the bad variable. */
export function loadConfigOrExit(): Config {
  try {
    const config = parseConfig(process.env);
    for (const name of unknownPaddockVariables(process.env)) {
      process.stderr.write(`warning: unknown configuration variable ${name} is ignored\n`);
    }
    return config;
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`${err.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw err;
  }
}
