import { createInterface } from 'node:readline';
import { Writable } from 'node:stream';
import { CliError, EXIT_INTERRUPTED, EXIT_USAGE } from '../errors.ts';

/** Prompts need a person: a terminal on standard input and one to write the question on. */
export function canPrompt(): boolean {
  return Boolean(process.stdin.isTTY && process.stderr.isTTY);
}

/** The error for a prompt that cannot be shown: it names the flag or input to give instead. */
export function noPromptError(what: string, instead: string): CliError {
  return new CliError(`${what} is needed, and there is no terminal to ask for it on.`, {
    hint: `Pass ${instead}.`,
    exitCode: EXIT_USAGE,
    code: 'input_required',
  });
}

/**
 * Asks a question on stderr and reads the answer from the terminal; `hidden` does not echo it.
 * Each question has its readline of its own, closed with all its listeners (readline's own
 * `close` listener is what detaches it from standard input: without it, an earlier question's
 * readline would go on echoing what is typed at a later, hidden one).
 */
export async function ask(question: string, options: { what: string; instead: string; hidden?: boolean }): Promise<string> {
  if (!canPrompt()) throw noPromptError(options.what, options.instead);
  let muted = false;
  const output = new Writable({
    write(chunk: Buffer, _enc, done) {
      if (!muted) process.stderr.write(chunk);
      done();
    },
  });
  const rl = createInterface({ input: process.stdin, output, terminal: true });
  let onClose: (() => void) | undefined;
  try {
    return await new Promise<string>((resolve, reject) => {
      rl.on('SIGINT', () => {
        process.stderr.write('\n');
        reject(new CliError('Interrupted.', { exitCode: EXIT_INTERRUPTED }));
      });
      onClose = () => reject(new CliError('No answer: standard input closed.', { hint: `Pass ${options.instead}.`, exitCode: EXIT_USAGE }));
      rl.on('close', onClose);
      rl.question(question, (answer) => {
        if (options.hidden) process.stderr.write('\n');
        resolve(answer);
      });
      // The question is out; from here on, what readline echoes of the typing is dropped.
      muted = Boolean(options.hidden);
    });
  } finally {
    if (onClose) rl.off('close', onClose);
    rl.close();
  }
}

/** Asks until the answer is not empty. */
export async function askNonEmpty(question: string, options: { what: string; instead: string; hidden?: boolean }): Promise<string> {
  for (;;) {
    const answer = await ask(question, options);
    if (options.hidden ? answer !== '' : answer.trim() !== '') return options.hidden ? answer : answer.trim();
    process.stderr.write(`${options.what} must not be empty.\n`);
  }
}

/** Asks to pick one of several; answers its index. */
export async function choose(question: string, choices: string[], options: { what: string; instead: string }): Promise<number> {
  if (!canPrompt()) throw noPromptError(options.what, options.instead);
  process.stderr.write(`${question}\n`);
  choices.forEach((c, i) => process.stderr.write(`  ${i + 1}) ${c}\n`));
  for (;;) {
    const answer = (await ask(`Choose 1-${choices.length}: `, options)).trim();
    const n = Number(answer);
    if (Number.isInteger(n) && n >= 1 && n <= choices.length) return n - 1;
  }
}

/** Asks yes or no (no unless the answer is y or yes). */
export async function confirm(question: string, options: { what: string; instead: string }): Promise<boolean> {
  const answer = (await ask(`${question} [y/N] `, options)).trim().toLowerCase();
  return answer === 'y' || answer === 'yes';
}
