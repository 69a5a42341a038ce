// JSON Lines: the pages' items exactly as the pages serve them, one per line. JSON.stringify never
// writes a raw CR or LF, but it leaves U+2028 / U+2029 as they are, and line splitters such as
// Python's str.splitlines() break on them: a target's text could cut one item in two. Escaped.
export function jsonlLine(item: unknown): string {
  return `${JSON.stringify(item).replaceAll('\u2028', '\\u2028').replaceAll('\u2029', '\\u2029')}\n`;
}
