/**
 * Log lines for a person at a terminal: `12:04:05.123 INFO  http  request completed  method=GET ...`
 * instead of JSON. The same fields as the JSON line (nothing added, nothing dropped but pino's
 * bookkeeping); an error's stack follows on its own lines. Writes synchronously, like the JSON
 * destination, so a line logged just before exit is never lost.
 */
import fs from 'node:fs';

const LEVELS: Record<number, string> = { 10: 'TRACE', 20: 'DEBUG', 30: 'INFO', 40: 'WARN', 50: 'ERROR', 60: 'FATAL' };
const COLOURS: Record<number, string> = { 10: '90', 20: '36', 30: '32', 40: '33', 50: '31', 60: '35' };
/** pino's own fields, shown in the line's head or not at all. */
const HEAD = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'component']);

/** A pino destination writing `fd` (1 or 2) as readable lines; `colour`: ANSI colours on the level. */
export function prettyDestination(fd: number, colour: boolean): { write(line: string): void } {
  return { write: (line) => fs.writeSync(fd, prettyLine(line, colour)) };
}

/** One JSON log line as a readable line (and an error's stack); text that is not JSON passes as is. */
export function prettyLine(json: string, colour = false): string {
  let entry: Record<string, unknown>;
  try {
    entry = JSON.parse(json) as Record<string, unknown>;
  } catch {
    return json.endsWith('\n') ? json : `${json}\n`;
  }
  const level = typeof entry['level'] === 'number' ? entry['level'] : 30;
  const name = (LEVELS[level] ?? String(level)).padEnd(5);
  const time = typeof entry['time'] === 'number' ? new Date(entry['time']).toISOString().slice(11, 23) : '';
  const component = typeof entry['component'] === 'string' ? ` ${entry['component']}` : '';
  const stacks: string[] = [];
  const fields = Object.entries(entry)
    .filter(([key]) => !HEAD.has(key))
    .map(([key, value]) => {
      if (value && typeof value === 'object' && typeof (value as { stack?: unknown }).stack === 'string') {
        stacks.push((value as { stack: string }).stack);
        return `${key}=${JSON.stringify((value as { message?: unknown }).message ?? '')}`;
      }
      return `${key}=${formatValue(value)}`;
    });
  const head = colour ? `\u001b[${COLOURS[level] ?? '0'}m${name}\u001b[0m` : name;
  const text = [`${time} ${head}${component}  ${typeof entry['msg'] === 'string' ? entry['msg'] : formatValue(entry['msg'] ?? '')}`, ...(fields.length > 0 ? [fields.join(' ')] : [])].join('  ');
  return `${[text, ...stacks.map((s) => s.replace(/^/gm, '    '))].join('\n')}\n`;
}

function formatValue(value: unknown): string {
  if (typeof value === 'string') return /^[\w./:@-]*$/.test(value) && value !== '' ? value : JSON.stringify(value);
  return JSON.stringify(value) ?? String(value);
}
