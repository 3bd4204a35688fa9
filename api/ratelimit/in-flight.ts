// In-flight leases are shared with the workers (per-endpoint webhook concurrency): see shared/leases.ts.
export { InFlightLeases, type LeaseRequest, type LeaseResult } from '../../shared/leases.ts';

/** Work whose requests in progress are capped per sandbox and per account (api/middleware/in-flight.ts). */
export type InFlightKind = 'exec' | 'files' | 'archives' | 'terminal' | 'mcp';
