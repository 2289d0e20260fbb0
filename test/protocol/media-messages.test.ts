/**
 * Conformance of every copy of the media protocol to its one definition (src/protocol): the
 * browser SDK's parser against each server message schema, the server's parser against each
 * client message schema, and the one webCallUrl. The real server's events are checked in
 * test/media/protocol-conformance.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TObject } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { parseServerMessage } from '../../packages/web-sdk/src/protocol.ts';
import { parseClientMessage, parseJoin } from '../../src/media/web-call/protocol.ts';
import { PROTOCOL_SAMPLE_RATE, PROTOCOL_VERSION } from '../../src/protocol/media.constants.ts';
import { ClientMessage, ServerMessage } from '../../src/protocol/media.messages.ts';
import { webCallUrl } from '../../src/protocol/web-call-url.ts';

/** The schema of each message of a union, by its `type` literal. */
function byType(union: { anyOf: TObject[] }): Map<string, TObject> {
  return new Map(union.anyOf.map((schema) => [String(schema.properties.type!.const), schema]));
}

/** Hand-made valid server messages beyond `Value.Create`: optional fields, nulls, real values. */
const SERVER_EXAMPLES: ServerMessage[] = [
  { type: 'call_started', protocol_version: 1, call_id: 'call_1', sample_rate: 16000, agent: { agent_id: 'agent_1', agent_version: 3, agent_name: 'Reception' } },
  { type: 'call_started', protocol_version: 1, call_id: 'call_2', sample_rate: 16000, agent: { agent_id: 'agent_1', agent_version: 1, agent_name: null } },
  { type: 'agent_start_talking', utterance_id: 'utt_1' },
  { type: 'agent_stop_talking', utterance_id: 'utt_1', cut_off: true },
  { type: 'clear', utterance_id: 'utt_2' },
  { type: 'update', transcript: [{ role: 'agent', content: 'Hello.' }, { role: 'user', content: 'Hi', cut_off: true }], final: true },
  { type: 'update', transcript: Array.from({ length: 10 }, (_, i) => ({ role: i % 2 ? 'user' : 'agent', content: `line ${i}` }) as const), final: false },
  { type: 'node_transition', from: null, to: 'greet' },
  { type: 'node_transition', from: 'greet', to: 'ask' },
  { type: 'metadata', metadata: { screen: 'orders', ids: [1, 2] } },
  { type: 'metadata', metadata: null },
  { type: 'call_ended', call_status: 'error', disconnection_reason: 'error_llm_websocket_open' },
  { type: 'call_ended', call_status: 'error', disconnection_reason: 'error_asr' },
  { type: 'error', code: 'token_used', message: 'The token was used.' },
  { type: 'pong', id: null },
  { type: 'pong', id: 1716000000000 },
  { type: 'pong', id: 'abc' },
];

/** Every schema's default message plus the hand-made ones. */
function serverExamples(): ServerMessage[] {
  const created = ServerMessage.anyOf.map((schema): ServerMessage => Value.Create(schema));
  return [...created, ...SERVER_EXAMPLES];
}

/** Broken copies of a message: each field (nested too) removed or given a value of another type. */
function* mutations(value: unknown): Generator<unknown> {
  const wrong = [null, 42, 1.5, 'x', true, [], {}];
  if (Array.isArray(value)) {
    for (const [i, item] of value.entries()) {
      for (const m of mutations(item)) yield value.map((v, j) => (j === i ? m : v));
    }
    yield 'not an array';
    return;
  }
  if (typeof value !== 'object' || value === null) return;
  for (const [key, field] of Object.entries(value)) {
    if (key === 'type') continue;
    const { [key]: _removed, ...without } = value as Record<string, unknown>;
    yield without;
    for (const w of wrong) yield { ...value, [key]: w };
    for (const m of mutations(field)) yield { ...value, [key]: m };
  }
}

describe('server messages: the SDK parser against the schemas', () => {
  const schemas = byType(ServerMessage);

  test('every message type has examples, and the examples are valid', () => {
    const examples = serverExamples();
    for (const type of schemas.keys()) assert.ok(examples.some((e) => e.type === type), `an example of ${type}`);
    for (const example of examples) assert.ok(Value.Check(schemas.get(example.type)!, example), JSON.stringify(example));
  });

  test('accepts every valid message and returns it unchanged, valid against its schema', () => {
    for (const example of serverExamples()) {
      const parsed = parseServerMessage(JSON.stringify(example));
      assert.ok(parsed, `parsed ${JSON.stringify(example)}`);
      assert.ok(Value.Check(schemas.get(example.type)!, parsed), `valid ${JSON.stringify(parsed)}`);
      assert.deepEqual(parsed, example);
    }
  });

  test('a broken message is refused (null) or repaired into a valid one, never passed on invalid', () => {
    let refused = 0;
    let repaired = 0;
    for (const example of serverExamples()) {
      for (const broken of mutations(example)) {
        const parsed = parseServerMessage(JSON.stringify(broken));
        if (parsed === null) refused += 1;
        else {
          repaired += 1;
          assert.equal(parsed.type, example.type);
          assert.ok(Value.Check(ServerMessage, parsed), `from ${JSON.stringify(broken)}: ${JSON.stringify(parsed)}`);
        }
      }
    }
    assert.ok(refused > 0 && repaired > 0);
  });

  test('a message with a `type` that names no message is ignored', () => {
    for (const type of ['toString', '__proto__', 'constructor', 'hasOwnProperty', 'future_event']) {
      assert.equal(parseServerMessage(JSON.stringify({ type })), null, type);
    }
  });
});

describe('client messages: the server parser against the schemas', () => {
  const join: ClientMessage = { type: 'join', access_token: 'tok_1', protocol_version: PROTOCOL_VERSION, sample_rate: PROTOCOL_SAMPLE_RATE };

  test('the schemas cover join, hangup and ping', () => {
    assert.deepEqual([...byType(ClientMessage).keys()].sort(), ['hangup', 'join', 'ping']);
  });

  test('a valid join is accepted as sent; another version or rate is unsupported_protocol', () => {
    assert.ok(Value.Check(ClientMessage, join));
    assert.deepEqual(parseJoin(JSON.stringify(join)), { ok: true, join });
    const created = Value.Create(byType(ClientMessage).get('join')!);
    assert.ok(Value.Check(ClientMessage, created));
    const refused = parseJoin(JSON.stringify(created));
    assert.equal(refused.ok ? 'ok' : refused.code, 'unsupported_protocol');
  });

  test('every valid hangup and ping is accepted, the ping with its id', () => {
    const examples: ClientMessage[] = [{ type: 'hangup' }, { type: 'ping' }, { type: 'ping', id: 7 }, { type: 'ping', id: 'abc' }, { type: 'ping', id: null }];
    const created = ClientMessage.anyOf.filter((s) => s.properties.type.const !== 'join').map((s): ClientMessage => Value.Create(s));
    for (const message of [...examples, ...created]) {
      assert.ok(Value.Check(ClientMessage, message), JSON.stringify(message));
      const parsed = parseClientMessage(JSON.stringify(message));
      assert.ok(parsed && parsed.type === message.type && Value.Check(ClientMessage, parsed), JSON.stringify(message));
      if (parsed.type === 'ping' && message.type === 'ping') assert.equal(parsed.id, message.id);
    }
  });

  test('a join outside its schema is bad_message; a broken hangup, or a join after the join, is null', () => {
    for (const broken of mutations(join)) {
      const parsed = parseJoin(JSON.stringify(broken));
      if (!Value.Check(ClientMessage, broken)) assert.equal(parsed.ok ? 'ok' : parsed.code, 'bad_message', JSON.stringify(broken));
      else if (parsed.ok) assert.deepEqual(parsed.join, broken);
    }
    assert.equal(parseClientMessage('{"type":"hangup"'), null);
    assert.equal(parseClientMessage(JSON.stringify(join)), null);
    assert.deepEqual(parseClientMessage('{"type":"future_thing"}'), { type: 'unknown' });
  });
});

describe('webCallUrl (the SDK and the Node client share it)', () => {
  test('http(s) and ws(s) bases, base paths, and the endpoint itself', () => {
    assert.equal(webCallUrl('http://127.0.0.1:8080'), 'ws://127.0.0.1:8080/v2/web-call');
    assert.equal(webCallUrl('https://voice.example.com/base/'), 'wss://voice.example.com/base/v2/web-call');
    assert.equal(webCallUrl('ws://127.0.0.1:8080'), 'ws://127.0.0.1:8080/v2/web-call');
    assert.equal(webCallUrl('wss://voice.example.com/v2/web-call'), 'wss://voice.example.com/v2/web-call');
    assert.equal(webCallUrl('http://h/v2/web-call/?x=1#y'), 'ws://h/v2/web-call');
    assert.throws(() => webCallUrl('ftp://example.com'), TypeError);
  });
});
