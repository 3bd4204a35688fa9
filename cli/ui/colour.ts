/**
 * A colour for Ink's `color` prop, or none when NO_COLOR is set (https://no-color.org: present
 * and not empty). Emphasis that is not colour (bold, inverse, dim) stays: the picker's cursor
 * and headings must still show.
 */
export function colour<C extends string>(name: C | undefined): C | undefined {
  return noColor() ? undefined : name;
}

export function noColor(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.NO_COLOR);
}
