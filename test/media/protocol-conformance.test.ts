// Every message the real server sends during a call (and a refused join) validates against the
// protocol's one definition (src/protocol/media.messages.ts), and every message type occurs. The
// Node client keeps what fails its own check in `unknownMessages`, so none may be there; the
// refused socket's messages are checked raw. (test/media/helpers.ts checks `unknownMessages` of
// every client it starts, in every media test.)
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Value } from '@sinclair/typebox/value';
import WebSocket from 'ws';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { ServerMessage } from '../../src/protocol/media.messages.ts';
import { webCallUrl } from '../../src/protocol/web-call-url.ts';
import { concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';
import { wsDataToBuffer } from '../../src/lib/ws-data.ts';

const LONG = 'Let me tell you about every one of our plans, one by one, in great detail. '.repeat(3).trim();
const flow = {
  start_node_id: 'talk',
  nodes: [
    {
      id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: LONG },
      edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['goodbye'] } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Bye.' } },
  ],
};

/** Every text message of one connection, as raw JSON, until the server closes it. */
function rawMessages(ws: WebSocket): Promise<unknown[]> {
  const seen: unknown[] = [];
  ws.on('message', (data, binary) => {
    if (!binary) seen.push(JSON.parse(wsDataToBuffer(data).toString('utf8')));
  });
  return new Promise((resolve) => ws.on('close', () => resolve(seen)));
}

describe('the server speaks the protocol as defined', () => {
  it('every event of a call with a barge-in, a transition, ping, a bad message and a refusal validates', async () => {
    const s = await startMediaServer('sqlite', { providers: fakeProviders(['goodbye'], { msPerChar: 40 }) });
    try {
      const agentId = await s.flowAgent(flow);
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: agentId });
      const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token });

      // A second socket replaying the token: refused with `error`.
      const replay = new WebSocket(webCallUrl(s.baseUrl));
      const refusal = rawMessages(replay);
      replay.on('open', () => replay.send(JSON.stringify({ type: 'join', access_token: created.json.access_token, protocol_version: 1, sample_rate: 16000 })));

      await client.ping();
      client.sendText('{not json');
      await client.waitFor('error', 2_000);
      await client.waitFor('agent_start_talking', 5_000);
      await new Promise((r) => setTimeout(r, 500));
      // The caller talks over the long reply: clear, cut-off stop, update, then "goodbye" moves to the end node.
      await client.play(concat(tone(600), silence(800)));
      const end = await client.ended;
      assert.equal(end.disconnection_reason, 'agent_hangup');

      const events = client.events.map(({ atMs: _atMs, ...message }) => message);
      const all = [...events, ...(await refusal)];
      for (const message of all) assert.ok(Value.Check(ServerMessage, message), JSON.stringify(message));
      assert.deepEqual(client.unknownMessages, []);
      const types = new Set(all.map((m) => (m as { type: string }).type));
      // `metadata` comes only from a custom LLM's server: test/media/custom-llm.test.ts has a client receive it (and validate it).
      for (const schema of ServerMessage.anyOf) {
        if (schema.properties.type.const === 'metadata') continue;
        assert.ok(types.has(schema.properties.type.const), `the server sent ${schema.properties.type.const}`);
      }
    } finally {
      await s.close();
    }
  });
});
