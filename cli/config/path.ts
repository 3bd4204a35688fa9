import { homedir } from 'node:os';
import { join } from 'node:path';

/** $XDG_CONFIG_HOME/paddock/config.toml, or ~/.config/paddock/config.toml. */
export function configPath(env: NodeJS.ProcessEnv = process.env): string {
  const xdg = env.XDG_CONFIG_HOME;
  // The XDG spec says a relative XDG_CONFIG_HOME is invalid and must be ignored.
  const base = xdg && xdg.startsWith('/') ? xdg : join(env.HOME || homedir(), '.config');
  return join(base, 'paddock', 'config.toml');
}
