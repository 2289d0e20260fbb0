// A caller's first words, sent as soon as the call has started, while the call's recogniser is
// still opening (a real one loads its model): the session takes the caller's audio from the moment
// its pipeline exists, which queues it, so nothing said after `call_started` is dropped.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import type { SttOpenOptions, SttStream } from '../../src/providers/stt.ts';
import { STORES } from '../helpers/stores.ts';
import { type MediaServer, concat, eventually, fakeProviders, rawJoin, silence, startMediaServer, tone } from './helpers.ts';

/** How long the recogniser takes to open, ms: more than the caller's first word. */
const OPEN_MS = 600;

/** A scripted recogniser that takes OPEN_MS to open a stream. */
class SlowOpeningStt extends FakeStt {
  override async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    await new Promise((resolve) => setTimeout(resolve, OPEN_MS));
    return super.openStream(options);
  }
}

// One store: what is tested is the call's media.
for (const kind of STORES.slice(0, 1)) {
  describe(`a caller's first words (${kind.name})`, { skip: kind.skip }, () => {
    let s: MediaServer;
    before(async () => {
      const providers = { ...fakeProviders([]), stt: new SlowOpeningStt(['hello']) };
      s = await startMediaServer(kind.name, { providers });
    });
    after(async () => {
      await s.close();
    });

    it('said at once after call_started, while the recogniser opens, are heard', { timeout: 20_000 }, async () => {
      const agentId = await s.flowAgent({
        start_node_id: 'n',
        start_speaker: 'user',
        nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hi there.' } }],
      });
      const created = (await s.api('POST', '/v2/create-web-call', { agent_id: agentId })).json as { call_id: string; access_token: string };
      const client = await rawJoin(s.baseUrl, created.access_token);
      // 500 ms of "speech" (to the energy VAD), then silence for the end of the turn: 20 ms frames at real time.
      const audio = concat(tone(500), silence(1_200));
      const frame = 320;
      const start = performance.now();
      for (let at = 0, n = 0; at < audio.length; at += frame, n += 1) {
        client.ws.send(Buffer.from(audio.slice(at, at + frame).buffer));
        await new Promise((r) => setTimeout(r, Math.max(0, start + (n + 1) * 20 - performance.now())));
      }
      await eventually(() => client.events.some((e) => e.type === 'agent_stop_talking'), 5_000);
      client.ws.send(JSON.stringify({ type: 'hangup' }));
      await client.closed;
      const call = (await s.api('GET', `/v2/get-call/${created.call_id}`)).json as { transcript_object: Array<{ role: string; content: string }> };
      assert.deepEqual(
        call.transcript_object.map((u) => `${u.role}: ${u.content}`),
        ['user: hello', 'agent: Hi there.'],
      );
    });
  });
}
