import { WEB_CALL_PATH } from './media.constants.ts';

/**
 * The WebSocket URL of the media endpoint for a server's base URL: `ws:` for `http:`, `wss:` for
 * `https:` (a `ws:`/`wss:` base keeps its scheme). A base path is kept, so a server mounted under
 * `/voice/` serves `/voice/v2/web-call`; a URL that already names the endpoint is returned as the
 * endpoint. The query and fragment are dropped. Throws a TypeError for any other scheme.
 *
 * Shared by the browser SDK and the Node client; plain code with no dependencies.
 */
export function webCallUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.protocol === 'http:') url.protocol = 'ws:';
  else if (url.protocol === 'https:') url.protocol = 'wss:';
  else if (url.protocol !== 'ws:' && url.protocol !== 'wss:') throw new TypeError(`baseUrl must be an http(s) or ws(s) URL (got ${baseUrl})`);
  const base = url.pathname.replace(/\/+$/, '');
  url.pathname = base.endsWith(WEB_CALL_PATH) ? base : `${base}${WEB_CALL_PATH}`;
  url.search = '';
  url.hash = '';
  return url.toString();
}
