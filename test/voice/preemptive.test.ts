// Preemptive replies (src/voice/pipeline.ts, VoicePipelineOptions.preemptive), in lock-step with a
// streaming recogniser: the reply is prepared during the user's pause and plays as soon as the turn
// is confirmed; a user who goes on, or a final transcript that differs from the interim one, throws
// it away, rolls the engine back, and side effects (custom functions) run only for the real turn.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { EnergyVad, FakeLlm, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import type { SttOpenOptions, SttStream } from '../../src/providers/stt.ts';
import type { TtsOptions } from '../../src/providers/tts.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { LlmEngine } from '../../src/voice/engines/llm.engine.ts';
import type { ConversationFlow, FlowTools, FunctionCaller, FunctionOutcome, ResponseEngine } from '../../src/voice/engines/types.ts';
import type { CustomFunction } from '../../src/domain/custom-function.ts';
import type { ChatRequest } from '../../src/providers/llm.ts';
import { Recorder, TestClock, WordStt, concat, feed, makePipeline, silence, tone } from './harness.ts';
import type { KnowledgePassage } from '../../src/domain/knowledge-base.ts';
import { knowledgeContextSource } from '../../src/media/knowledge-context.ts';
import { RetrievalRecord } from '../../src/media/retrieval-record.ts';

/** A synthesiser that needs `delayMs` of the test clock before its first audio, as a real one needs time. */
class SlowTts extends FakeTts {
  readonly #clock: TestClock;
  readonly #delayMs: number;
  constructor(clock: TestClock, delayMs: number) {
    super({ msPerChar: 20 });
    this.#clock = clock;
    this.#delayMs = delayMs;
  }
  override async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    const until = this.#clock.t + this.#delayMs;
    while (this.#clock.t < until) {
      options.signal?.throwIfAborted();
      await new Promise((r) => setImmediate(r));
    }
    yield* super.synthesize(text, options);
  }
}

/** A streaming recogniser whose final transcript revises its interim ones (as a biased second decode does). */
class RevisingStt extends WordStt {
  readonly #final: string;
  constructor(interim: string, final: string) {
    super(interim);
    this.#final = final;
  }
  override async openStream(options: SttOpenOptions = {}): Promise<SttStream> {
    const stream = await super.openStream(options);
    return { ...stream, finalize: async () => ({ text: this.#final }) };
  }
}

/** Answers every function call at once, counting them. */
class CountingCaller implements FunctionCaller {
  readonly calls: Array<{ name: string; args: Record<string, unknown> }> = [];
  async call(fn: CustomFunction, args: Record<string, unknown>): Promise<FunctionOutcome> {
    this.calls.push({ name: fn.name, args });
    return { ok: true, content: '{"booked":true}', json: { booked: true }, durationMs: 1 };
  }
}

const EOT = { responsiveness: 1, minSilenceMs: 250, maxSilenceMs: 1_200 };

function keywordFlow(): ConversationFlow {
  return {
    start_node_id: 'ask',
    nodes: [
      {
        id: 'ask',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'How can I help?' },
        edges: [
          { id: 'y', destination_node_id: 'booked', transition_condition: { type: 'keyword', keywords: ['appointment', 'yes'] } },
          { id: 'n', destination_node_id: 'cancelled', transition_condition: { type: 'keyword', keywords: ['no'] } },
        ],
      },
      { id: 'booked', type: 'conversation', instruction: { type: 'static_text', text: 'Booked for you.' } },
      { id: 'cancelled', type: 'conversation', instruction: { type: 'static_text', text: 'Okay, cancelled.' } },
    ],
  };
}

async function talk(options: { engine: ResponseEngine; stt: WordStt; preemptive: boolean; audio: Int16Array; eot?: typeof EOT }) {
  const clock = new TestClock();
  const p = makePipeline(
    { stt: options.stt, tts: new SlowTts(clock, 150), vad: new EnergyVad(), engine: options.engine, startSpeaker: 'user', endOfTurn: options.eot ?? EOT, preemptive: options.preemptive },
    clock,
  );
  const rec = new Recorder(p, clock);
  const start = clock.t;
  await p.start();
  await feed(p, clock, options.audio);
  // The end of the user's last voiced audio, on the clock: before it, no agent audio may play.
  const lastVoicedAt = start + options.audio.length / 16 - trailingSilenceMs(options.audio);
  const result = { transcript: rec.transcript.map((u) => [u.role, u.text]), latencies: p.latencies(), preemptions: p.preemptions(), agentFrames: rec.agentFrames, lastVoicedAt, errors: rec.errors };
  await p.close();
  return result;
}

/** ms of silence at the end of `pcm`. */
function trailingSilenceMs(pcm: Int16Array): number {
  let i = pcm.length - 1;
  while (i >= 0 && pcm[i] === 0) i--;
  return (pcm.length - 1 - i) / 16;
}

test('the reply prepared during the pause plays as soon as the turn ends: e2e loses the synthesis time', async () => {
  const audio = concat(silence(300), tone(800), silence(1_500));
  const runs = [];
  for (const preemptive of [false, true]) {
    runs.push(await talk({ engine: new FlowEngine({ flow: keywordFlow() }), stt: new WordStt('i need an appointment'), preemptive, audio }));
  }
  const [plain, early] = runs as [Awaited<ReturnType<typeof talk>>, Awaited<ReturnType<typeof talk>>];
  for (const r of runs) {
    assert.deepEqual(r.transcript, [['user', 'i need an appointment'], ['agent', 'Booked for you.']]);
    assert.deepEqual(r.errors, []);
    assert.equal(r.latencies.length, 1);
  }
  assert.deepEqual(plain.preemptions, { used: 0, dropped: 0 });
  assert.deepEqual(early.preemptions, { used: 1, dropped: 0 });
  const [a, b] = [plain.latencies[0]!.e2eMs, early.latencies[0]!.e2eMs];
  // The turn ends after about 260 ms of silence either way; only the 150 ms of synthesis differ.
  assert.ok(a >= 400, `without: ${a} ms`);
  assert.ok(b <= a - 120, `with: ${b} ms, without: ${a} ms`);
  assert.ok(b >= 250, `with: ${b} ms: the reply waited for the end of the turn`);
});

test('the user goes on after the pause: the prepared reply is thrown away and its custom function never runs', async () => {
  const caller = new CountingCaller();
  const flow: ConversationFlow = {
    start_node_id: 'ask',
    tools: [{ tool_id: 'b', type: 'custom', name: 'book', url: 'http://backend.example/book' }],
    nodes: [
      {
        id: 'ask',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'How can I help?' },
        edges: [{ id: 'y', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['appointment'] } }],
      },
      {
        id: 'book',
        type: 'function',
        tool_id: 'b',
        speak_during_execution: true,
        instruction: { type: 'static_text', text: 'One moment.' },
        args: { request: '{{when}}' },
        edges: [{ id: 'd', destination_node_id: 'done', transition_condition: { type: 'always' } }],
      },
      { id: 'done', type: 'conversation', instruction: { type: 'static_text', text: 'You are booked.' } },
    ],
    default_dynamic_variables: { when: 'soon' },
  };
  const engine = new FlowEngine({ flow, functions: caller });
  // A 400 ms pause mid-sentence that does not end the turn (minimum end-of-turn silence 600 ms).
  const audio = concat(silence(300), tone(800), silence(400), tone(400), silence(2_000));
  const r = await talk({ engine, stt: new WordStt('i need an appointment for tomorrow'), preemptive: true, audio, eot: { responsiveness: 1, minSilenceMs: 600, maxSilenceMs: 1_200 } });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.transcript, [['user', 'i need an appointment for tomorrow'], ['agent', 'One moment. You are booked.']]);
  // Prepared in the pause and dropped when the user went on; prepared again at the end, and played.
  assert.deepEqual(r.preemptions, { used: 1, dropped: 1 });
  assert.deepEqual(caller.calls, [{ name: 'book', args: { request: 'soon' } }], 'the function ran once, for the real turn');
  assert.ok(r.agentFrames.every((f) => f.atMs > r.lastVoicedAt), 'no agent audio before the user had finished');
  assert.equal(engine.outcome().position, 'done');
});

test('a lead node reached in the pause is not created until the turn is confirmed, and then once', async () => {
  const leads: Array<{ name: string; phone: string }> = [];
  const tools: FlowTools = {
    createLead: async (fields) => void leads.push({ name: fields.name, phone: fields.phone }),
    createTicket: async () => undefined,
  };
  const flow: ConversationFlow = {
    start_node_id: 'ask',
    default_dynamic_variables: { name: 'Ada', phone: '+15550100' },
    nodes: [
      {
        id: 'ask',
        type: 'conversation',
        instruction: { type: 'static_text', text: 'How can I help?' },
        edges: [{ id: 'y', destination_node_id: 'lead', transition_condition: { type: 'keyword', keywords: ['appointment'] } }],
      },
      {
        id: 'lead',
        type: 'create_lead',
        instruction: { type: 'static_text', text: 'Thanks, noted.' },
        edges: [{ id: 'd', destination_node_id: 'done', transition_condition: { type: 'always' } }],
      },
      { id: 'done', type: 'conversation', instruction: { type: 'static_text', text: 'Anything else?' } },
    ],
  };
  const engine = new FlowEngine({ flow, tools });
  const audio = concat(silence(300), tone(800), silence(400), tone(400), silence(2_000));
  const r = await talk({ engine, stt: new WordStt('i need an appointment for tomorrow'), preemptive: true, audio, eot: { responsiveness: 1, minSilenceMs: 600, maxSilenceMs: 1_200 } });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.preemptions, { used: 1, dropped: 1 });
  assert.deepEqual(leads, [{ name: 'Ada', phone: '+15550100' }], 'one lead, for the real turn');
  assert.deepEqual(r.transcript, [['user', 'i need an appointment for tomorrow'], ['agent', 'Thanks, noted. Anything else?']]);
});

test('a final transcript that differs from the interim one: the prepared reply is dropped and the engine rolled back', async () => {
  const engine = new FlowEngine({ flow: keywordFlow() });
  const audio = concat(silence(300), tone(200), silence(1_500));
  const r = await talk({ engine, stt: new RevisingStt('yes', 'no'), preemptive: true, audio });
  assert.deepEqual(r.errors, []);
  // Prepared for "yes" (the booked node), answered for "no" from the node the turn began at.
  assert.deepEqual(r.transcript, [['user', 'no'], ['agent', 'Okay, cancelled.']]);
  assert.deepEqual(r.preemptions, { used: 0, dropped: 1 });
  assert.equal(engine.outcome().position, 'cancelled');
});

test('service LLM: a function call prepared for a turn that goes on is not sent; the model sees only the real turn', async () => {
  const caller = new CountingCaller();
  const answer = (request: ChatRequest) => {
    const last = request.messages.at(-1);
    if (last?.role === 'tool') return 'Booked.';
    return { toolCalls: [{ name: 'book', arguments: { text: last?.role === 'user' ? last.content : '' } }] };
  };
  const llm = new FakeLlm(Array.from({ length: 6 }, () => answer));
  const engine = new LlmEngine({
    config: { general_tools: [{ type: 'custom', name: 'book', url: 'http://backend.example/book', parameters: { type: 'object', properties: { text: { type: 'string' } } } }] },
    llm,
    functions: caller,
  });
  const audio = concat(silence(300), tone(800), silence(400), tone(400), silence(2_000));
  const r = await talk({ engine, stt: new WordStt('i need an appointment for tomorrow'), preemptive: true, audio, eot: { responsiveness: 1, minSilenceMs: 600, maxSilenceMs: 1_200 } });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.preemptions, { used: 1, dropped: 1 });
  assert.deepEqual(caller.calls, [{ name: 'book', args: { text: 'i need an appointment for tomorrow' } }]);
  assert.deepEqual(r.transcript, [['user', 'i need an appointment for tomorrow'], ['agent', 'Booked.']]);
  // The dropped reply asked the model once; the real turn's requests carry only the real words.
  const users = (req: ChatRequest) => req.messages.filter((m) => m.role === 'user').map((m) => m.content);
  assert.deepEqual(llm.requests.map(users), [['i need an appointment'], ['i need an appointment for tomorrow'], ['i need an appointment for tomorrow']]);
});

test("a knowledge search made for a dropped reply leaves the call's record with the engine's rollback; the real turn's stays", async () => {
  const record = new RetrievalRecord();
  const passage = (query: string): KnowledgePassage => ({ text: `about: ${query}`, score: 1, source_id: 'src_1', knowledge_base_id: 'kb_1' }) as KnowledgePassage;
  const searched: string[] = [];
  const contextSource = knowledgeContextSource({
    accountId: 'acc', ids: ['kb_1'], searchable: ['kb_1'], config: {},
    retriever: { ownedBases: async (_account, ids) => ids, retrieve: async (_bases, query) => { const words = [query].flat().join(' | '); searched.push(words); return [passage(words)]; } },
    onFailure: (error) => assert.fail(String(error)),
    onChunks: (chunks) => record.keep(chunks, 0),
  });
  const llm = new FakeLlm(['Here is what I found.', 'Here is what I found.', 'Here is what I found.']);
  const engine = record.rollingBack(new LlmEngine({ config: {}, llm, contextSource }));
  const audio = concat(silence(300), tone(800), silence(400), tone(400), silence(2_000));
  const r = await talk({ engine, stt: new WordStt('i need an appointment for tomorrow'), preemptive: true, audio, eot: { responsiveness: 1, minSilenceMs: 600, maxSilenceMs: 1_200 } });
  assert.deepEqual(r.errors, []);
  assert.deepEqual(r.preemptions, { used: 1, dropped: 1 });
  // Searched for the dropped reply too, but only the real turn's search is kept.
  assert.deepEqual(searched, ['i need an appointment', 'i need an appointment for tomorrow']);
  assert.deepEqual(record.entries.map((e) => e.chunks.map((c) => c.text)), [['about: i need an appointment for tomorrow']]);
});

test('a knowledge search that outlives its turn is not recorded as one the turn used', async () => {
  const record = new RetrievalRecord();
  let answer!: (chunks: KnowledgePassage[]) => void;
  const source = knowledgeContextSource({
    accountId: 'acc', ids: ['kb_1'], searchable: ['kb_1'], config: {},
    retriever: { ownedBases: async (_account, ids) => ids, retrieve: () => new Promise((resolve) => (answer = resolve)) },
    onFailure: () => {},
    onChunks: (chunks) => record.keep(chunks, 0),
  });
  const ctrl = new AbortController();
  const asked = source.contextFor({ userText: 'where is my order', history: [{ role: 'user', content: 'where is my order' }] } as never, ctrl.signal);
  await new Promise((resolve) => setImmediate(resolve));
  ctrl.abort();
  await assert.rejects(asked);
  answer([{ text: 'late', score: 1, source_id: 's', knowledge_base_id: 'kb_1' } as KnowledgePassage]);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(record.entries, []);
});

test('an incomplete sentence is not answered ahead: nothing is prepared while the user trails off', async () => {
  const audio = concat(silence(300), tone(600), silence(2_000));
  const r = await talk({ engine: new FlowEngine({ flow: keywordFlow() }), stt: new WordStt('i need an'), preemptive: true, audio });
  assert.deepEqual(r.preemptions, { used: 0, dropped: 0 });
  assert.deepEqual(r.transcript, [['user', 'i need an'], ['agent', 'How can I help?']]);
});

test('engines hold their custom functions until the turn is confirmed, however far their output is pulled', async () => {
  const tools = [{ type: 'custom' as const, name: 'book', url: 'http://backend.example/book' }];
  const engines: Array<[string, (caller: CountingCaller) => ResponseEngine]> = [
    [
      'flow',
      (caller) =>
        new FlowEngine({
          functions: caller,
          flow: {
            start_node_id: 'ask',
            tools: [{ tool_id: 'b', ...tools[0]! }],
            nodes: [
              { id: 'ask', type: 'conversation', edges: [{ id: 'y', destination_node_id: 'book', transition_condition: { type: 'keyword', keywords: ['appointment'] } }] },
              { id: 'book', type: 'function', tool_id: 'b' },
            ],
          },
        }),
    ],
    ['service LLM', (caller) => new LlmEngine({ config: { general_tools: tools }, llm: new FakeLlm([{ toolCalls: [{ name: 'book' }] }, 'Booked.']), functions: caller })],
  ];
  for (const [name, make] of engines) {
    const caller = new CountingCaller();
    const engine = make(caller);
    let confirm!: () => void;
    const confirmed = new Promise<void>((resolve) => (confirm = resolve));
    const outputs: string[] = [];
    const pulled = (async () => {
      for await (const o of engine.respond('i need an appointment', new AbortController().signal, { confirmed })) outputs.push(o.type);
    })();
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
    assert.deepEqual(caller.calls, [], `${name}: nothing sent before the confirmation`);
    assert.deepEqual(outputs, [], `${name}: no invocation recorded before the confirmation`);
    confirm();
    await pulled;
    assert.equal(caller.calls.length, 1, `${name}: sent once confirmed`);
    assert.equal(outputs[0], 'tool_call_invocation', name);
  }
});
