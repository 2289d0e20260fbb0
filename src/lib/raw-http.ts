import { STATUS_CODES } from 'node:http';

/**
 * A complete HTTP/1.1 response with a JSON body, as bytes to write on a raw socket: for the
 * places that answer before (or without) an HTTP response object, such as a malformed request,
 * a timed-out one or a refused WebSocket upgrade. It always closes the connection.
 */
export function rawJsonResponse(status: number, body: unknown, headers: Record<string, string> = {}): string {
  const json = JSON.stringify(body);
  const extra = Object.entries(headers)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
  return (
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Error'}\r\n` +
    'Content-Type: application/json; charset=utf-8\r\n' +
    `Content-Length: ${Buffer.byteLength(json)}\r\n` +
    'Cache-Control: no-store\r\n' +
    extra +
    'Connection: close\r\n\r\n' +
    json
  );
}
