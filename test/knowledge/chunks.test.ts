import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHUNK_MAX_TOKENS, chunkDocument, countWords, estimateTokens } from '../../src/domain/knowledge-chunks.ts';
import { queryTerms } from '../../src/domain/knowledge-base.ts';
import { POLICIES_MD } from './corpus.ts';

describe('knowledge chunks', () => {
  it('cuts Markdown by section, each chunk headed by the headings above it', () => {
    const chunks = chunkDocument('policies', POLICIES_MD, 'markdown');
    assert.deepEqual(chunks.map((c) => c.heading), [
      'Harbor Bikes help > Opening hours',
      'Harbor Bikes help > Returns and refunds',
      'Harbor Bikes help > Repairs',
      'Harbor Bikes help > Repairs > Warranty',
    ]);
    assert.match(chunks[3]!.text, /^Frames carry/);
  });

  it("keeps a heading's identifiers whole: emphasis, code and link syntax go, an underscore inside a word stays", () => {
    const chunks = chunkDocument('t', "# The agent's `webhook_url`\n\nText.\n\n## _Retries_ and **health** ([STT_PROVIDER](config.md))\n\nMore.\n", 'markdown');
    assert.deepEqual(chunks.map((c) => c.heading), ["The agent's webhook_url", "The agent's webhook_url > Retries and health (STT_PROVIDER)"]);
  });

  it('keeps long sections to about 300-500 tokens, never more, with paragraphs and code whole', () => {
    const paragraph = (i: number) => `Paragraph ${i}. ` + 'The rider checks the chain and the brakes before every ride. '.repeat(6);
    const section = Array.from({ length: 40 }, (_, i) => paragraph(i)).join('\n\n');
    const fence = '```\nline one\n\nline two after a blank line\n```';
    const chunks = chunkDocument('t', `Manual\n======\n\n${section}\n\n${fence}\n\nSetup\n-----\n${'word '.repeat(2000)}`, 'markdown');
    for (const chunk of chunks) assert.ok(estimateTokens(chunk.text) <= CHUNK_MAX_TOKENS, `${estimateTokens(chunk.text)} tokens`);
    const manual = chunks.filter((c) => c.heading === 'Manual');
    for (const chunk of manual.slice(0, -1)) assert.ok(estimateTokens(chunk.text) >= 300, 'full chunks reach the target');
    assert.ok(manual.some((c) => c.text.includes(fence)), 'a fenced block is not cut at its blank line');
    assert.ok(chunks.filter((c) => c.heading === 'Manual > Setup').length >= 5, 'a paragraph over the bound is cut between words');
    const words = chunks.reduce((n, c) => n + c.words, 0);
    assert.equal(words, section.split(/\s+/).filter(Boolean).length + fence.split(/\s+/).length + 2000, 'no word lost');
  });

  it('cuts a long paragraph where recounting the whole piece at every sentence would', () => {
    // The reference is the plain rule: a piece ends where one more sentence (or word) would pass the bound.
    const reference = (text: string): string[] => {
      const pieces: string[] = [];
      let current = '';
      const push = (piece: string) => {
        if (current !== '' && estimateTokens(current + piece) > CHUNK_MAX_TOKENS) {
          pieces.push(current.trim());
          current = '';
        }
        current += piece;
      };
      for (const sentence of text.match(/[^.!?\n]+(?:[.!?]+|\n|$)\s*/g) ?? [text]) {
        if (estimateTokens(sentence) <= CHUNK_MAX_TOKENS) push(sentence);
        else for (const word of sentence.split(/(?<=\s)/)) push(word);
      }
      if (current.trim() !== '') pieces.push(current.trim());
      return pieces;
    };
    let seed = 7;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    const tokens = ['word', 'brake', 'a.b', 'end.', 'why?', 'stop!', 'x', '\u00a0', '3.5'];
    const separators = [' ', ' ', ' ', '  ', '\t', ''];
    for (let i = 0; i < 20; i++) {
      // Separators include none at all, so sentences meet mid-word ("end.word"), and one run-on sentence of 900 words is cut between words.
      const sentences = Array.from({ length: 200 + next(400) }, () => tokens[next(tokens.length)]! + separators[next(separators.length)]!).join('');
      const paragraph = i === 0 ? 'run '.repeat(900) + sentences : sentences;
      const chunks = chunkDocument('t', paragraph, 'text');
      assert.deepEqual(chunks.map((c) => c.text), reference(paragraph.trim()), `paragraph ${i}`);
      for (const chunk of chunks) assert.equal(chunk.words, countWords(chunk.text));
    }
  });

  it('cuts plain text by paragraph under the title', () => {
    const chunks = chunkDocument('Delivery notes', 'First line.\n\nSecond paragraph.\r\n\r\n', 'text');
    assert.deepEqual(chunks.map((c) => [c.heading, c.text]), [['Delivery notes', 'First line.\n\nSecond paragraph.']]);
  });

  it("counts words as /\\S+/ does, every kind of space included, and each chunk's words are its text's", () => {
    const spaces = [' ', '\t', '\n', '\r', '\v', '\f', '\u00a0', '\u1680', '\u2000', '\u2005', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff'];
    const letters = ['a', 'é', '7', '.', '\u200b', '漢', '😀'];
    let seed = 1;
    const next = (n: number) => ((seed = (seed * 1103515245 + 12345) % 2 ** 31), seed % n);
    for (let i = 0; i < 500; i++) {
      const text = Array.from({ length: next(40) }, () => (next(3) === 0 ? spaces[next(spaces.length)] : letters[next(letters.length)])).join('');
      assert.equal(countWords(text), text.match(/\S+/g)?.length ?? 0, JSON.stringify(text));
    }
    for (const chunk of chunkDocument('Policies', POLICIES_MD, 'markdown')) assert.equal(chunk.words, chunk.text.split(/\s+/).filter(Boolean).length);
  });

  it('turns a question into terms: no stopwords, no punctuation, each once', () => {
    assert.deepEqual(queryTerms('What are your opening hours on Sunday? Sunday!'), ['opening', 'hours', 'sunday']);
    assert.deepEqual(queryTerms('"OR" NEAR( * ) AND'), ['near'], 'FTS5 syntax is only words: each term is quoted');
  });
});
