import { errors } from '../domain/errors.ts';
import { MAX_WEBHOOK_URL_LENGTH } from '../domain/webhook.ts';

/**
 * What can be told of a destination when a URL is set, without resolving names: the delivery
 * policy's verdict on an IP-literal host or a `localhost` name (src/webhooks/destination-policy.ts
 * implements it; names are judged again on every address they resolve to at connect time).
 */
export interface DestinationCheck {
  /** Null when nothing is known against `hostname` (as `URL.hostname` writes it); else why it is refused. */
  hostRefusal(hostname: string): string | null;
}

/**
 * The one check of every URL the service will deliver webhooks to: a subscription's `url`
 * (set.php) and an agent's `webhook_url` (create-agent, update-agent, `agent_override`), and of
 * the other URLs the service connects to on a user's behalf (custom functions, a custom LLM's
 * `llm_websocket_url`, which is a ws(s) URL: `scheme` 'ws'). An absolute http(s) URL of at most 2048 characters, without whitespace, without credentials (they
 * would be stored and shown by list.php; receivers authenticate deliveries by their signature),
 * and not to a host the destination policy refuses. Throws 400 `invalid_request` naming `field`
 * and why; returns the URL as given.
 */
export function checkWebhookUrl(raw: string, destinations: DestinationCheck, field = 'url', scheme: 'http' | 'ws' = 'http'): string {
  const mustBe = `${field} must be an absolute ${scheme} or ${scheme}s URL`;
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw errors.invalidRequest(mustBe);
  }
  if (url.protocol !== `${scheme}:` && url.protocol !== `${scheme}s:`) throw errors.invalidRequest(mustBe);
  if (raw.length > MAX_WEBHOOK_URL_LENGTH || /\s/.test(raw)) {
    throw errors.invalidRequest(`${field} must be at most ${MAX_WEBHOOK_URL_LENGTH} characters without spaces`);
  }
  if (url.username !== '' || url.password !== '') {
    throw errors.invalidRequest(
      `${field} must not contain a user name or password (user:password@host): they would be stored and shown in lists; verify deliveries by their signature instead`,
    );
  }
  const refused = destinations.hostRefusal(url.hostname);
  if (refused) throw errors.invalidRequest(`${field} is not an allowed webhook destination: ${refused}`);
  if (scheme === 'ws' && (url.search !== '' || url.hash !== '')) {
    throw errors.invalidRequest(`${field} must not have a query or fragment: each call dials {${field.split('.').pop() ?? field}}/{call_id}`);
  }
  return raw;
}
