import { z } from 'zod';
import { timestamp } from '../common-schemas.ts';

export { AllowlistBody } from '../../../shared/allowlist/index.ts';

export const AllowlistResponse = z.object({
  commands: z.array(z.string()).meta({ description: 'Programs every exec may run; empty means every command is allowed' }),
  updatedAt: timestamp.nullable(),
});
