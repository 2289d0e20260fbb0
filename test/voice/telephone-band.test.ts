// Issue 24, item 6: a call's pipeline at the telephone band (sampleRateHz 8000, what a G.711 or
// Twilio endpoint declares). The caller's 8 kHz audio is cut into 160-sample frames and placed on
// the timeline at 8 kHz; the recogniser is opened at 8 kHz where it decodes it (a Deepgram-speaking
// local server is told `sample_rate=8000` and sent 8 kHz bytes), and only a recogniser that states
// 16 kHz alone is handed a resampled copy; the agent's voice comes out in 8 kHz frames.
import assert from 'node:assert/strict';
import type { AddressInfo } from 'node:net';
import { before, test } from 'node:test';
import { WebSocketServer } from 'ws';
import { loadResampler } from '../../src/providers/audio/resample.ts';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';
import { EnergyVad, FakeStt, FakeTts, fakeSttCapabilities } from '../../src/providers/fake/fake.providers.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import type { ConversationFlow } from '../../src/voice/engines/types.ts';
import { TestClock, Recorder, flush, makePipeline } from './harness.ts';
import type { VoicePipeline } from '../../src/voice/pipeline.ts';

const flow: ConversationFlow = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Sales or support?' },
      edges: [{ id: 'e', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['support'] } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
  ],
};

// The agent's voice is resampled to 8 kHz by the Speex WASM module, compiled on first use. The
// lock-step clock below does not wait for that compile: on a busy machine the greeting would still
// be unsent when the caller's turn starts, and be cut off. Loaded first, as a server's start does.
before(() => loadResampler());

const tone8k = (ms: number) => Int16Array.from({ length: ms * 8 }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 8000)));
const silence8k = (ms: number) => new Int16Array(ms * 8);

/** Feeds 8 kHz audio in 20 ms pieces (160 samples) on the lock-step clock. */
async function feed8k(p: VoicePipeline, clock: TestClock, pcm: Int16Array): Promise<void> {
  for (let o = 0; o < pcm.length; o += 160) {
    clock.advance(20);
    p.pushAudio(pcm.subarray(o, o + 160));
    await flush();
    await flush();
  }
}

test('at 8 kHz: 160-sample frames timed at 8 kHz, the recogniser opened at 8 kHz and given the audio as it came, the voice in 8 kHz frames', async () => {
  const clock = new TestClock();
  const stt = new FakeStt(['support please']);
  const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine: new FlowEngine({ flow }), sampleRateHz: 8000 }, clock);
  const rec = new Recorder(p, clock);
  const agentFrames: number[] = [];
  p.on('agent_audio', (pcm) => agentFrames.push(pcm.length));
  await p.start();
  await feed8k(p, clock, silence8k(2000));
  await feed8k(p, clock, tone8k(800));
  await feed8k(p, clock, silence8k(1500));
  assert.equal(rec.hangup?.reason, 'agent_hangup');
  assert.deepEqual(rec.transcript.map((u) => [u.role, u.text]), [['agent', 'Sales or support?'], ['user', 'support please'], ['agent', 'Goodbye.']]);
  const user = rec.transcript[1]!;
  assert.ok(user.startMs >= 1900 && user.startMs <= 2100, `user start ${user.startMs}: 8 kHz frames are 20 ms each`);
  assert.ok(user.endMs >= 2700 && user.endMs <= 2900, `user end ${user.endMs}`);
  assert.equal(stt.opened[0]?.sampleRateHz, 8000);
  assert.equal(stt.opened[0]?.sourceSampleRateHz, undefined, 'given the audio as it came: no other rate to state');
  const heard = stt.utterances[0]!.samples;
  assert.ok(heard >= 8000 * 0.8 && heard < 16000 * 0.8, `${heard} samples: the utterance at 8 kHz`);
  assert.ok(agentFrames.length > 10);
  assert.deepEqual([...new Set(agentFrames)], [160], "the agent's voice in 20 ms frames at 8 kHz");
  await p.close();
});

test('at 8 kHz, a recogniser that states 16 kHz only is handed a resampled copy (its input alone), and told it came at 8 kHz', async () => {
  const clock = new TestClock();
  const stt = new FakeStt(['support please']);
  Object.defineProperty(stt, 'capabilities', { value: { ...fakeSttCapabilities(), inputSampleRates: [16_000] } });
  const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine: new FlowEngine({ flow }), sampleRateHz: 8000 }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed8k(p, clock, silence8k(2000));
  await feed8k(p, clock, tone8k(800));
  await feed8k(p, clock, silence8k(1500));
  assert.equal(rec.transcript[1]?.text, 'support please');
  assert.equal(stt.opened[0]?.sampleRateHz, undefined, 'opened at its own 16 kHz');
  assert.equal(stt.opened[0]?.sourceSampleRateHz, 8000, 'told its copy came at 8 kHz');
  const heard = stt.utterances[0]!.samples;
  assert.ok(heard >= 16000 * 0.8, `${heard} samples: the utterance at 16 kHz`);
  await p.close();
});

test('at 8 kHz, a Deepgram-speaking server is told sample_rate=8000 and sent 8 kHz audio', async () => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const seen = { query: '', bytes: 0 };
  wss.on('connection', (ws, req) => {
    seen.query = String(req.url);
    ws.on('message', (data, isBinary) => {
      if (isBinary) {
        seen.bytes += (data as Buffer).length;
        return;
      }
      const m = JSON.parse((data as Buffer).toString('utf8')) as { type: string };
      if (m.type === 'Finalize') ws.send(JSON.stringify({ type: 'Results', is_final: true, speech_final: true, from_finalize: true, channel: { alternatives: [{ transcript: 'support please' }] } }));
    });
  });
  try {
    const clock = new TestClock();
    const stt = new DeepgramStt({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/listen`, apiKey: 'k' });
    const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine: new FlowEngine({ flow }), sampleRateHz: 8000 }, clock);
    const rec = new Recorder(p, clock);
    await p.start();
    await feed8k(p, clock, silence8k(2000));
    await feed8k(p, clock, tone8k(800));
    await feed8k(p, clock, silence8k(1500));
    for (let i = 0; i < 50 && rec.transcript.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
    assert.equal(rec.transcript[1]?.text, 'support please');
    const query = new URLSearchParams(seen.query.split('?')[1]);
    assert.deepEqual({ encoding: query.get('encoding'), sample_rate: query.get('sample_rate') }, { encoding: 'linear16', sample_rate: '8000' });
    // The utterance's audio (its preroll, 800 ms of speech, the silence to the end of the turn) as 8 kHz bytes: 16 per ms.
    assert.ok(seen.bytes >= 800 * 16 && seen.bytes < 800 * 32, `${seen.bytes} bytes`);
    await p.close();
  } finally {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
});

test('a recogniser that hears phone calls better through its wideband decoder (telephoneRate 16000, PocketSphinx) is given a 16 kHz copy; one that states 8000 the audio as it came', async () => {
  const { decodesNatively } = await import('../../src/voice/call-rate.ts');
  const { pocketsphinxCapabilities } = await import('../../src/providers/pocketsphinx/pocketsphinx.stt.ts');
  const stated = (capabilities: NonNullable<FakeStt['capabilities']>) => Object.defineProperty(new FakeStt([]), 'capabilities', { value: capabilities });
  assert.equal(decodesNatively(stated(pocketsphinxCapabilities('library')), 8000), false, 'PocketSphinx: the wideband copy');
  assert.equal(decodesNatively(stated({ ...pocketsphinxCapabilities('library'), telephoneRate: 8000 }), 8000), true, 'its narrowband decoder when asked');
  assert.equal(decodesNatively(stated(fakeSttCapabilities()), 8000), true, "'any': told the rate");
  assert.equal(decodesNatively(stated({ ...fakeSttCapabilities(), inputSampleRates: [16_000] }), 8000), false);
});
