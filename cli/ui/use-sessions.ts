import { useCallback, useEffect, useRef, useState } from 'react';
import type { Account, Sandbox } from '../api/types.ts';
import { describeError } from '../output/error.ts';
import type { PickerApi } from './picker-api.ts';

export interface SessionsState {
  sessions: Sandbox[] | undefined;
  account: Account | undefined;
  /** The last refresh's failure, as one line. */
  error: string | undefined;
  refresh: () => Promise<void>;
}

/** One line for an error: its message, code and hint. */
export function errorText(err: unknown): string {
  const d = describeError(err);
  return `${d.message}${d.code ? ` [${d.code}]` : ''}${d.hint ? ` ${d.hint}` : ''}`;
}

/**
 * The account's active sessions and quota, refreshed every `refreshMs` (every second while one is
 * starting or stopping, to show it change) and on demand.
 */
export function useSessions(api: PickerApi, refreshMs: number): SessionsState {
  const [sessions, setSessions] = useState<Sandbox[] | undefined>(undefined);
  const [account, setAccount] = useState<Account | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const alive = useRef(true);
  useEffect(
    () => () => {
      alive.current = false;
    },
    [],
  );

  const refresh = useCallback(async () => {
    try {
      const [list, acct] = await Promise.all([api.listSandboxes('active'), api.account()]);
      if (!alive.current) return;
      setSessions(list);
      setAccount(acct);
      setError(undefined);
    } catch (err) {
      if (alive.current) setError(errorText(err));
    }
  }, [api]);

  const changing = sessions?.some((s) => s.status === 'pending' || s.status === 'terminating') ?? false;
  const every = changing ? Math.min(refreshMs, 1000) : refreshMs;
  useEffect(() => {
    void refresh();
    const timer = setInterval(() => void refresh(), every);
    return () => clearInterval(timer);
  }, [refresh, every]);

  return { sessions, account, error, refresh };
}
