// A flow's `knowledge` node in the flow engine, with a source that records what it is asked: the
// answer's sentences and its length bound, the search's scope (the node's bases and settings), the
// found / not-found variables its edges read, and the node asking again when nothing was found.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { ANSWER_MAX_CHARS, answerSentences } from '../../src/voice/engines/knowledge.node.ts';
import type { TurnContext, TurnContextSource, TurnQuery } from '../../src/voice/engines/context.ts';
import type { ConversationFlow, EngineOutput } from '../../src/voice/engines/types.ts';

async function said(outputs: AsyncIterable<EngineOutput>): Promise<string> {
  const parts: string[] = [];
  for await (const o of outputs) if (o.type === 'text') parts.push(o.text);
  return parts.join(' ');
}

function source(passages: string[]): TurnContextSource & { asked: TurnQuery[] } {
  const asked: TurnQuery[] = [];
  return {
    asked,
    async contextFor(turn: TurnQuery): Promise<TurnContext> {
      asked.push(turn);
      return { passages: passages.map((text, i) => ({ text, score: 0.9 - i / 10 })) };
    },
  };
}

const flow: ConversationFlow = {
  start_node_id: 'ask',
  nodes: [
    {
      id: 'ask', type: 'knowledge', knowledge_base_ids: ['knowledge_base_a'], kb_config: { top_k: 2, filter_score: 0.4 },
      instruction: { type: 'static_text', text: 'Ask me anything.' },
      edges: [{ id: 'found', destination_node_id: 'more', transition_condition: { type: 'equation', operator: '&&', equations: [{ left: 'knowledge_result', operator: '==', right: 'found' }] } }],
    },
    { id: 'more', type: 'conversation', instruction: { type: 'static_text', text: 'Anything else?' } },
  ],
};

describe('a flow knowledge node', () => {
  it('greets with its instruction, answers from the best passage, sets its variables and takes the found edge', async () => {
    const kb = source(['## Hours\nWe open at nine. On **Sundays** we are closed. Parking is free.', 'Second passage.']);
    const engine = new FlowEngine({ flow, contextSource: kb });
    const signal = new AbortController().signal;
    assert.equal(await said(engine.begin(signal)), 'Ask me anything.', 'the start node speaks and waits: no search on the agent\'s turn');
    assert.equal(kb.asked.length, 0);
    let contextMs: number | undefined;
    const answer = await said(engine.respond('are you closed on sundays', signal, { onTiming: (t) => (contextMs = t.ms) }));
    assert.equal(answer, 'On Sundays we are closed. Anything else?');
    assert.deepEqual(kb.asked[0]!.scope, { knowledgeBaseIds: ['knowledge_base_a'], topK: 2, filterScore: 0.4 });
    assert.equal(kb.asked[0]!.userText, 'are you closed on sundays');
    assert.equal(typeof contextMs, 'number', 'the search is timed as the turn\'s context');
    assert.equal(engine.variables()['knowledge_result'], 'found');
    assert.equal(engine.variables()['knowledge_answer'], 'On Sundays we are closed.');
    assert.equal(engine.currentNodeId, 'more');
  });

  it('with nothing found sets not_found and, no edge holding, asks again; the next question is searched anew', async () => {
    const empty = source([]);
    const engine = new FlowEngine({ flow, contextSource: empty });
    const signal = new AbortController().signal;
    await said(engine.begin(signal));
    assert.equal(await said(engine.respond('what about the weather', signal)), 'Ask me anything.');
    assert.equal(engine.variables()['knowledge_result'], 'not_found');
    assert.equal(engine.variables()['knowledge_answer'], '');
    assert.equal(engine.currentNodeId, 'ask');
    await said(engine.respond('and tomorrow', signal));
    assert.equal(empty.asked.length, 2);
    assert.equal(empty.asked[1]!.userText, 'and tomorrow');
  });
});

describe('the answer a knowledge node speaks', () => {
  it('is the passage\'s sentences sharing most of the question\'s words, in their order, at most two', () => {
    const passage = 'Our shop opens at nine. Helmets are sold separately. On Sundays we are closed. Public holidays follow Sunday hours.';
    assert.equal(answerSentences(passage, 'when do you open on sunday'), 'Our shop opens at nine. On Sundays we are closed.');
    assert.equal(answerSentences(passage, 'xylophone'), 'Our shop opens at nine.', 'no shared word: the first sentence');
  });

  it('leaves out Markdown marks and keeps to ANSWER_MAX_CHARS, cut at a word', () => {
    assert.equal(answerSentences('# Title\n- **Returns** within [30 days](https://x.test/returns).', 'returns'), 'Returns within 30 days.');
    const long = `Returns ${'are accepted for many reasons '.repeat(20)}always.`;
    const answer = answerSentences(long, 'returns');
    assert.ok(answer.length <= ANSWER_MAX_CHARS + 1, `${answer.length}`);
    assert.match(answer, /^Returns are accepted for many reasons .* for many\.$/, 'cut at a word, ended as a sentence');
  });
});
