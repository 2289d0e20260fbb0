/**
 * The number's `inbound_webhook_url` (issue 24, Retell's `call_inbound`): before an inbound phone
 * call is admitted, the account's server is asked, signed like agent webhooks, with a short bound
 * on time, and may override the agent, the dynamic variables and the metadata. Its answer is a
 * peer's JSON (bounded); anything it gets wrong, a timeout or a failure, and the call goes on as
 * the number says (docs/telephony.md, "The inbound webhook").
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from '../lib/logger.ts';
import type { Clock } from '../lib/clock.ts';
import { parseBoundedJson } from '../lib/bounded-json.ts';
import type { WebhookHttpClient } from './http-client.ts';
import { retellSignature, signedHeaders } from './signer.ts';

/** The `X-Service-Event` header (and the body's `event`) of the request. */
export const CALL_INBOUND_EVENT = 'call_inbound';
/** How long the account's server has to answer, ms; past it the call goes on with the number's agent. */
export const INBOUND_WEBHOOK_TIMEOUT_MS = 3_000;
const MAX_VARIABLES = 100;
const MAX_VALUE_CHARS = 4_096;

/** What the call is admitted with, as the number gives it. */
export interface InboundCall {
  accountId: string;
  url: string;
  agentId: string | null;
  agentVersion: number | null;
  fromNumber: string;
  toNumber: string;
}

/** What the account's server changed (each field only when it gave a valid one). */
export interface InboundOverride {
  agentId?: string;
  agentVersion?: number;
  dynamicVariables?: Record<string, string>;
  metadata?: Record<string, unknown>;
}

export interface InboundCallAskerDeps {
  /** The webhook client: the one destination policy, no redirects, bounded reads. */
  client: WebhookHttpClient;
  /** The account's agent-webhook secret (WebhookService.agentSecret). */
  secrets: { agentSecret(accountId: string): Promise<{ secret: string }> };
  clock: Clock;
  log: Logger;
  timeoutMs?: number;
}

/** Asks the number's inbound webhook about one call; never rejects (an empty override: go on as the number says). */
export function inboundCallAskerFor(deps: InboundCallAskerDeps) {
  return async (call: InboundCall, signal?: AbortSignal): Promise<InboundOverride> => {
    try {
      const { secret } = await deps.secrets.agentSecret(call.accountId);
      const body = JSON.stringify({
        event: CALL_INBOUND_EVENT,
        call_inbound: { agent_id: call.agentId, agent_version: call.agentVersion, from_number: call.fromNumber, to_number: call.toNumber },
      });
      const now = deps.clock.now();
      // Our signatures, and Retell's `x-retell-signature` that its SDKs' verify() checks.
      const headers = { ...signedHeaders(secret, CALL_INBOUND_EVENT, `in_${randomUUID()}`, now, body), 'x-retell-signature': retellSignature(secret, body, now) };
      const result = await deps.client.send(call.url, headers, body, signal, {
        timeoutMs: deps.timeoutMs ?? INBOUND_WEBHOOK_TIMEOUT_MS,
        keepBody: true,
        pool: call.accountId,
      });
      if (result.failure !== null || result.bodyCut) {
        deps.log.info({ failure: result.failure ?? 'too_large', statusCode: result.statusCode }, 'inbound webhook failed: the call goes on with the number\'s agent');
        return {};
      }
      return overrideOf(result.body?.toString('utf8') ?? '');
    } catch (error) {
      deps.log.info({ err: error }, 'inbound webhook failed: the call goes on with the number\'s agent');
      return {};
    }
  };
}

export type InboundCallAsker = ReturnType<typeof inboundCallAskerFor>;

/** The override in an answer `{"call_inbound": {override_agent_id, override_agent_version, dynamic_variables, metadata}}`; invalid parts are left out. */
export function overrideOf(text: string): InboundOverride {
  const parsed = text.trim() === '' ? null : parseBoundedJson(text);
  const root = parsed?.ok ? parsed.value : null;
  const answer = isObject(root) && isObject(root['call_inbound']) ? root['call_inbound'] : null;
  if (!answer) return {};
  const override: InboundOverride = {};
  const agentId = answer['override_agent_id'];
  if (typeof agentId === 'string' && /^agent_[A-Za-z0-9]{1,64}$/.test(agentId)) override.agentId = agentId;
  const version = answer['override_agent_version'];
  if (Number.isInteger(version) && (version as number) >= 1) override.agentVersion = version as number;
  const variables = answer['dynamic_variables'];
  if (isObject(variables)) {
    const entries = Object.entries(variables).filter((e): e is [string, string] => typeof e[1] === 'string' && e[1].length <= MAX_VALUE_CHARS && e[0].length <= 128);
    if (entries.length > 0) override.dynamicVariables = Object.fromEntries(entries.slice(0, MAX_VARIABLES));
  }
  const metadata = answer['metadata'];
  if (isObject(metadata)) override.metadata = metadata;
  return override;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
