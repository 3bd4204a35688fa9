import { useEffect, useState } from 'react';
import { Box, Text, useApp, useInput } from 'ink';
import { ActionMenu, type SessionAction } from './action-menu.ts';
import { ConfirmDestroy } from './confirm-destroy.ts';
import { ExecPanel } from './exec-panel.ts';
import { FileBrowser } from './file-browser.ts';
import { h } from './h.ts';
import { MessageLine, type Message } from './message-line.ts';
import type { PickerApi } from './picker-api.ts';
import { QuotaFooter } from './quota-footer.ts';
import { SessionPreviews } from './session-previews.ts';
import { SessionTable } from './session-table.ts';
import { SnapshotChooser } from './snapshot-chooser.ts';
import { bytes } from '../output/format.ts';
import { errorText, useSessions } from './use-sessions.ts';
import { colour } from './colour.ts';

type Screen =
  | { kind: 'list' }
  | { kind: 'actions'; sessionId: string }
  | { kind: 'exec'; sessionId: string }
  | { kind: 'files'; sessionId: string }
  | { kind: 'confirm'; sessionId: string }
  | { kind: 'snapshots' };

/** How long a note of what was done stays on the message line. */
const INFO_SHOWN_MS = 8000;

const KEYS: Record<Screen['kind'], string> = {
  list: '↑↓ move · enter actions · n new · s new from a snapshot · r refresh · q quit',
  actions: '↑↓ move · enter choose · esc back',
  exec: 'enter run · esc stop / back',
  files: '↑↓ move · enter open · ← up a folder or back from a file · esc back',
  confirm: 'y destroy · any other key cancels',
  snapshots: '↑↓ move · enter start a session from it · esc back',
};

export interface PickerProps {
  api: PickerApi;
  /** How often the list is refreshed, in ms. */
  refreshMs?: number;
  /** The clock, for the countdowns (tests fix it). */
  clock?: () => number;
  /** "Open a shell": runs with the terminal handed over (Ink suspended); answers a line to show after. */
  openShell?: (sessionId: string) => Promise<string>;
}

/**
 * The interactive session picker: the account's sessions with status, age and a live countdown
 * to the cap; arrow keys, enter for actions, n to create, r to refresh, q to quit; the quota in the
 * footer; errors shown on a line of their own, never thrown.
 */
export function Picker({ api, refreshMs = 5000, clock = Date.now, openShell }: PickerProps) {
  const { exit, suspendTerminal } = useApp();
  const { sessions, account, error, refresh } = useSessions(api, refreshMs);
  const [screen, setScreen] = useState<Screen>({ kind: 'list' });
  const [selectedId, setSelectedId] = useState<string | undefined>(undefined);
  const [message, setMessage] = useState<Message | undefined>(undefined);
  const [busy, setBusy] = useState<string | undefined>(undefined);
  const [now, setNow] = useState(clock());

  useEffect(() => {
    const timer = setInterval(() => setNow(clock()), 1000);
    return () => clearInterval(timer);
  }, [clock]);

  // A note of what was done ("…it is starting") is news for a while, then it would be stale: the
  // list shows the state from then on. Errors stay until the next action.
  useEffect(() => {
    if (message?.kind !== 'info') return;
    const timer = setTimeout(() => setMessage((m) => (m === message ? undefined : m)), INFO_SHOWN_MS);
    return () => clearTimeout(timer);
  }, [message]);

  const list = sessions ?? [];
  const found = list.findIndex((s) => s.id === selectedId);
  const selected = found >= 0 ? found : Math.min(list.length - 1, 0);
  const chosen = list[selected];

  const create = async (snapshot?: string) => {
    setBusy(snapshot ? `Creating a session from ${snapshot}…` : 'Creating a session…');
    setMessage(undefined);
    try {
      const s = await api.createSandbox({ wait: false, ...(snapshot ? { snapshot } : {}) });
      setSelectedId(s.id);
      setMessage({ kind: 'info', text: `Created ${s.id}${snapshot ? ` from ${snapshot}` : ''}; it is starting.` });
      await refresh();
    } catch (err) {
      setMessage({ kind: 'error', text: errorText(err) });
    } finally {
      setBusy(undefined);
    }
  };

  const snapshot = async (id: string) => {
    setBusy(`Snapshotting the workspace of ${id}…`);
    setMessage(undefined);
    try {
      const s = await api.createSnapshot(id);
      setMessage({ kind: 'info', text: `Snapshot ${s.id} taken (${bytes(s.sizeBytes)}); s starts a session from it.` });
    } catch (err) {
      setMessage({ kind: 'error', text: errorText(err) });
    } finally {
      setBusy(undefined);
    }
  };

  const destroy = async (id: string) => {
    setBusy(`Destroying ${id}…`);
    try {
      await api.destroySandbox(id, { wait: false });
      setMessage({ kind: 'info', text: `Destroying ${id}.` });
      await refresh();
    } catch (err) {
      setMessage({ kind: 'error', text: errorText(err) });
    } finally {
      setBusy(undefined);
    }
  };

  useInput(
    (input, key) => {
      if (input === 'q') return exit();
      if (busy) return;
      if (key.upArrow || input === 'k') setSelectedId(list[Math.max(0, selected - 1)]?.id);
      else if (key.downArrow || input === 'j') setSelectedId(list[Math.min(list.length - 1, selected + 1)]?.id);
      else if (input === 'n') void create();
      else if (input === 's') {
        setMessage(undefined);
        setScreen({ kind: 'snapshots' });
      }
      else if (input === 'r') {
        setMessage(undefined);
        void refresh();
      } else if (key.return && chosen) setScreen({ kind: 'actions', sessionId: chosen.id });
    },
    { isActive: screen.kind === 'list' },
  );

  const onAction = (action: SessionAction) => {
    if (screen.kind !== 'actions') return;
    const sessionId = screen.sessionId;
    if (action === 'back') setScreen({ kind: 'list' });
    else if (action === 'shell') {
      setScreen({ kind: 'list' });
      if (!openShell) return setMessage({ kind: 'error', text: 'A shell cannot be opened here.' });
      // The shell needs the whole terminal: Ink lets go of it, and redraws when the shell ends.
      let said = '';
      void suspendTerminal(async () => {
        said = await openShell(sessionId);
      }).then(() => {
        setMessage({ kind: 'info', text: said });
        void refresh();
      });
    }
    else if (action === 'exec') setScreen({ kind: 'exec', sessionId });
    else if (action === 'files') setScreen({ kind: 'files', sessionId });
    else if (action === 'snapshot') {
      setScreen({ kind: 'list' });
      void snapshot(sessionId);
    } else setScreen({ kind: 'confirm', sessionId });
  };

  const back = () => {
    setScreen({ kind: 'list' });
    void refresh();
  };

  let body;
  switch (screen.kind) {
    case 'list':
      // Never loaded (the error line says why) is not the same as none: no "No active sessions" then.
      body =
        sessions !== undefined
          ? h(SessionTable, { sessions: list, selected, now })
          : h(Text, { dimColor: true }, error ? 'The sessions could not be loaded (r tries again).' : 'Loading sessions…');
      break;
    case 'actions':
      // The session's details under its actions: where its previews' addresses are found again.
      body = h(
        Box,
        { flexDirection: 'column' },
        h(ActionMenu, { sessionId: screen.sessionId, onChoose: onAction }),
        h(SessionPreviews, { api, sessionId: screen.sessionId }),
      );
      break;
    case 'exec':
      body = h(ExecPanel, { api, sessionId: screen.sessionId, onBack: back });
      break;
    case 'files':
      body = h(FileBrowser, { api, sessionId: screen.sessionId, onBack: back });
      break;
    case 'snapshots':
      body = h(SnapshotChooser, {
        api,
        onChoose: (snapshotId: string) => {
          setScreen({ kind: 'list' });
          void create(snapshotId);
        },
        onBack: back,
      });
      break;
    case 'confirm': {
      const id = screen.sessionId;
      body = h(ConfirmDestroy, {
        sessionId: id,
        onAnswer: (yes: boolean) => {
          setScreen({ kind: 'list' });
          if (yes) void destroy(id);
          else setMessage({ kind: 'info', text: 'Not destroyed.' });
        },
      });
      break;
    }
  }

  return h(
    Box,
    { flexDirection: 'column' },
    h(Text, { bold: true, color: colour('magenta') }, 'Paddock sessions'),
    body,
    busy ? h(Text, { color: colour('yellow') }, busy) : null,
    h(MessageLine, { message: error ? { kind: 'error', text: error } : message }),
    h(QuotaFooter, { account, unavailable: account === undefined && error !== undefined, keys: KEYS[screen.kind] }),
  );
}
