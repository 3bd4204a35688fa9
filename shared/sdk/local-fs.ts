// The few calls of node:fs/promises and node:path the directory transfers make, typed here and
// imported only when one runs: the SDK is built without Node's types and also loads where there
// is no file system (a browser, a worker), which then fails only uploadDir and downloadDir.

export interface LocalStats {
  mode: number;
  size: number;
  mtimeMs: number;
  ino: number;
  dev: number;
  nlink: number;
  isFile(): boolean;
  isDirectory(): boolean;
  isSymbolicLink(): boolean;
}

export interface LocalFileHandle {
  read(buffer: Uint8Array, offset: number, length: number, position: number | null): Promise<{ bytesRead: number }>;
  write(buffer: Uint8Array): Promise<{ bytesWritten: number }>;
  chmod(mode: number): Promise<void>;
  utimes(atime: number, mtime: number): Promise<void>;
  close(): Promise<void>;
}

export interface LocalFs {
  open(path: string, flags: string, mode?: number): Promise<LocalFileHandle>;
  lstat(path: string): Promise<LocalStats>;
  stat(path: string): Promise<LocalStats>;
  readdir(path: string): Promise<string[]>;
  readlink(path: string): Promise<string>;
  realpath(path: string): Promise<string>;
  mkdir(path: string, opts?: { recursive?: boolean; mode?: number }): Promise<string | undefined>;
  chmod(path: string, mode: number): Promise<void>;
  symlink(target: string, path: string): Promise<void>;
  link(existing: string, path: string): Promise<void>;
  rename(from: string, to: string): Promise<void>;
  unlink(path: string): Promise<void>;
  rm(path: string, opts?: { force?: boolean }): Promise<void>;
}

export interface LocalPath {
  sep: string;
  join(...parts: string[]): string;
  resolve(...parts: string[]): string;
  dirname(path: string): string;
}

/**
 * node:fs/promises and node:path. Each specifier is cast to string, so that the SDK's build (without
 * Node's types) leaves it unresolved, while it stays a literal that bundlers and the image check follow.
 */
export async function localFs(): Promise<{ fs: LocalFs; path: LocalPath }> {
  const [fs, path] = await Promise.all([import('node:fs/promises' as string) as Promise<LocalFs>, import('node:path' as string) as Promise<LocalPath>]);
  return { fs, path };
}

/** A Node error's code (ENOENT…), if it is one. */
export function errnoOf(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}
