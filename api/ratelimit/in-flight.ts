// In-flight leases are shared with the workers (per-endpoint webhook concurrency): see shared/leases.ts.
export { InFlightLeases, type LeaseRequest, type LeaseResult } from '../../shared/leases.ts';
