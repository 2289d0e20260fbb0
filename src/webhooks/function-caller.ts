import { randomUUID } from 'node:crypto';
import type { Counter } from 'prom-client';
import type { Clock } from '../lib/clock.ts';
import type { Logger } from '../lib/logger.ts';
import type { Call } from '../domain/call.ts';
import { type CustomFunction, DEFAULT_FUNCTION_TIMEOUT_MS, FUNCTION_RESULT_MAX_CHARS } from '../domain/custom-function.ts';
import { toCallView, type CallView } from '../services/call.view.ts';
import type { WebhookHttpClient } from './http-client.ts';
import { signedHeaders } from './signer.ts';
import { parseBoundedJson } from '../lib/bounded-json.ts';

/** What a function caller needs of the rest of the service. */
export interface FunctionCallerDeps {
  /** The HTTP client of the webhook destination policy (SSRF checks, no redirects, bounded reads). */
  client: WebhookHttpClient;
  /** The account's agent-webhook secret (WebhookService.agentSecret: created on first use). */
  secrets: { agentSecret(accountId: string): Promise<{ secret: string }> };
  /** The call as stored (CallService.readCall). */
  calls: { readCall(callId: string): Promise<Call | undefined> };
  clock: Clock;
  log: Logger;
  /** Counts requests by outcome (`success`, `timeout`, `http_error`, `network`, `refused`). */
  counter?: Counter<'outcome'>;
}

/** The `X-Service-Event` header of a function request. */
export const FUNCTION_EVENT = 'function.call';

/**
 * The call object a function receives: the stored call's API object without its access token, with
 * what its storage policy will not keep already left out (`basic_attributes_only`: no dynamic
 * variables).
 */
export function callForFunction(row: Call): CallView {
  const view = toCallView(row);
  if (row.data_storage_setting === 'basic_attributes_only') {
    view.service_llm_dynamic_variables = null;
    view.override_dynamic_variables = null;
  }
  return view;
}

/**
 * The call object a custom LLM's server receives in `call_details`: the function's call object,
 * with the dynamic variables also under Retell's name (`retell_llm_dynamic_variables`), where
 * servers written for Retell read them.
 */
export function callForCustomLlm(row: Call): CallView & { retell_llm_dynamic_variables: CallView['service_llm_dynamic_variables'] } {
  const view = callForFunction(row);
  return { ...view, retell_llm_dynamic_variables: view.service_llm_dynamic_variables };
}

/**
 * What the model and the record get of an answer: its text, cut at FUNCTION_RESULT_MAX_CHARS with
 * a note saying so; and its JSON when the whole answer was read and parses.
 */
export function resultOfBody(body: Buffer, cut: boolean): { content: string; json?: unknown } {
  const text = body.toString('utf8');
  // JSON from a backend is bounded like any peer's (lib/bounded-json.ts): nested deeper, it is text.
  const parsed = cut ? undefined : parseBoundedJson(text);
  const json = parsed?.ok ? parsed.value : undefined;
  const long = cut || text.length > FUNCTION_RESULT_MAX_CHARS;
  const content = long ? `${text.slice(0, FUNCTION_RESULT_MAX_CHARS)}\n[response cut: only its first ${FUNCTION_RESULT_MAX_CHARS} characters are given]` : text;
  return json === undefined ? { content } : { content, json };
}

/**
 * Builds the custom-function caller of one call: `POST url` with `{"call", "name", "args"}`,
 * signed like agent webhooks (`X-Service-Signature` with the account's agent-webhook secret, and
 * the Standard Webhooks headers), through the webhook client. Never rejects: a timeout, a refused
 * destination or a non-2xx answer comes back as a failed outcome whose content says why.
 */
export function functionCallerFor(deps: FunctionCallerDeps) {
  // `details`: the call object the request carries, for a call that is not stored (an agent test's simulated call).
  return (call: { accountId: string; callId: string; details?: () => unknown }, callSignal: AbortSignal) => {
    let secret: Promise<string> | undefined;
    return {
      async call(fn: CustomFunction, args: Record<string, unknown>, signal?: AbortSignal) {
        const started = performance.now();
        const failed = (error: string, message: string) => {
          deps.counter?.inc({ outcome: error.startsWith('http_') ? 'http_error' : error });
          return { ok: false, content: `error: ${message}`, error, durationMs: Math.round(performance.now() - started) };
        };
        try {
          secret ??= deps.secrets.agentSecret(call.accountId).then(
            (s) => s.secret,
            (error: unknown) => {
              secret = undefined; // the next call asks again
              throw error;
            },
          );
          const [key, row] = await Promise.all([secret, call.details ? undefined : deps.calls.readCall(call.callId)]);
          const details = call.details ? call.details() : row && callForFunction(row);
          if (!details) return failed('network', 'the call is no longer stored');
          const body = JSON.stringify({ call: details, name: fn.name, args });
          const headers = { ...fn.headers, ...signedHeaders(key, FUNCTION_EVENT, `fn_${randomUUID()}`, deps.clock.now(), body) };
          const abort = signal ? AbortSignal.any([callSignal, signal]) : callSignal;
          const result = await deps.client.send(fn.url, headers, body, abort, {
            method: fn.method ?? 'POST',
            timeoutMs: fn.timeout_ms ?? DEFAULT_FUNCTION_TIMEOUT_MS,
            keepBody: true,
            // The account's own sockets: another tenant's backend that never answers cannot hold them.
            pool: call.accountId,
          });
          if (result.failure === null) {
            deps.counter?.inc({ outcome: 'success' });
            return { ok: true, ...resultOfBody(result.body ?? Buffer.alloc(0), result.bodyCut === true), durationMs: result.latencyMs };
          }
          deps.log.info({ function: fn.name, failure: result.failure, statusCode: result.statusCode, ...(result.detail ? { detail: result.detail } : {}) }, 'custom function failed');
          const error = result.failure === 'http' ? `http_${result.statusCode ?? 0}` : result.failure;
          const excerpt = result.failure === 'http' && result.body ? `: ${resultOfBody(result.body.subarray(0, 1000), false).content}` : '';
          return failed(error, `${result.error ?? error}${excerpt}`);
        } catch (error) {
          // The call ended while the request ran (or the secret could not be read).
          return failed('network', error instanceof Error ? error.message : 'the request failed');
        }
      },
    };
  };
}
