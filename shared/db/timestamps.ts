// A timestamp column as a driver hands it over: pg's own pools parse it into a Date, the ORM's
// pool leaves it text (the ORM converts it itself). A row read through either is the same.

export function dateOf<T extends Date | null>(value: T | string): T {
  return (value === null || value instanceof Date ? value : new Date(value)) as T;
}

/** The timestamp as the API presents it (ISO 8601, UTC), or null. */
export function isoOf(value: Date | string | null): string | null {
  return value === null ? null : dateOf(value).toISOString();
}
