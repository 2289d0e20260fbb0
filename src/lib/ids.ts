import { randomUUID } from 'node:crypto';

/** The prefixes of every id the service hands out; the prefix says what an id names. */
export const ID_PREFIXES = {
  account: 'acct',
  apiKey: 'key',
  agent: 'agent',
  call: 'call',
  conversationFlow: 'cf',
  serviceLlm: 'llm',
  webhook: 'wh',
  event: 'evt',
  delivery: 'dlv',
  request: 'req',
} as const;

export type IdKind = keyof typeof ID_PREFIXES;

/**
 * A new random id: `<prefix>_<32 hex chars>` (122 random bits of a v4 UUID; randomUUID draws from
 * a pooled entropy buffer, much cheaper per id than a randomBytes call).
 */
export function newId(kind: IdKind): string {
  return `${ID_PREFIXES[kind]}_${randomUUID().replaceAll('-', '')}`;
}

const ID_BODY = /^[0-9a-f]{32}$/;

/** True when `value` is a well-formed id of that kind. */
export function isId(kind: IdKind, value: string): boolean {
  const prefix = `${ID_PREFIXES[kind]}_`;
  return value.startsWith(prefix) && ID_BODY.test(value.slice(prefix.length));
}
