export type * from '../../shared/sdk/types.ts';
