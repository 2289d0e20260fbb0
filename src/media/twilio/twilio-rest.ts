/**
 * The few calls of Twilio's REST API (api.twilio.com/2010-04-01) the transport makes: create an
 * outbound call whose TwiML comes from our voice webhook, with status callbacks to us; and update a
 * live call (new TwiML, for a transfer with <Dial>; or `Status=completed`, a hang-up). HTTP Basic
 * auth with the number's account SID and auth token; each request bounded in time and in the size
 * of its answer, the answer parsed as bounded JSON.
 */
import { parseBoundedJson } from '../../lib/bounded-json.ts';

/** Twilio's production API; TWILIO_API_BASE_URL points elsewhere (a regional edge, a test server). */
export const TWILIO_API_BASE_URL = 'https://api.twilio.com';
/** How long one REST request may take, ms. */
const REQUEST_TIMEOUT_MS = 10_000;
/** Largest answer read, bytes: a call resource is about 2 KB. */
const MAX_ANSWER_BYTES = 65_536;

/** Credentials of one Twilio account (a number's `twilio_account_sid` and `twilio_auth_token`). */
export interface TwilioCredentials {
  accountSid: string;
  authToken: string;
}

export interface CreateCallInput {
  to: string;
  from: string;
  /** Our voice webhook for this call: Twilio fetches its TwiML once the callee answers. */
  url: string;
  /** Where Twilio posts the call's progress (initiated, ringing, answered, completed). */
  statusCallback: string;
  /** Seconds Twilio lets the callee's phone ring (Twilio's default 60, at most 600). */
  timeoutSeconds: number;
}

/** Twilio refused or could not be reached; `status` is its HTTP status (0: no answer), `code` Twilio's error code. */
export class TwilioApiError extends Error {
  readonly status: number;
  readonly code: number | null;
  constructor(status: number, code: number | null, message: string) {
    super(message);
    this.name = 'TwilioApiError';
    this.status = status;
    this.code = code;
  }
}

export class TwilioRest {
  readonly #baseUrl: string;

  constructor(baseUrl = TWILIO_API_BASE_URL) {
    this.#baseUrl = baseUrl.replace(/\/+$/, '');
  }

  /** Places a call; returns its CallSid. Throws TwilioApiError. */
  async createCall(credentials: TwilioCredentials, input: CreateCallInput): Promise<string> {
    const answer = await this.#post(credentials, `/2010-04-01/Accounts/${encodeURIComponent(credentials.accountSid)}/Calls.json`, {
      To: input.to,
      From: input.from,
      Url: input.url,
      Method: 'POST',
      StatusCallback: input.statusCallback,
      StatusCallbackMethod: 'POST',
      StatusCallbackEvent: ['initiated', 'ringing', 'answered', 'completed'],
      Timeout: String(input.timeoutSeconds),
    });
    const sid = (answer as { sid?: unknown }).sid;
    if (typeof sid !== 'string' || !/^CA[0-9a-f]{32}$/i.test(sid)) throw new TwilioApiError(502, null, 'Twilio answered a call without a valid sid.');
    return sid;
  }

  /** Gives a live call new TwiML (it leaves its stream and runs it), or hangs it up (`{status: 'completed'}`). */
  async updateCall(credentials: TwilioCredentials, callSid: string, change: { twiml: string } | { status: 'completed' }): Promise<void> {
    const params: Record<string, string> = 'twiml' in change ? { Twiml: change.twiml } : { Status: change.status };
    await this.#post(credentials, `/2010-04-01/Accounts/${encodeURIComponent(credentials.accountSid)}/Calls/${encodeURIComponent(callSid)}.json`, params);
  }

  async #post(credentials: TwilioCredentials, path: string, params: Record<string, string | string[]>): Promise<unknown> {
    const body = new URLSearchParams();
    for (const [name, value] of Object.entries(params)) for (const v of typeof value === 'string' ? [value] : value) body.append(name, v);
    let res: Response;
    try {
      res = await fetch(this.#baseUrl + path, {
        method: 'POST',
        headers: {
          authorization: `Basic ${Buffer.from(`${credentials.accountSid}:${credentials.authToken}`).toString('base64')}`,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: body.toString(),
        redirect: 'error',
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
    } catch (error) {
      throw new TwilioApiError(0, null, `Twilio could not be reached (${(error as Error).name}).`);
    }
    const text = await readBounded(res);
    const parsed = text === null ? null : parseBoundedJson(text, { maxChars: MAX_ANSWER_BYTES });
    const value = parsed?.ok ? parsed.value : null;
    if (!res.ok) {
      const { code, message } = (value ?? {}) as { code?: unknown; message?: unknown };
      const detail = typeof message === 'string' ? message.slice(0, 200) : `HTTP ${res.status}`;
      throw new TwilioApiError(res.status, typeof code === 'number' ? code : null, `Twilio refused the request: ${detail}`);
    }
    if (value === null || typeof value !== 'object') throw new TwilioApiError(502, null, 'Twilio answered with something other than JSON.');
    return value;
  }
}

/** The answer's text, or null when it is larger than MAX_ANSWER_BYTES. */
async function readBounded(res: Response): Promise<string | null> {
  if (!res.body) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  const reader = res.body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > MAX_ANSWER_BYTES) {
      await reader.cancel().catch(() => {});
      return null;
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
