/** HTTP over a raw socket: for requests no HTTP client would send, and for watching the connection. */
import assert from 'node:assert/strict';
import net from 'node:net';

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server sent. */
  raw: string;
  /** Whether the server closed the connection (false: still open when we gave up). */
  closed: boolean;
  /** From connecting to the server closing (or giving up), ms. */
  elapsedMs: number;
}

/**
 * Sends `data` (then each of `trickle` every `trickleEveryMs`), and reads until the server closes
 * the connection or `waitMs` passes. Parses the first response.
 */
export function rawExchange(
  port: number,
  data: string | Buffer,
  options: { waitMs?: number; trickle?: string; trickleEveryMs?: number } = {},
): Promise<RawResponse> {
  const started = Date.now();
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let trickled = 0;
    const trickler = options.trickle
      ? setInterval(() => {
          if (trickled < options.trickle!.length && !socket.destroyed) socket.write(options.trickle![trickled++]!);
        }, options.trickleEveryMs ?? 50)
      : undefined;
    const finish = (closed: boolean) => {
      clearTimeout(timer);
      clearInterval(trickler);
      socket.destroy();
      resolve({ ...parse(Buffer.concat(chunks).toString('latin1')), closed, elapsedMs: Date.now() - started });
    };
    const timer = setTimeout(() => finish(false), options.waitMs ?? 3_000);
    socket.on('data', (chunk) => chunks.push(chunk));
    socket.on('error', () => {});
    socket.on('close', () => finish(true));
    socket.write(data);
  });
}

function parse(raw: string): Omit<RawResponse, 'closed' | 'elapsedMs'> {
  const end = raw.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: '', raw };
  const [statusLine = '', ...lines] = raw.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  let body = raw.slice(end + 4);
  if (headers['content-length'] !== undefined) body = body.slice(0, Number(headers['content-length']));
  return { status: Number(statusLine.split(' ')[1]), headers, body, raw };
}

/** Asserts the service's error body, exactly: `{"status":"error","code","message"}` in JSON. */
export function assertErrorBody(response: { status: number; headers: Record<string, unknown>; body: string }, status: number, code: string, label = code): void {
  assert.equal(response.status, status, `${label}: status (${response.body.slice(0, 200)})`);
  assert.match(String(response.headers['content-type']), /^application\/json/, `${label}: content-type`);
  const json = JSON.parse(response.body) as Record<string, unknown>;
  assert.deepEqual(Object.keys(json).sort(), ['code', 'message', 'status'], `${label}: keys`);
  assert.equal(json.status, 'error', label);
  assert.equal(json.code, code, label);
  assert.equal(typeof json.message, 'string', label);
}
