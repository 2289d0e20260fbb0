// Directed recognition: what a flow node expects (closed or open) and how it reaches the
// recogniser (SttStream.expect), and the grammar PocketSphinx decodes a closed expectation with.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FakeStt, FakeTts, EnergyVad } from '../../src/providers/fake/fake.providers.ts';
import type { SttExpectation, SttOpenOptions, SttProvider } from '../../src/providers/stt.ts';
import { directedGrammar, holdsOtherPhrase, openHeardSequence, phrasePlausible, sequencePlausible, spansAnswer, spokenDigits } from '../../src/providers/pocketsphinx/directed.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import { nodeExpectation } from '../../src/voice/engines/expected.ts';
import type { ConversationFlow, FlowNode } from '../../src/voice/engines/types.ts';
import { TestClock, feed, makePipeline, silence, tone, concat } from './harness.ts';

const node = (extra: Partial<FlowNode>): FlowNode => ({ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hi' }, ...extra });
const kw = (keywords: string[]) => ({ id: `k${keywords[0]}`, destination_node_id: 'x', transition_condition: { type: 'keyword' as const, keywords } });
const always = { id: 'else', destination_node_id: 'x', transition_condition: { type: 'always' as const } };

test('a node is closed when it branches on keywords and extracts only yes/no, digits or a number; the else edge does not open it', () => {
  assert.deepEqual(nodeExpectation(node({ edges: [kw(['Yes', 'yeah']), kw(['no']), always] })), { closed: true, phrases: ['yes', 'yeah', 'no'], values: [] });
  const digits = nodeExpectation(node({ extract_variables: [{ name: 'pin', type: 'digits' }], edges: [always] }));
  assert.equal(digits.closed, true);
  assert.deepEqual(digits.values, ['digits']);
  assert.equal(nodeExpectation(node({ edges: [kw(['book']), { id: 'p', destination_node_id: 'x', transition_condition: { type: 'prompt', prompt: 'wants help' } }] })).closed, false, 'a prompt edge needs open speech');
  assert.equal(nodeExpectation(node({ extract_variables: [{ name: 'who', type: 'name' }], edges: [kw(['book'])] })).closed, false, 'a free value needs open speech');
  assert.equal(nodeExpectation(node({ edges: [always] })).closed, false, 'nothing to expect');
  assert.equal(nodeExpectation(node({})).closed, false);
});

test('the grammar of a closed expectation: its phrases, yes/no words, digit or number sequences; none for an open one', () => {
  const g = directedGrammar({ closed: true, phrases: ['book', 'make a payment'], values: ['yes_no'] })!;
  assert.match(g.jsgf, /^#JSGF V1\.0;\ngrammar directed;\npublic <answer> = book \| make a payment \| yes \| yeah \| yep \| no \| nope \| correct;\n$/);
  assert.deepEqual(g.phrases, ['book', 'make a payment', 'yes', 'yeah', 'yep', 'no', 'nope', 'correct']);
  const d = directedGrammar({ closed: true, phrases: ['one', 'agent'], values: ['digits'] })!;
  assert.match(d.jsgf, /public <answer> = agent \| <value>\+;\n<value> = \[double \| triple\] <digit>;\n<digit> = zero \| oh \| one/);
  assert.ok(d.words.includes('double') && d.words.includes('triple'), '"double five" is a digit string too');
  const n = directedGrammar({ closed: true, phrases: [], values: ['number'] })!;
  assert.match(n.jsgf, /<value> = \[double \| triple\] <digit> \| ten \| eleven/);
  assert.deepEqual(d.phrases, ['agent'], 'digit words are decoded as a sequence, not as answers of their own');
  assert.equal(directedGrammar({ closed: false, phrases: ['book'], values: [] }), undefined);
  assert.equal(directedGrammar({ closed: true, phrases: ['<bad>', ''], values: [] }), undefined, 'nothing decodable: the language model decodes');
  assert.ok(sequencePlausible(4, 5) && !sequencePlausible(1, 8), 'a sentence is not forced into digits');
  assert.ok(openHeardSequence(d, 'six') && openHeardSequence(d, 'double five oh'), 'the open model heard only digit words: its words stand');
  assert.ok(!openHeardSequence(d, 'six sticks') && !openHeardSequence(d, '') && !openHeardSequence(g, 'yes'), 'not when it heard another word, nothing, or at a node without values');
  assert.ok(phrasePlausible(1, 2) && !phrasePlausible(1, 6), 'nor into a keyword');
});

test("a node's digit count: stated by its digits variables, bounding the grammar's sequence and the open model's words", () => {
  const pin = (min?: number, max?: number) => ({ name: 'pin', type: 'digits' as const, ...(min ? { min_digits: min } : {}), ...(max ? { max_digits: max } : {}) });
  assert.deepEqual(nodeExpectation(node({ extract_variables: [pin(4, 6)], edges: [always] })).digitCount, { min: 4, max: 6 });
  assert.deepEqual(nodeExpectation(node({ extract_variables: [pin(undefined, 1)] })).digitCount, { min: 1, max: 1 }, 'the fewest default to one');
  assert.deepEqual(nodeExpectation(node({ extract_variables: [pin(3, 3), { name: 'zip', type: 'digits', min_digits: 5, max_digits: 5 }] })).digitCount, { min: 3, max: 5 });
  assert.equal(nodeExpectation(node({ extract_variables: [pin(4, 4), { name: 'any', type: 'digits' }] })).digitCount, undefined, 'one unbounded digits variable: any count');
  assert.equal(nodeExpectation(node({ extract_variables: [pin(4, 4), { name: 'n', type: 'number' }] })).digitCount, undefined, "a number's words are not digits");
  const prompt = { id: 'p', destination_node_id: 'x', transition_condition: { type: 'prompt' as const, prompt: 'wants help' } };
  assert.deepEqual(nodeExpectation(node({ extract_variables: [pin(4, 4)], edges: [prompt] })).digitCount, { min: 4, max: 4 }, 'an open node states it too (a keyed turn ends at it)');

  const one = directedGrammar({ closed: true, phrases: ['agent'], values: ['digits'], digitCount: { min: 1, max: 1 } })!;
  assert.match(one.jsgf, /public <answer> = agent \| \(<value>\);\n<value> = <digit>;\n<digit> = zero \| one \| two/, 'one digit: no loop, no "double", no lone "oh"');
  assert.ok(!one.words.includes('double') && !one.words.includes('oh'));
  const four = directedGrammar({ closed: true, phrases: [], values: ['digits'], digitCount: { min: 4, max: 6 } })!;
  assert.match(four.jsgf, /public <answer> = \(<value> <value> \[<value>\] \[<value>\] \[<value>\] \[<value>\]\);\n<value> = \[double \| triple\] <digit>;/, 'four to six digits: "double five" counts two, so two values at the fewest');
  const atLeast = directedGrammar({ closed: true, phrases: [], values: ['digits'], digitCount: { min: 3, max: Number.POSITIVE_INFINITY } })!;
  assert.match(atLeast.jsgf, /public <answer> = \(<value> <value>\*\);/);
  assert.equal(directedGrammar({ closed: true, phrases: [], values: ['digits', 'number'], digitCount: { min: 1, max: 1 } })!.digitCount, undefined, 'a number is not counted in digits');
  assert.equal(directedGrammar({ closed: false, phrases: [], values: [], digitCount: { min: 4, max: 4 } }), undefined, 'an open node decodes with the language model');

  assert.equal(spokenDigits(['double', 'five', 'one']), 3);
  assert.equal(spokenDigits(['oh', 'triple', 'two', 'agent']), 4);
  assert.ok(openHeardSequence(one, 'six') && !openHeardSequence(one, 'oh'), 'the open model heard one digit: its words stand');
  assert.ok(!openHeardSequence(one, 'oh two') && !openHeardSequence(one, 'double two'), 'two digits where one is expected: the grammar answers');
  assert.ok(openHeardSequence(four, 'double five one two') && !openHeardSequence(four, 'one two three four five six seven'));
  assert.ok(openHeardSequence(four, 'five one two'), 'fewer digits than the node takes: its words stand, the grammar would make up the rest');
  assert.ok(sequencePlausible(4, 2, true) && !sequencePlausible(4, 1, true) && sequencePlausible(4, 1), '"seven" is not forced into four digits');
});

test("two expected phrases in a short answer (\"go on\" where the edges are \"go\" and \"on\"): the grammar's choice decides, not the edges' order", () => {
  const g = directedGrammar({ closed: true, phrases: ['go', 'on', 'book', 'book a visit'], values: [] })!;
  assert.ok(holdsOtherPhrase(g, 'go', 'go on'));
  assert.ok(!holdsOtherPhrase(g, 'go', 'go now'), 'one expected phrase: the words stand');
  assert.ok(!holdsOtherPhrase(g, 'book a visit', 'book a visit'), 'a phrase inside the answer is the answer');
  assert.ok(!holdsOtherPhrase(g, 'go', 'going'), 'whole words only');
});

test('a phrase only the lattice holds is taken at a closed node when it spans enough of the speech: a misheard answer, not a short word inside a sentence', () => {
  const sentence = [{ word: 'this', start: 35, end: 57 }, { word: 'is', start: 58, end: 71 }, { word: 'routine', start: 175, end: 227 }, { word: 'is', start: 228, end: 245 }, { word: 'it', start: 246, end: 274 }];
  assert.equal(spansAnswer({ phrase: 'yes', start: 227, end: 245, posterior: 0.009 }, sentence), false, '"yes" over "is" in a 2.4 s sentence');
  const misheard = [{ word: 'the', start: 10, end: 20 }, { word: 'stat', start: 21, end: 66 }];
  assert.equal(spansAnswer({ phrase: 'stop', start: 20, end: 63, posterior: 0.002 }, misheard), true, '"stop" over most of a short answer');
  assert.equal(spansAnswer({ phrase: 'stop', start: 0, end: 10, posterior: 0.002 }, []), true, 'nothing heard: nothing to weigh against');
  // "hi i need to book a visit with the doctor" (Flite kal16) heard "... to but the visit ...": "book" over 10 % of the speech, at 0.09.
  const visit = ['hi', 'i', 'need', 'to', 'but', 'the', 'visit', 'with', 'the', 'doctor'].map((word, i) => ({ word, start: 11 + 22 * i, end: 32 + 22 * i }));
  assert.equal(spansAnswer({ phrase: 'book', start: 91, end: 112, posterior: 0.09 }, visit), true, 'a keyword the lattice holds strongly, however short');
  assert.equal(spansAnswer({ phrase: 'support', start: 133, end: 166, posterior: 0.0116 }, visit), false, 'a faint one in the same sentence is not taken');
});

const flow: ConversationFlow = {
  start_node_id: 'confirm',
  nodes: [
    {
      id: 'confirm', type: 'conversation', instruction: { type: 'static_text', text: 'Shall I book it?' },
      edges: [kw(['yes']), kw(['no']), { ...always, destination_node_id: 'free' }],
    },
    {
      id: 'free', type: 'conversation', instruction: { type: 'static_text', text: 'What can I do for you?' },
      edges: [{ id: 'p', destination_node_id: 'bye', transition_condition: { type: 'prompt', prompt: 'anything' } }],
    },
    { id: 'bye', type: 'end', instruction: { type: 'static_text', text: 'Goodbye.' } },
  ],
};

test('the pipeline tells a recogniser that takes expectations what the node expects: closed with the boosted keywords among the answers, open after', async () => {
  const clock = new TestClock();
  const told: SttExpectation[] = [];
  const stt = new FakeStt(['maybe later']);
  const provider: SttProvider = {
    id: stt.id,
    languages: () => stt.languages(),
    async openStream(options?: SttOpenOptions) {
      const s = await stt.openStream(options);
      return { ...s, bias: () => assert.fail('expect() is used when the recogniser has it'), expect: (e: SttExpectation) => told.push(e) };
    },
  };
  const engine = new FlowEngine({ flow, variables: () => ({ dynamic: {} }) });
  const p = makePipeline({ stt: provider, tts: new FakeTts({ msPerChar: 10 }), vad: new EnergyVad(), engine, boostedKeywords: ['Switchboard'] }, clock);
  await p.start();
  await feed(p, clock, silence(2500));
  assert.deepEqual(told.at(-1), { closed: true, phrases: ['yes', 'no', 'switchboard'], values: [] });
  // "maybe later" is neither: the else edge leads to an open node.
  await feed(p, clock, concat(tone(800), silence(2500)));
  assert.equal(engine.currentNodeId, 'free');
  assert.equal(told.at(-1)!.closed, false);
  await p.close();
});
