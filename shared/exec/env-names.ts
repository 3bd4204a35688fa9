export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

// Variables that change which program a command name runs, or run code of their own when a
// shell starts. Secrets may never set them; an exec's own env may not either while an
// allowlist is in force, or `PATH=/workspace/evil ls` would defeat it.
const PROGRAM_STEERING = new Set(['PATH', 'IFS', 'ENV', 'BASH_ENV', 'SHELLOPTS', 'BASHOPTS', 'PS4', 'PROMPT_COMMAND', 'CDPATH']);

export function steersPrograms(name: string): boolean {
  return PROGRAM_STEERING.has(name) || name.startsWith('LD_') || name.startsWith('BASH_FUNC_');
}
