import { json } from './format.ts';

/** A result on stdout: as JSON with --json, else as the text `human` makes of it. */
export function printResult<T>(opts: { json?: boolean }, value: T, human: (value: T) => string | undefined): void {
  if (opts.json) {
    process.stdout.write(`${json(value)}\n`);
    return;
  }
  const text = human(value);
  if (text !== undefined && text !== '') process.stdout.write(text.endsWith('\n') ? text : `${text}\n`);
}

/** A message for the person, on stderr: never mixed into results. */
export function say(message: string): void {
  process.stderr.write(`${message}\n`);
}
