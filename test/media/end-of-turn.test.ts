// The agent's end-of-turn settings reach the call's pipeline, and agent_override.agent changes
// them for one call: a 900 ms pause ends the caller's turn with a 300 ms end of turn, not with a
// 2 s one (src/media/call-session.ts, docs/voice-pipeline.md "End of turn").
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { concat, fakeProviders, silence, startMediaServer, tone } from './helpers.ts';

const flow = {
  start_node_id: 'loop',
  nodes: [{ id: 'loop', type: 'conversation', instruction: { type: 'static_text', text: 'Okay.' } }],
};

describe('end-of-turn settings in a call', () => {
  it('a short maximum silence ends the turn at a 900 ms pause; an override of 2 s keeps it one turn', async () => {
    const providers = fakeProviders(['first', 'second', 'third', 'fourth']);
    const s = await startMediaServer('sqlite', { providers });
    try {
      const agentId = await s.flowAgent(flow, { end_of_turn_min_silence_ms: 300, end_of_turn_max_silence_ms: 300 });
      const userTurns = async (body: Record<string, unknown>): Promise<string[]> => {
        const client = await s.call(agentId, body);
        await client.waitFor('agent_stop_talking', 5_000);
        await client.play(concat(tone(400), silence(900), tone(400), silence(2_600)));
        await client.hangup();
        const updates = client.events.filter((e) => e.type === 'update');
        return (updates.at(-1)?.transcript ?? []).filter((u) => u.role === 'user').map((u) => u.content);
      };
      assert.deepEqual(await userTurns({}), ['first', 'second']);
      assert.deepEqual(await userTurns({ agent_override: { agent: { end_of_turn_min_silence_ms: 2_000, end_of_turn_max_silence_ms: 2_000 } } }), ['third']);
    } finally {
      await s.close();
    }
  });
});
