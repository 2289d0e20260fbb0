// A call whose caller audio is telephone-band, on the embedded recogniser, says so in the log and
// points to a hosted recogniser; wideband audio logs nothing of the kind.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createResampler } from '../../src/providers/audio/resample.ts';
import { FakeStt } from '../../src/providers/fake/fake.providers.ts';
import { pocketsphinxCapabilities } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { capturingLogger, concat, fakeProviders, silence, startMediaServer } from './helpers.ts';

const flow = {
  start_node_id: 'talk',
  nodes: [{ id: 'talk', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' }, edges: [] }],
};

function wideSpeech(ms: number): Int16Array {
  const n = Math.round((ms * 16000) / 1000);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) out[i] = Math.round(8000 * Math.sin((2 * Math.PI * 300 * i) / 16000) + 800 * Math.sin((2 * Math.PI * 6000 * i) / 16000));
  return out;
}

async function telephone(pcm: Int16Array): Promise<Int16Array> {
  const down = await createResampler(16000, 8000);
  const up = await createResampler(8000, 16000);
  const out = up.process(down.process(pcm));
  down.close();
  up.close();
  return out;
}

describe('telephone-band caller audio in the call log', () => {
  for (const [name, audio, warned] of [
    ['telephone-band', () => telephone(wideSpeech(2600)), true],
    ['wideband', async () => wideSpeech(2600), false],
  ] as const) {
    it(`${name} audio on the embedded recogniser: ${warned ? 'a warning that names a hosted recogniser' : 'no warning'}`, async () => {
      const fake = new FakeStt(['hello']);
      // The embedded recogniser as the session sees it (its id and capabilities), answering from a script.
      const stt = { id: 'pocketsphinx', capabilities: pocketsphinxCapabilities('library'), languages: () => fake.languages(), openStream: fake.openStream.bind(fake) };
      const { logger, lines } = capturingLogger();
      const s = await startMediaServer('sqlite', { providers: { ...fakeProviders([]), stt }, logger });
      try {
        const client = await s.call(await s.flowAgent(flow));
        await client.waitFor('agent_stop_talking', 5_000);
        await client.play(concat(await audio(), silence(800)));
        await client.waitFor((e) => e.type === 'update' && e.transcript.some((u) => u.role === 'user'), 5_000);
        await client.hangup();
        const warning = lines.find((l) => String(l['msg']).startsWith('caller audio is telephone-band'));
        if (!warned) return assert.equal(warning, undefined);
        assert.ok(warning, 'the log says the audio is telephone-band');
        assert.match(String(warning['msg']), /STT_PROVIDER=deepgram or openai/);
        assert.equal(warning['band'], 'narrow');
      } finally {
        await s.close();
      }
    });
  }
});
