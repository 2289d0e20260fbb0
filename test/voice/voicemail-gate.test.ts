// The voicemail gate (src/voice/voicemail-gate.ts) and preemptive replies (issue 24): a reply the
// pipeline prepares for words heard during detection ("Hello?", or a greeting's first sentence),
// before its turn has ended, speaks only when detection decides a person who spoke first; on a
// machine it leaves the one voicemail action to the reply that acts on it.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { EngineOutcome, EngineOutput, ResponseEngine } from '../../src/voice/engines/types.ts';
import { type VoicemailAction, VoicemailGate } from '../../src/voice/voicemail-gate.ts';
import { concat, silence, tone } from './harness.ts';

/** An engine that answers anything at once, and says what it was asked. */
class EchoEngine implements ResponseEngine {
  readonly asked: string[] = [];
  async *begin(): AsyncIterable<EngineOutput> {
    yield { type: 'text', text: 'Hi, this is the clinic calling.' };
  }
  async *respond(text: string): AsyncIterable<EngineOutput> {
    this.asked.push(text);
    yield { type: 'text', text: `You said ${text}` };
  }
  async *unprompted(): AsyncIterable<EngineOutput> {}
  agentSpoke(): void {}
  outcome(): EngineOutcome {
    return {} as EngineOutcome;
  }
}

async function collect(outputs: AsyncIterable<EngineOutput>): Promise<EngineOutput[]> {
  const out: EngineOutput[] = [];
  for await (const o of outputs) out.push(o);
  return out;
}

function gateFor(startSpeaker: 'agent' | 'user', action: VoicemailAction = { type: 'static_text', text: 'Please call us back.' }) {
  let machines = 0;
  const gate = new VoicemailGate({ timeoutMs: 30_000, action, startSpeaker, onMachine: () => (machines += 1), lastUserStartMs: () => undefined, elapsedMs: () => 0 });
  return { gate, machines: () => machines };
}

/** Feeds 16 kHz audio in 20 ms pieces, as the pipeline does. */
function feed(gate: VoicemailGate, pcm: Int16Array): void {
  for (let at = 0; at < pcm.length; at += 320) gate.audio(pcm.subarray(at, at + 320));
}

/** "Hello?" and a pause: a person (a short first utterance, then HUMAN_PAUSE_MS of quiet). */
const hello = () => concat(tone(600), silence(1_000));
/** The reply the pipeline prepares while the caller pauses: its turn is not confirmed yet. */
const prepared = () => ({ confirmed: new Promise<void>(() => {}) });

describe('preemptive replies during voicemail detection', () => {
  it('a person the agent greets first: the reply prepared for "Hello?" says nothing (the opening answers it); the opening plays', async () => {
    const { gate } = gateFor('agent');
    const engine = new EchoEngine();
    const wrapped = gate.wrap(engine);
    const ctrl = new AbortController();
    const speculation = collect(wrapped.respond('Hello?', ctrl.signal, prepared()));
    feed(gate, hello());
    assert.equal(gate.inVoicemail, false, 'a person');
    assert.deepEqual(await speculation, []);
    assert.deepEqual(engine.asked, [], 'the engine was not asked to answer the "Hello?"');
    assert.deepEqual(await collect(wrapped.begin(ctrl.signal)), [{ type: 'text', text: 'Hi, this is the clinic calling.' }]);
  });

  it('a machine: a prepared reply yields nothing, and the voicemail message is still left once (by the reply that acts on the machine)', async () => {
    const { gate, machines } = gateFor('agent');
    const engine = new EchoEngine();
    const wrapped = gate.wrap(engine);
    const speculationCtrl = new AbortController();
    const speculation = collect(wrapped.respond("Hi, you've reached Sam.", speculationCtrl.signal, prepared()));
    feed(gate, tone(800));
    gate.heard("hi you've reached sam please leave a message after the tone");
    assert.equal(gate.inVoicemail, true);
    assert.equal(machines(), 1);
    assert.deepEqual(await speculation, [], 'nothing prepared during detection speaks on a machine');
    // The greeting goes on: the prepared reply is thrown away, as the pipeline does.
    speculationCtrl.abort();
    // The reply the machine's decision starts: the message once the greeting has ended, then the hang-up.
    const acting = collect(wrapped.unprompted!(new AbortController().signal));
    feed(gate, silence(1_600));
    assert.deepEqual(await acting, [{ type: 'text', text: 'Please call us back.' }, { type: 'hangup', reason: 'voicemail_reached' }]);
    assert.deepEqual(engine.asked, []);
  });

  it('a person who speaks first: the reply prepared for their words answers them once a person is decided', async () => {
    const { gate } = gateFor('user');
    const engine = new EchoEngine();
    const wrapped = gate.wrap(engine);
    const speculation = collect(wrapped.respond('Hello?', new AbortController().signal, prepared()));
    feed(gate, hello());
    assert.deepEqual(await speculation, [{ type: 'text', text: 'You said Hello?' }]);
  });
});
