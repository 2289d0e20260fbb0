/**
 * Backchannels in a real call (issue 26): a caller's long sentence spoken by Flite, played in real
 * time into a call on the loopback transport with the real fvad and the agent's Flite voice. The
 * agent's backchannel is in the recording's agent channel while the caller speaks, the transcript
 * has the caller's turn and the answer only, and the turn is answered once, nothing cut off.
 * (When off, and the rule itself: test/voice/backchannel.test.ts, on the lock-step harness.)
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { FvadProvider } from '../../src/providers/vad/fvad.ts';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import type { LoopbackTransport } from '../../src/media/loopback/loopback.transport.ts';
import type { Providers } from '../../src/providers/registry.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, silence, startMediaServer } from './helpers.ts';

const CALLER = 'I have been a customer of yours for many years, and last week I ordered a new laptop from your store.';
const FLOW = {
  start_speaker: 'user',
  start_node_id: 'listen',
  nodes: [
    {
      id: 'listen', type: 'conversation', instruction: { type: 'static_text', text: 'Hello.' },
      edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['laptop'] } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'I see. Goodbye.' } },
  ],
};

/** The left (caller) and right (agent) channels of a 16-bit stereo WAV. */
function channels(wav: Buffer): [Int16Array, Int16Array] {
  const samples = new Int16Array(wav.buffer.slice(wav.byteOffset + 44, wav.byteOffset + wav.length - ((wav.length - 44) % 4)));
  const left = new Int16Array(samples.length / 2);
  const right = new Int16Array(samples.length / 2);
  for (let i = 0; i < left.length; i++) {
    left[i] = samples[2 * i]!;
    right[i] = samples[2 * i + 1]!;
  }
  return [left, right];
}

const loud = (v: number, floor: number) => v > floor || v < -floor;

// One store: what is under test is the audio path; the recording stores are tested on both elsewhere
// (test/media/call-recorder.test.ts), and a real-time call is 10 s of the suite's time.
for (const kind of STORES.slice(0, 1)) {
  describe(`backchannels in a call on the loopback transport (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    const flite = new FliteTts();
    const stt = new FakeStt([]);
    let caller: Int16Array;
    before(async () => {
      const providers: Providers = { llm: undefined, stt, tts: flite, vad: new FvadProvider(), async close() {} };
      s = await startMediaServer(kind.name, { providers });
      const parts: Int16Array[] = [];
      for await (const c of flite.synthesize(CALLER, { voiceId: 'flite-kal16' })) parts.push(c);
      caller = concat(...parts);
    });
    after(async () => {
      await s.close();
      await flite.close();
    });

    it("says a backchannel in the caller's long turn: in the recording, not in the transcript, the turn unchanged", { timeout: 30_000 }, async () => {
      const agentId = await s.flowAgent(FLOW, { enable_backchannel: true, backchannel_words: ['uh-huh'] });
      const loopback = s.app.transports.get('loopback') as LoopbackTransport;
      const { endpoint, session } = await loopback.admit({ accountId: s.accountId, agent_id: agentId, callType: 'web_call', concurrencyLimit: null });
      stt.push(CALLER.toLowerCase());
      endpoint.play(concat(silence(300), caller, silence(2500)));
      assert.deepEqual(await endpoint.ended, { reason: 'agent_hangup', status: 'ended' });
      const call = (await s.api('GET', `/v2/get-call/${session.callId}`)).json;
      assert.deepEqual(
        (call.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`),
        [`user: ${CALLER.toLowerCase()}`, 'agent: I see. Goodbye.'],
        'one turn, answered once; the backchannel is not in the transcript',
      );
      assert.equal(endpoint.events.filter((e) => e.type === 'agent_talking').length, 1, 'the backchannel is no reply');
      assert.equal(endpoint.events.some((e) => e.type === 'agent_done' && e.cutOff), false, 'nothing was cut off');

      const [user, agent] = channels((await s.api('GET', `/v2/get-call-recording/${session.callId}`)).bytes);
      const userFrom = user.findIndex((v) => loud(v, 1000));
      const userTo = user.findLastIndex((v) => loud(v, 1000));
      const replyFrom = agent.findIndex((v, i) => i > userTo && loud(v, 300));
      const during = agent.subarray(userFrom, userTo).filter((v) => loud(v, 300)).length;
      assert.ok(userFrom > 0 && replyFrom > userTo, `the caller ${userFrom}-${userTo}, the reply from ${replyFrom}`);
      // 'uh-huh' is about 0.6 s of Flite speech: a good part of it is loud.
      assert.ok(during > 16 * 150, `the agent's channel while the caller spoke: ${during} loud samples`);
    });
  });
}
