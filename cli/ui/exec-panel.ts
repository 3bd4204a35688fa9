import { useEffect, useRef, useState } from 'react';
import { Box, Text, useInput } from 'ink';
import { describeError } from '../output/error.ts';
import { h } from './h.ts';
import type { PickerApi } from './picker-api.ts';
import { TextInput } from './text-input.ts';
import { colour } from './colour.ts';
import { visible } from './visible.ts';

const KEEP_LINES = 500;

export interface ExecPanelProps {
  api: PickerApi;
  sessionId: string;
  onBack: () => void;
  /** Lines of output shown (the last ones). */
  height?: number;
}

interface OutputLine {
  stream: 'stdout' | 'stderr' | 'status';
  text: string;
  /** Not ended by a newline yet: the next chunk of the same stream continues it. */
  open: boolean;
}

/** Adds a chunk of output to the lines, continuing an open line of the same stream. */
export function addOutput(lines: OutputLine[], stream: OutputLine['stream'], text: string): OutputLine[] {
  const next = lines.slice();
  const parts = text.split('\n');
  parts.forEach((part, i) => {
    const closed = i < parts.length - 1;
    const last = next[next.length - 1];
    if (i === 0 && last?.open && last.stream === stream) next[next.length - 1] = { stream, text: last.text + part, open: !closed };
    else if (part !== '' || closed) next.push({ stream, text: part, open: !closed });
  });
  return next.slice(-KEEP_LINES);
}

export function ExecPanel({ api, sessionId, onBack, height = 15 }: ExecPanelProps) {
  const [command, setCommand] = useState('');
  const [lines, setLines] = useState<OutputLine[]>([]);
  const [running, setRunning] = useState(false);
  const abortRef = useRef<AbortController | undefined>(undefined);
  useEffect(() => () => abortRef.current?.abort(), []);

  const append = (stream: OutputLine['stream'], text: string) => setLines((old) => addOutput(old, stream, text));
  const status = (text: string) => setLines((old) => addOutput(old, 'status', `${text}\n`));

  const run = async (cmd: string) => {
    if (!cmd.trim() || running) return;
    const controller = new AbortController();
    abortRef.current = controller;
    setRunning(true);
    status(`$ ${cmd}`);
    try {
      for await (const event of api.execStream(sessionId, { command: cmd }, { signal: controller.signal })) {
        if (event.type === 'stdout' || event.type === 'stderr') append(event.type, event.data);
        else if (event.type === 'exit') {
          const how = event.timedOut ? 'timed out' : event.signal ? `ended by ${event.signal}` : `exit ${event.exitCode}`;
          status(`[${how} · ${event.durationMs} ms]`);
        } else status(`Error: ${event.detail} [${event.code}]`);
      }
    } catch (err) {
      const d = controller.signal.aborted ? { message: 'stopped', code: undefined } : describeError(err);
      status(`Error: ${d.message}${d.code ? ` [${d.code}]` : ''}`);
    } finally {
      setRunning(false);
      setCommand('');
    }
  };

  useInput((_input, key) => {
    if (!key.escape) return;
    if (running) abortRef.current?.abort();
    else onBack();
  });

  const shown = lines.slice(-height);
  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true }, `Run a command in ${sessionId}`),
    h(
      Box,
      { flexDirection: 'column', borderStyle: 'single', paddingX: 1 },
      shown.length === 0
        ? h(Text, { dimColor: true }, 'The output shows here.')
        : shown.map((l, i) =>
            h(Text, { key: i, wrap: 'truncate-end', color: colour(l.stream === 'stderr' ? 'red' : l.stream === 'status' ? 'cyan' : undefined) }, visible(l.text) || ' '),
          ),
    ),
    running
      ? h(Text, { color: colour('yellow') }, 'Running… (esc stops it)')
      : h(Box, null, h(Text, { color: colour('cyan') }, '$ '), h(TextInput, { value: command, onChange: setCommand, onSubmit: (c: string) => void run(c), active: !running, placeholder: 'a shell command line, then enter' })),
  );
}
