// The turn's reference material has its own latency figure: the time an engine's context source
// took (src/voice/engines/context.ts) reaches the turn's latency record as `contextMs`, and the
// call's latency report as `knowledge_base`; with no source configured, neither appears.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EnergyVad, FakeLlm, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import type { TurnContext, TurnContextSource } from '../../src/voice/engines/context.ts';
import { latencyReport, type TurnLatency } from '../../src/voice/latency.ts';
import { TestClock, concat, feed, makePipeline, silence, tone } from './harness.ts';

/** A source that takes `ms` of the pipeline's clock to find one passage. */
function slowSource(clock: TestClock, ms: number): TurnContextSource {
  return {
    async contextFor(): Promise<TurnContext> {
      clock.advance(ms);
      return { passages: [{ text: 'Opening hours: 9 to 5.' }] };
    },
  };
}

async function oneTurn(contextSource: TurnContextSource | undefined, clock: TestClock): Promise<TurnLatency[]> {
  const engine = new LlmEngine({ config: { begin_message: '' }, llm: new FakeLlm(['We open at nine.']), now: clock.now, ...(contextSource ? { contextSource } : {}) });
  const p = makePipeline({ stt: new FakeStt(['when do you open']), tts: new FakeTts(), vad: new EnergyVad(), engine }, clock);
  const latencies: TurnLatency[] = [];
  p.on('latency', (l) => latencies.push(l));
  await p.start();
  await feed(p, clock, concat(silence(200), tone(500), silence(2_000)));
  await p.close();
  return latencies;
}

test('the context source time is the turn latency contextMs and the report knowledge_base; absent without a source', async () => {
  const clock = new TestClock();
  const timed = await oneTurn(slowSource(clock, 35), clock);
  assert.equal(timed.length, 1);
  assert.equal(timed[0]!.contextMs, 35);
  assert.ok(timed[0]!.llmMs >= 35, 'the context time is part of the time to the first text');
  assert.deepEqual(latencyReport(timed).knowledge_base?.values, [35]);

  const plain = await oneTurn(undefined, new TestClock());
  assert.equal(plain.length, 1);
  assert.equal(plain[0]!.contextMs, undefined);
  assert.equal('knowledge_base' in latencyReport(plain), false);
});
