import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// A browser is opened on a page of our own that redirects to the address, never on the address
// itself: a private preview's signed URL holds its token, and an opener's command line (xdg-open's,
// then the browser's) can be read by every user of the machine (ps, /proc/<pid>/cmdline). The page
// lives in a folder only its owner can open (mkdtemp makes it 0700; the file is 0600), so the
// token stays as private as the API key in the CLI's config. The browser may read the page well
// after the opener returns, so the page is not removed now: pages older than STALE_MS are removed
// by the next run, and the token itself expires (an hour by default).

const PREFIX = 'paddock-open-';
const STALE_MS = 60_000;
/** How long an opener may take to say it failed; one still running then has handed the page on. */
const OPENER_VERDICT_MS = 3000;

export type OpenOutcome = { opened: true } | { opened: false; reason: string };

/** The platform's opener of a file in the default browser. */
function opener(file: string): { command: string; args: string[] } {
  if (process.platform === 'darwin') return { command: 'open', args: [file] };
  // start is cmd's own; the empty title keeps a quoted path from being read as the window title.
  if (process.platform === 'win32') return { command: 'cmd', args: ['/c', 'start', '""', file] };
  return { command: 'xdg-open', args: [file] };
}

/** Characters that end an HTML attribute or a script, written so they do not. */
function escapeHtml(s: string): string {
  return s.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

function redirectPage(url: string): string {
  const attr = escapeHtml(url);
  const script = JSON.stringify(url).replace(/</g, '\\u003c');
  return (
    '<!doctype html><html><head><meta charset="utf-8"><meta name="referrer" content="no-referrer">' +
    `<meta http-equiv="refresh" content="0;url=${attr}"><title>Paddock preview</title>` +
    `<script>location.replace(${script})</script></head>` +
    `<body><a href="${attr}">Open the preview</a></body></html>\n`
  );
}

/** Removes the pages of earlier runs (this user's only) the browser has long read. */
function removeStalePages(now = Date.now()): void {
  const uid = process.getuid?.();
  let names: string[];
  try {
    names = readdirSync(tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(PREFIX)) continue;
    const dir = join(tmpdir(), name);
    try {
      const st = statSync(dir);
      if (!st.isDirectory() || (uid !== undefined && st.uid !== uid) || now - st.mtimeMs < STALE_MS) continue;
      rmSync(dir, { recursive: true, force: true });
    } catch {
      // Gone already, or not ours to remove.
    }
  }
}

/** Opens `url` in the default browser through a private redirecting page; says why when it could not. */
export async function openInBrowser(url: string): Promise<OpenOutcome> {
  removeStalePages();
  const dir = mkdtempSync(join(tmpdir(), PREFIX));
  const page = join(dir, 'preview.html');
  writeFileSync(page, redirectPage(url), { mode: 0o600, flag: 'wx' });
  const { command, args } = opener(page);
  const child = spawn(command, args, { stdio: 'ignore', detached: true, windowsVerbatimArguments: process.platform === 'win32' });
  const outcome = await new Promise<OpenOutcome>((resolve) => {
    const timer = setTimeout(() => resolve({ opened: true }), OPENER_VERDICT_MS);
    child.once('error', (err: NodeJS.ErrnoException) => {
      clearTimeout(timer);
      resolve({ opened: false, reason: err.code === 'ENOENT' ? `there is no ${command} to open a browser with` : `${command} could not be run: ${err.message}` });
    });
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      resolve(code === 0 ? { opened: true } : { opened: false, reason: `${command} failed (${signal ?? `exit code ${code}`})` });
    });
  });
  child.unref();
  if (!outcome.opened) rmSync(dir, { recursive: true, force: true });
  return outcome;
}
