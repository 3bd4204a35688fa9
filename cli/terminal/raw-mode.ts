/**
 * Puts the local terminal in raw mode (every key, Ctrl-C included, goes to the remote side) and
 * answers the way back. The way back also runs on exit, so that no path out of the CLI (an
 * exception, process.exit) leaves the user's terminal raw.
 */
export function enterRawMode(stdin: NodeJS.ReadStream): () => void {
  if (!stdin.isTTY) return () => undefined;
  stdin.setRawMode(true);
  let restored = false;
  const restore = () => {
    if (restored) return;
    restored = true;
    process.off('exit', restore);
    if (stdin.isTTY) stdin.setRawMode(false);
  };
  process.on('exit', restore);
  return restore;
}
