// A one-line spinner on stderr for plain subcommands; silent when stderr is not a terminal.
const FRAMES = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

export interface Spinner {
  text(message: string): void;
  stop(): void;
}

export function startSpinner(message: string, stream: NodeJS.WriteStream = process.stderr): Spinner {
  if (!stream.isTTY) return { text: () => undefined, stop: () => undefined };
  let current = message;
  let i = 0;
  const draw = () => stream.write(`\r\x1b[2K${FRAMES[i++ % FRAMES.length]} ${current}`);
  draw();
  const timer = setInterval(draw, 80);
  return {
    text(m) {
      current = m;
    },
    stop() {
      clearInterval(timer);
      stream.write('\r\x1b[2K');
    },
  };
}
