export { checkCommand, MAX_COMMAND_BYTES, type CheckInput, type CheckResult } from './check.ts';
export { checkEnvironment, isProtectedVariable } from './env.ts';
export {
  AllowlistBody,
  MAX_ALLOWLIST_ENTRIES,
  MAX_PROGRAM_NAME_LENGTH,
  programNameProblem,
  validateAllowlist,
  type AllowlistValidation,
} from './validate.ts';
export { PROGRAM_DIRS, PROGRAM_PATH, programPathProblem } from './program-dirs.ts';
