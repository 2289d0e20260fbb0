import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeLlm, FakeStt, FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import type { SttOpenOptions, SttStream } from '../../src/providers/stt.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import type { ConversationFlow } from '../../src/voice/engines/types.ts';
import { MAX_INPUT_LAG_MS, VoicePipeline } from '../../src/voice/pipeline.ts';
import { bargeInThresholdMs } from '../../src/voice/barge-in.ts';
import { TestClock, Recorder, feed, flush, makePipeline, silence, tone, concat } from './harness.ts';

const flow: ConversationFlow = {
  start_node_id: 'greet',
  nodes: [
    {
      id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: 'Hello. Do you want sales or support?' },
      edges: [
        { id: 'e1', destination_node_id: 'sales', transition_condition: { type: 'keyword', keywords: ['sales'] } },
        { id: 'e2', destination_node_id: 'bye', transition_condition: { type: 'keyword', keywords: ['support'] } },
      ],
    },
    { id: 'sales', type: 'conversation', instruction: { type: 'static_text', text: 'Sales it is.' } },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
  ],
};

test('greets, answers a turn, hangs up at an end node; transcript and latency recorded', async () => {
  const clock = new TestClock();
  const stt = new FakeStt(['i need support please']);
  const p = makePipeline({ stt, tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine: new FlowEngine({ flow }) }, clock);
  const rec = new Recorder(p, clock);
  const latencies: unknown[] = [];
  p.on('latency', (l) => latencies.push(l));
  await p.start();
  await feed(p, clock, silence(2000));
  assert.equal(rec.transcript[0]?.role, 'agent');
  assert.equal(rec.transcript[0]?.text, 'Hello. Do you want sales or support?');
  await feed(p, clock, concat(tone(800), silence(1500)));
  assert.equal(rec.hangup?.reason, 'agent_hangup');
  assert.deepEqual(rec.transcript.map((u) => [u.role, u.text]), [
    ['agent', 'Hello. Do you want sales or support?'],
    ['user', 'i need support please'],
    ['agent', 'Goodbye.'],
  ]);
  const user = rec.transcript[1]!;
  assert.ok(user.startMs >= 1900 && user.startMs <= 2100, `user start ${user.startMs}`);
  assert.ok(user.endMs >= 2700 && user.endMs <= 2900, `user end ${user.endMs}`);
  assert.equal(latencies.length, 1);
  const l = latencies[0] as { e2eMs: number; asrMs: number };
  // e2e = endpointing (500 ms) + instant engines, on the lock-step clock.
  assert.ok(l.e2eMs >= 480 && l.e2eMs <= 600, `e2e ${l.e2eMs}`);
  assert.ok(stt.utterances[0]!.samples >= 16000 * 0.8, 'the recogniser got the whole utterance');
  await p.close();
  await p.close();
});

test('barge-in threshold follows interruption sensitivity', () => {
  assert.equal(bargeInThresholdMs(1), 60);
  assert.equal(bargeInThresholdMs(0.5), 280);
  assert.equal(bargeInThresholdMs(0), Number.POSITIVE_INFINITY);
});

test('user speech over the agent cuts the reply off within 200 ms and marks it', async () => {
  const clock = new TestClock();
  const long = 'This is a very long answer that goes on and on. It has several sentences. It keeps talking for a long while.';
  const llm = new FakeLlm([long, 'Sure.']);
  const engine = new LlmEngine({ config: { begin_message: '' }, llm });
  const p = makePipeline({ stt: new FakeStt(['tell me everything', 'stop']), tts: new FakeTts(), vad: new EnergyVad(), engine }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, concat(silence(200), tone(600), silence(1500)));
  assert.ok(rec.agentFrames.length > 0, 'agent is talking');
  const onsetAt = clock.now() + 20; // the next frame is the first frame of user speech
  await feed(p, clock, concat(tone(600), silence(1200)));
  const stop = rec.events.find((e) => e.type === 'agent_stop_talking' && e.atMs >= onsetAt);
  assert.ok(stop, 'agent stopped');
  const during = rec.agentFrames.filter((f) => f.atMs >= onsetAt && f.atMs <= stop.atMs);
  assert.deepEqual(stop.data, { interrupted: true });
  const lastAudio = Math.max(...during.map((f) => f.atMs), onsetAt);
  // Audio sent up to lastAudio covers at most outputLeadMs (80 ms) beyond it.
  assert.ok(lastAudio + 80 - onsetAt <= 200, `agent audio ran ${lastAudio + 80 - onsetAt} ms past onset`);
  const cut = rec.transcript.find((u) => u.role === 'agent' && u.cutOff);
  assert.ok(cut, 'transcript marks the reply as cut off');
  assert.ok(cut.text.length > 0 && cut.text.length < long.length, `heard part: ${cut.text}`);
  assert.equal(rec.transcript.at(-1)?.text, 'Sure.', 'the interrupting turn is answered');
  assert.ok(String(llm.requests[1]?.messages.find((m) => m.role === 'assistant')?.content).includes('[interrupted]'));
  await p.close();
});

test('sensitivity 0: speech over the agent is kept as a backchannel and not answered', async () => {
  const clock = new TestClock();
  const llm = new FakeLlm(['One two three four five six seven eight nine ten eleven twelve thirteen fourteen.']);
  const engine = new LlmEngine({ config: {}, llm });
  const p = makePipeline({ stt: new FakeStt(['uh huh']), tts: new FakeTts(), vad: new EnergyVad(), engine, interruptionSensitivity: 0 }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, concat(silence(600), tone(400), silence(7000)));
  assert.equal(rec.events.filter((e) => e.type === 'agent_stop_talking').length, 1);
  assert.deepEqual(rec.transcript.map((u) => u.role), ['agent', 'user']);
  assert.equal(rec.transcript.filter((u) => u.cutOff).length, 0);
  assert.equal(llm.requests.length, 1, 'the backchannel got no reply');
  await p.close();
});

test('a missing recogniser ends the call with error_asr instead of hanging', async () => {
  const clock = new TestClock();
  const p = makePipeline({ stt: new FakeStt([], { failOpen: true }), tts: new FakeTts(), vad: new EnergyVad(), engine: new FlowEngine({ flow }) }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  assert.deepEqual(rec.errors.map((e) => e.reason), ['error_asr']);
  assert.deepEqual(rec.hangup, { reason: 'error_asr' });
  await p.close();
});

test('an LLM failure ends the call with error_llm', async () => {
  const clock = new TestClock();
  const engine = new LlmEngine({ config: {}, llm: new FakeLlm([]) });
  const p = makePipeline({ stt: new FakeStt(), tts: new FakeTts(), vad: new EnergyVad(), engine }, clock);
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, silence(100));
  assert.deepEqual(rec.hangup, { reason: 'error_llm' });
  await p.close();
});

test('start_speaker user with begin_after_user_silence_ms: the agent begins after the silence', async () => {
  const clock = new TestClock();
  const p = makePipeline(
    { stt: new FakeStt(), tts: new FakeTts({ msPerChar: 10 }), vad: new EnergyVad(), engine: new FlowEngine({ flow }), startSpeaker: 'user', beginAfterUserSilenceMs: 1000 },
    clock,
  );
  const rec = new Recorder(p, clock);
  await p.start();
  await feed(p, clock, silence(900));
  assert.equal(rec.agentFrames.length, 0);
  await feed(p, clock, silence(300));
  assert.ok(rec.agentFrames.length > 0);
  await p.close();
});

test('audio arriving after a gap the caller never sent keeps its place after the agent: the timeline skips the gap', async () => {
  const clock = new TestClock();
  const p = new VoicePipeline({ stt: new FakeStt(['i need support please']), tts: new FakeTts({ msPerChar: 20 }), vad: new EnergyVad(), engine: new FlowEngine({ flow }), scheduler: clock, timers: true });
  const rec = new Recorder(p, clock);
  await p.start();
  // The greeting plays on the call's clock while no audio comes (a stalled tab, a dropped burst).
  for (let t = 0; t < 3_000; t += 20) {
    clock.advance(20);
    await flush();
  }
  assert.equal(rec.transcript[0]?.role, 'agent');
  const atMs = p.pushAudio(silence(20));
  assert.ok(atMs !== undefined && atMs >= 3_000 - MAX_INPUT_LAG_MS && atMs <= 3_000, `the late audio sits at ${atMs} ms`);
  await feed(p, clock, concat(tone(800), silence(1500)));
  assert.deepEqual(rec.transcript.map((u) => [u.role, u.text]), [
    ['agent', 'Hello. Do you want sales or support?'],
    ['user', 'i need support please'],
    ['agent', 'Goodbye.'],
  ]);
  const [greeting, user] = rec.transcript;
  assert.ok(greeting && user);
  assert.ok(user.startMs >= greeting.endMs, `user at ${user.startMs} ms, after the greeting ended at ${greeting.endMs} ms`);
  await p.close();
});

test("the caller's first audio starts where the call's clock is, however soon it comes", async () => {
  const clock = new TestClock();
  const p = new VoicePipeline({ stt: new FakeStt([]), tts: new FakeTts(), vad: new EnergyVad(), engine: new FlowEngine({ flow }), scheduler: clock, timers: true });
  await p.start();
  clock.advance(120);
  assert.equal(p.pushAudio(silence(30)), 120, 'the first chunk sits where the clock is, not at 0');
  clock.advance(100);
  assert.equal(p.pushAudio(silence(20)), 150, 'then the audio follows itself (jitter under 300 ms is not a gap)');
  await p.close();
});

test("audio later than the call's clock by more than maxInputLagMs is placed after a skipped gap; within it, it follows itself (an endpoint that places audio by the sender's timestamps, WebRTC: 1 s)", async () => {
  const placed = async (maxInputLagMs: number | undefined): Promise<number | undefined> => {
    const clock = new TestClock();
    const p = new VoicePipeline({ stt: new FakeStt([]), tts: new FakeTts(), vad: new EnergyVad(), engine: new FlowEngine({ flow }), scheduler: clock, timers: true, ...(maxInputLagMs !== undefined ? { maxInputLagMs } : {}) });
    await p.start();
    p.pushAudio(silence(20));
    clock.advance(520); // a sender or network that stalled half a second, then sends the rest
    const atMs = p.pushAudio(silence(20));
    await p.close();
    return atMs;
  };
  assert.equal(await placed(undefined), 520, `by default (${MAX_INPUT_LAG_MS} ms) the 500 ms behind are a gap the caller never sent`);
  assert.equal(await placed(1_000), 20, 'within the endpoint\'s 1 s the audio is late, not missing: it follows itself');
});

test('a pipeline closed while its recogniser is still opening closes the stream once it has opened, and reports no failure', async () => {
  let opened = 0;
  let closed = 0;
  /** A recogniser whose open takes 100 ms and does not stop for the call's signal (as PocketSphinx's does not). */
  class SlowOpeningStt extends FakeStt {
    override async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const stream = await super.openStream({ ...options, signal: undefined });
      opened += 1;
      return { ...stream, close: async () => {
        closed += 1;
        await stream.close();
      } };
    }
  }
  const p = new VoicePipeline({ stt: new SlowOpeningStt([]), tts: new FakeTts(), vad: new EnergyVad(), engine: new FlowEngine({ flow }) });
  const errors: unknown[] = [];
  p.on('error', (e) => errors.push(e));
  const starting = p.start();
  await p.close(); // the caller left while the call was starting
  await starting;
  assert.equal(opened, 1);
  assert.equal(closed, 1, 'the stream opened after close() is closed, not left holding a decoder');
  assert.deepEqual(errors, []);
});
