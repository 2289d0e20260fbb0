// A custom LLM's knowledge_base_chunks (issue 29) in the engine, over an in-memory socket: searched
// through the context seam before response_required, carried by it, carried again by the next
// reminder_required (the last turn's), and absent for an engine without a source. Through real
// calls and a real socket: test/knowledge/knowledge-calls.test.ts.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import { CustomLlmEngine, type LlmSocketHandlers } from '../../src/voice/engines/custom-llm.engine.ts';
import type { TurnContextSource, TurnQuery } from '../../src/voice/engines/context.ts';
import type { EngineOutput } from '../../src/voice/engines/types.ts';

async function collect(outputs: AsyncIterable<EngineOutput>): Promise<EngineOutput[]> {
  const out: EngineOutput[] = [];
  for await (const o of outputs) out.push(o);
  return out;
}

function engineWith(contextSource?: TurnContextSource) {
  const sent: Array<Record<string, any>> = [];
  let handlers: LlmSocketHandlers | undefined;
  const open = async (_url: string, h: LlmSocketHandlers) => {
    handlers = h;
    return { send: (text: string) => void sent.push(JSON.parse(text)), close: () => {} };
  };
  const engine = new CustomLlmEngine({
    url: 'ws://x/llm', callId: 'call_1', open, callDetails: () => ({}), onFailure: () => assert.fail('no failure'),
    scheduler: new ManualScheduler(), ...(contextSource ? { contextSource } : {}),
  });
  /** Answers the last request with `text`, complete. */
  const answer = (text: string) => {
    const last = sent.filter((e) => e.interaction_type === 'response_required').at(-1)!;
    handlers!.onMessage(JSON.stringify({ response_type: 'response', response_id: last.response_id, content: text, content_complete: true }));
  };
  return { engine, sent, answer, of: (type: string) => sent.filter((e) => e.interaction_type === type) };
}

describe('a custom LLM with knowledge bases', () => {
  it('sends the chunks found for the turn in response_required, and the last turn\'s in reminder_required', async () => {
    const asked: TurnQuery[] = [];
    const source: TurnContextSource = {
      async contextFor(turn) {
        asked.push(turn);
        return { passages: [{ text: 'Gift cards never expire.', source: 'Gift cards', score: 0.5, sourceId: 'kb_source_1', knowledgeBaseId: 'knowledge_base_1' }] };
      },
    };
    const { engine, answer, of } = engineWith(source);
    let contextMs: number | undefined;
    const reply = collect(engine.respond('do gift cards expire', new AbortController().signal, { onTiming: (t) => (contextMs = t.ms) }));
    await new Promise((r) => setImmediate(r));
    answer('They never expire.');
    await reply;
    const [required] = of('response_required');
    assert.deepEqual(required!.knowledge_base_chunks, [{ text: 'Gift cards never expire.', score: 0.5, source_id: 'kb_source_1', knowledge_base_id: 'knowledge_base_1' }]);
    assert.equal(asked[0]!.userText, 'do gift cards expire');
    assert.equal(asked[0]!.scope, undefined, "the agent's own knowledge bases");
    assert.equal(typeof contextMs, 'number', "the search is timed as the turn's context");
    engine.remind();
    assert.deepEqual(of('reminder_required')[0]!.knowledge_base_chunks, required!.knowledge_base_chunks);
    engine.close();
  });

  it('sends no knowledge_base_chunks without knowledge bases', async () => {
    const { engine, answer, of } = engineWith();
    const reply = collect(engine.respond('hello', new AbortController().signal));
    await new Promise((r) => setImmediate(r));
    answer('Hi.');
    await reply;
    assert.ok(!('knowledge_base_chunks' in of('response_required')[0]!));
    engine.close();
  });
});
