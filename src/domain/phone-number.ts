/**
 * Phone numbers (issue 24), as Retell's API has them: an E.164 number an account holds, the agents
 * that answer it and call from it, and how it is reached: a SIP trunk (`termination_uri` with
 * optional digest credentials) or a Twilio number (account SID and auth token). Secrets are
 * encrypted at rest and never returned.
 */

/** E.164: `+`, a non-zero country digit, at most 15 digits in all (ITU-T E.164 6.2). */
export const E164_PATTERN = /^\+[1-9][0-9]{1,14}$/;

/** Longest `termination_uri` (a host name is at most 253 characters; a port and parameters fit). */
export const MAX_TERMINATION_URI_LENGTH = 300;

/** How a number is reached: over a SIP trunk (also a number with no termination URI: inbound only) or through Twilio. */
export const PHONE_NUMBER_TYPES = ['custom', 'twilio'] as const;
export type PhoneNumberType = (typeof PHONE_NUMBER_TYPES)[number];

/** SIP transports a termination URI may name (`;transport=`); UDP when it names none (RFC 3261 18.1). */
export const SIP_TRANSPORTS = ['udp', 'tcp'] as const;
export type SipTransport = (typeof SIP_TRANSPORTS)[number];

/** A Twilio account SID: `AC` and 32 hexadecimal digits. */
export const TWILIO_ACCOUNT_SID_PATTERN = /^AC[0-9a-fA-F]{32}$/;
/** A Twilio auth token: 32 hexadecimal digits. */
export const TWILIO_AUTH_TOKEN_PATTERN = /^[0-9a-fA-F]{32}$/;

/** A stored phone number; the secrets only in their encrypted form. */
export interface PhoneNumber {
  phone_number: string;
  account_id: string;
  nickname: string | null;
  inbound_agent_id: string | null;
  inbound_agent_version: number | null;
  outbound_agent_id: string | null;
  outbound_agent_version: number | null;
  inbound_webhook_url: string | null;
  termination_uri: string | null;
  sip_trunk_auth_username: string | null;
  sip_trunk_auth_password_encrypted: string | null;
  twilio_account_sid_encrypted: string | null;
  twilio_auth_token_encrypted: string | null;
  created_at: number;
  updated_at: number;
}

/** Where a SIP trunk is dialled: a parsed `termination_uri`. */
export interface SipTarget {
  host: string;
  /** Null: the transport's default (5060), after a DNS lookup of the host. */
  port: number | null;
  transport: SipTransport;
}

/**
 * How a number is reached, with its secrets in the clear: what a transport needs to place or
 * check a call. Never part of an API response.
 */
export type PhoneNumberReach =
  | { kind: 'sip'; target: SipTarget | null; auth: { username: string; password: string } | null }
  | { kind: 'twilio'; accountSid: string; authToken: string };

/** `value` as E.164, taking it with or without its `+` (a SIP Request-URI's user part often lacks it); null if it is not a number. */
export function normalizeE164(value: string): string | null {
  const candidate = value.startsWith('+') ? value : `+${value}`;
  return E164_PATTERN.test(candidate) ? candidate : null;
}

/**
 * A readable form of an E.164 number: North American numbers as `+1 (415) 555-1234`, others as the
 * country code and the rest in groups (`+44 2071 838750` style grouping is per country; we group
 * by threes, which reads well enough and never changes the digits).
 */
export function prettyPhoneNumber(e164: string): string {
  const digits = e164.slice(1);
  if (digits.length === 11 && digits.startsWith('1')) {
    return `+1 (${digits.slice(1, 4)}) ${digits.slice(4, 7)}-${digits.slice(7)}`;
  }
  const country = digits.length > 10 ? digits.slice(0, digits.length - 10) : digits.slice(0, 2);
  const rest = digits.slice(country.length);
  const groups = rest.match(/.{1,3}/g) ?? [];
  return `+${country} ${groups.join(' ')}`.trim();
}

/**
 * Parses a `termination_uri`: `host[:port][;transport=udp|tcp]`, optionally as a `sip:` URI, as
 * Retell takes it (`example.pstn.twilio.com`). No user part (the dialled number becomes the user
 * part of each call's Request-URI) and no other parameters. Returns why it is refused, or the target.
 */
export function parseTerminationUri(raw: string): { target: SipTarget } | { refusal: string } {
  if (raw.length === 0 || raw.length > MAX_TERMINATION_URI_LENGTH || /\s/.test(raw)) {
    return { refusal: `must be 1 to ${MAX_TERMINATION_URI_LENGTH} characters without spaces` };
  }
  let rest = raw;
  const scheme = /^(sips?):/i.exec(rest);
  if (scheme) {
    if (scheme[1]?.toLowerCase() === 'sips') return { refusal: 'sips: (SIP over TLS) is not supported; use sip: with transport udp or tcp' };
    rest = rest.slice(scheme[0].length);
  }
  if (rest.includes('@')) return { refusal: 'must not have a user part (user@host): the dialled number is put there' };
  const [hostPort = '', ...params] = rest.split(';');
  let transport: SipTransport = 'udp';
  for (const param of params) {
    const match = /^transport=(udp|tcp)$/i.exec(param);
    if (!match) return { refusal: `parameter "${param}" is not supported (only transport=udp or transport=tcp)` };
    transport = (match[1] as string).toLowerCase() as SipTransport;
  }
  const hostMatch = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(?::([0-9]{1,5}))?$/.exec(hostPort);
  if (!hostMatch) return { refusal: 'must be a host name or IP address, with an optional :port' };
  const host = (hostMatch[1] as string).replace(/^\[|\]$/g, '');
  if (host.startsWith('.') || host.endsWith('-') || host.includes('..')) return { refusal: 'must be a host name or IP address, with an optional :port' };
  const port = hostMatch[2] === undefined ? null : Number(hostMatch[2]);
  if (port !== null && (port < 1 || port > 65_535)) return { refusal: 'port must be 1 to 65535' };
  return { target: { host, port, transport } };
}
