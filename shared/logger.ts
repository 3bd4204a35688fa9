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
  // Written synchronously, as Node writes stdout to a pipe or file on Linux: lines go out in the
  // order they were logged, and none is still in flight when the process exits (pino's default
  // writes asynchronously, and its flush does not wait for a write under way: a shutdown's
  // "stopped" could overtake its "shutting down", or be lost).
  return pino(settings, destination ?? pino.destination({ dest: 1, sync: true }));
}
