// Barge-in over WebRTC (issue 23): the agent's RTP stops within the WebSocket's bound after the
// caller cuts in (sent audio cannot be recalled, so the server sends at most 40 ms ahead), and the
// transcript keeps what the caller heard: the frames its jitter buffer has played
// (playout-position.ts), not what was sent. The Node client joins over real UDP on loopback (werift on both sides), with fvad and Flite.
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { WebCallClient } from '../../src/client/web-call-client.ts';
import { PLAYOUT_BASE_DELAY_MS, PLAYOUT_MAX_DELAY_MS, PlayoutPosition, playoutDelayMs } from '../../src/media/webrtc/playout-position.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { FvadProvider } from '../../src/providers/vad/fvad.ts';
import { concat, fakeProviders, silence, startMediaServer } from './helpers.ts';

describe('the caller\'s played position over WebRTC', () => {
  it('a frame counts once the jitter buffer has played it: sent time plus the delay, in order', () => {
    const p = new PlayoutPosition();
    // Two frames at once (the pacer's lead), then one per 20 ms.
    p.sent(1_000, 20, 60);
    p.sent(1_000, 20, 60);
    p.sent(1_020, 20, 60);
    assert.equal(p.heardMs(1_000), 0, 'nothing is heard when it is sent');
    assert.equal(p.heardMs(1_059), 0);
    assert.equal(p.heardMs(1_070), 10);
    assert.equal(p.heardMs(1_100), 40, 'the second frame plays after the first, not with it');
    assert.equal(p.heardMs(1_200), 60, 'never more than was sent');
    // An underrun: the next frame, sent late, starts its own run after the delay.
    p.sent(1_300, 20, 60);
    assert.equal(p.heardMs(1_350), 60);
    assert.equal(p.heardMs(1_370), 70);
    assert.equal(p.heardMs(2_000), 80);
    p.reset();
    assert.equal(p.heardMs(2_000), 0, 'a new reply starts from nothing');
  });

  it('the delay grows with the jitter the caller reports, within its bound', () => {
    assert.equal(playoutDelayMs(null), PLAYOUT_BASE_DELAY_MS);
    assert.equal(playoutDelayMs(10), PLAYOUT_BASE_DELAY_MS + 20);
    assert.equal(playoutDelayMs(-5), PLAYOUT_BASE_DELAY_MS);
    assert.equal(playoutDelayMs(10_000), PLAYOUT_MAX_DELAY_MS);
  });
});

const flite = new FliteTts();
after(() => flite.close());

async function speech(text: string): Promise<Int16Array> {
  const parts: Int16Array[] = [];
  for await (const c of flite.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  return concat(...parts);
}

const MS_PER_CHAR = 40;
const LONG = 'Let me tell you about every one of our plans, one by one, in great detail. '.repeat(4).trim();
const SENTENCE = LONG.slice(0, LONG.indexOf('.') + 1);
/** Words the transcript keeps of LONG cut off after `ms` of it played: whole sentences, then the played share of the next (voice/reply.ts). */
function wordsHeardAt(ms: number): number {
  const sentenceMs = SENTENCE.length * MS_PER_CHAR;
  const words = SENTENCE.split(' ').length;
  const whole = Math.floor(Math.max(0, ms) / sentenceMs);
  return whole * words + Math.max(1, Math.floor((words * (Math.max(0, ms) % sentenceMs)) / sentenceMs));
}
const talker = { start_node_id: 'talk', nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: LONG } }] };

describe('barge-in over WebRTC', () => {
  it('the caller talks over the agent: its RTP stops within 200 ms of the speech onset, and the transcript keeps what was heard', { timeout: 60_000 }, async (t) => {
    const base = fakeProviders(['wait a moment please'], { msPerChar: MS_PER_CHAR });
    const s = await startMediaServer('sqlite', { providers: { ...base, vad: new FvadProvider() }, env: { RTC_BIND_ADDRESS: '127.0.0.1', RTC_ICE_TCP: 'false' } });
    try {
      const user = await speech('wait a moment please');
      let onsetFrame = 0;
      for (let i = 0; i + 320 <= user.length; i += 320, onsetFrame++) {
        let e = 0;
        for (const x of user.subarray(i, i + 320)) e += x * x;
        if (Math.sqrt(e / 320) > 300) break;
      }
      const created = await s.api('POST', '/v2/create-web-call', { agent_id: await s.flowAgent(talker) });
      const client = await WebCallClient.join({ url: s.baseUrl, accessToken: created.json.access_token, transport: 'webrtc', iceAddress: '127.0.0.1', timeoutMs: 15_000 });
      const talking = await client.waitFor('agent_start_talking', 10_000);
      // The caller sends silence while it listens (as a microphone does), then cuts in a second and a half in.
      await client.play(silence(1_500));
      const playAt = client.now();
      const onsetAt = playAt + onsetFrame * 20;
      await client.play(concat(user, silence(1_200)));
      const clear = await client.waitFor('clear', 3_000);
      const stop = await client.waitFor('agent_stop_talking', 3_000);
      assert.equal(stop['cut_off'], true);
      // The agent's RTP as it arrived (the Node client has no jitter buffer): the last packet of the
      // reply. A receiver plays a steady stream at its jitter buffer's delay after arrival (a lead
      // sent ahead is absorbed into that buffer), so the caller's ear stops that much later.
      const heard = client.agentAudio.filter((a) => a.atMs >= talking.atMs - 5 && a.atMs <= stop.atMs + 50);
      const receivedMs = heard.reduce((n, a) => n + a.pcm.length, 0) / 16;
      const stoppedAfter = Math.max(...heard.map((a) => a.atMs)) - onsetAt;
      t.diagnostic(`the agent's RTP stopped ${Math.round(stoppedAfter)} ms after the caller's speech onset (clear at ${Math.round(clear.atMs - onsetAt)} ms)`);
      // The WebSocket's bound as its client sees it (test/media/faults.test.ts): 200 ms. A browser's ear
      // hears the last of it its jitter buffer's delay later (about PLAYOUT_BASE_DELAY_MS).
      assert.ok(stoppedAfter <= 200, `the agent's RTP went on ${Math.round(stoppedAfter)} ms after the caller's speech began`);
      assert.equal(client.agentAudio.filter((a) => a.atMs > stop.atMs + 50 && a.atMs < stop.atMs + 500).length, 0, 'no agent audio after the cut-in');
      await client.waitFor((e) => e.type === 'update' && (e['transcript'] as Array<{ role: string }>).some((u) => u.role === 'user'), 10_000);
      await client.hangup();
      const call = (await s.api('GET', `/v2/get-call/${client.callId}`)).json;
      const said = call.transcript_object[0] as { role: string; content: string; cut_off: boolean };
      assert.equal(said.role, 'agent');
      assert.equal(said.cut_off, true);
      assert.ok(LONG.startsWith(said.content.replace(/\.$/, '')), `what was kept is the start of the reply: ${said.content}`);
      // Heard, not sent: the words kept are at most what the caller's jitter buffer had played by the
      // cut-in (the audio received less the playout delay).
      const kept = said.content.split(/\s+/).length;
      t.diagnostic(`received ${Math.round(receivedMs)} ms of the reply; the transcript keeps ${kept} words, ${wordsHeardAt(receivedMs - PLAYOUT_BASE_DELAY_MS)} played by then`);
      assert.ok(kept <= wordsHeardAt(receivedMs - PLAYOUT_BASE_DELAY_MS + 20), `kept ${kept} words: ${said.content}`);
      // Not far short: a burst sent after the server's event loop stalled counts as played in sequence,
      // so a loaded machine keeps less than arrived, never more.
      assert.ok(kept >= wordsHeardAt(receivedMs - 1_200), `kept ${kept} words: ${said.content}`);
    } finally {
      await s.close();
    }
  });
});
