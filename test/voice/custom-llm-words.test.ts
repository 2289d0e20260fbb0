/**
 * Word times on the custom-LLM socket (issue 26): the recogniser's words reach the engine with
 * the turn (RespondOptions.words, ms on the call's timeline) and go out in the transcript's user
 * entries as Retell's `words` (`{word, start, end}`, seconds); entries without times keep `[]`.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import { EnergyVad, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import type { SttProvider, SttStream } from '../../src/providers/stt.ts';
import { CustomLlmEngine, type LlmSocketHandlers } from '../../src/voice/engines/custom-llm.engine.ts';
import type { EngineOutput, ResponseEngine, RespondOptions } from '../../src/voice/engines/types.ts';
import { TestClock, concat, feed, makePipeline, silence, tone } from './harness.ts';

const tick = () => new Promise((r) => setImmediate(r));

test('the custom-LLM socket sends the user\'s word times in seconds; a turn merged from fragments has all of them, or none when a fragment had none', async () => {
  let handlers: LlmSocketHandlers | undefined;
  const sent: Array<Record<string, unknown>> = [];
  const open = async (_url: string, h: LlmSocketHandlers) => ((handlers = h), { send: (t: string) => void sent.push(JSON.parse(t) as Record<string, unknown>), close: () => {} });
  const engine = new CustomLlmEngine({ url: 'ws://x/llm', callId: 'call_w', open, callDetails: () => ({}), onFailure: (r) => assert.fail(`failed: ${r}`), scheduler: new ManualScheduler() });
  const drain = async (outputs: AsyncIterable<EngineOutput>): Promise<void> => {
    for await (const o of outputs) void o;
  };
  const asked = () => sent.filter((m) => m['interaction_type'] === 'response_required').at(-1) as { response_id: number; transcript: Array<{ role: string; content: string; words: unknown }> };

  const begun = drain(engine.begin(new AbortController().signal));
  await tick();
  handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: 0, content: '', content_complete: true }));
  await begun;
  const ctrl = new AbortController();
  const first = drain(engine.respond('hello there', ctrl.signal, { words: [{ word: 'hello', startMs: 1060, endMs: 1360.4 }, { word: 'there', startMs: 1360, endMs: 1760 }] }));
  await tick();
  assert.deepEqual(asked().transcript, [{ role: 'user', content: 'hello there', words: [{ word: 'hello', start: 1.06, end: 1.36 }, { word: 'there', start: 1.36, end: 1.76 }] }]);
  // The user goes on before any answer was heard: one turn, its words joined.
  ctrl.abort();
  await first.catch(() => {});
  const ctrl2 = new AbortController();
  const second = drain(engine.respond('again', ctrl2.signal, { words: [{ word: 'again', startMs: 2500, endMs: 2900 }] }));
  await tick();
  assert.deepEqual(asked().transcript, [{ role: 'user', content: 'hello there again', words: [{ word: 'hello', start: 1.06, end: 1.36 }, { word: 'there', start: 1.36, end: 1.76 }, { word: 'again', start: 2.5, end: 2.9 }] }]);
  handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: asked().response_id, content: 'Hi.', content_complete: true }));
  await second;
  engine.agentSpoke('Hi.', false);
  const ctrl3 = new AbortController();
  const third = drain(engine.respond('yes', ctrl3.signal));
  await tick();
  assert.deepEqual(asked().transcript.map((u) => u.words), [[{ word: 'hello', start: 1.06, end: 1.36 }, { word: 'there', start: 1.36, end: 1.76 }, { word: 'again', start: 2.5, end: 2.9 }], [], []], 'the agent\'s entry and a turn without times: []');
  ctrl3.abort();
  await third.catch(() => {});
  engine.close();
});

test('the pipeline hands the recogniser\'s words, on the call\'s timeline, to the engine with the turn', async () => {
  const stt: SttProvider = {
    id: 'timed',
    languages: () => ['en-US'],
    async openStream(): Promise<SttStream> {
      return { write() {}, finalize: async () => ({ text: 'hello there', words: [{ word: 'hello', startMs: 200, endMs: 500 }, { word: 'there', startMs: 500, endMs: 900 }] }), close: async () => {} };
    },
  };
  const given: Array<RespondOptions['words']> = [];
  const engine: ResponseEngine = {
    async *begin() {},
    async *respond(_text: string, _signal: AbortSignal, options?: RespondOptions) {
      given.push(options?.words);
      yield { type: 'text', text: 'Hi.' };
    },
    agentSpoke() {},
    outcome: () => ({ reachedEnd: false, variables: {}, names: [] }),
  };
  const clock = new TestClock();
  const p = makePipeline({ stt, tts: new FakeTts(), vad: new EnergyVad(), engine, startSpeaker: 'user' }, clock);
  await p.start();
  await feed(p, clock, concat(silence(1000), tone(800), silence(1500)));
  await p.close();
  // As in word-times.test.ts: the utterance's audio (its pre-roll first) starts at 860 ms.
  assert.deepEqual(given, [[{ word: 'hello', startMs: 1060, endMs: 1360 }, { word: 'there', startMs: 1360, endMs: 1760 }]]);
});
