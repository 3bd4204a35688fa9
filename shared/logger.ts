import { pino, type DestinationStream, type Logger } from 'pino';

export type { Logger };

// Secrets must never reach a log line. Nothing logs headers or bodies wholesale, and these paths
// are censored in case a future log call passes such an object along anyway.
const REDACT = [
  'authorization',
  'password',
  'token',
  'key',
  'secret',
  'value',
  '*.authorization',
  '*.password',
  '*.token',
  '*.key',
  '*.secret',
  '*.value',
  'headers.authorization',
  'req.headers.authorization',
];

export function createLogger(level: string, name: string, destination?: DestinationStream): Logger {
  const settings = {
    name,
    level,
    base: { pid: process.pid, role: name },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return destination ? pino(settings, destination) : pino(settings);
}
