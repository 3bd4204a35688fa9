import { useEffect, useState, type DependencyList } from 'react';
import { errorText } from './use-sessions.ts';

/**
 * What `load` answers, loaded when the component is shown and again when `deps` change; or why
 * it could not be, as one line. An answer that comes after the component is gone is dropped.
 */
export function useLoaded<T>(load: () => Promise<T>, deps: DependencyList): { value: T | undefined; error: string | undefined } {
  const [value, setValue] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  useEffect(() => {
    let alive = true;
    load().then(
      (loaded) => alive && setValue(loaded),
      (err: unknown) => alive && setError(errorText(err)),
    );
    return () => {
      alive = false;
    };
    // The caller names what the load depends on, as useEffect's own callers do.
  }, deps);
  return { value, error };
}
