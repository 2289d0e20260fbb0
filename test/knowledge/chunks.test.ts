import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CHUNK_MAX_TOKENS, chunkDocument, estimateTokens } from '../../src/domain/knowledge-chunks.ts';
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

  it('cuts plain text by paragraph under the title', () => {
    const chunks = chunkDocument('Delivery notes', 'First line.\n\nSecond paragraph.\r\n\r\n', 'text');
    assert.deepEqual(chunks.map((c) => [c.heading, c.text]), [['Delivery notes', 'First line.\n\nSecond paragraph.']]);
  });

  it('turns a question into terms: no stopwords, no punctuation, each once', () => {
    assert.deepEqual(queryTerms('What are your opening hours on Sunday? Sunday!'), ['opening', 'hours', 'sunday']);
    assert.deepEqual(queryTerms('"OR" NEAR( * ) AND'), ['near'], 'FTS5 syntax is only words: each term is quoted');
  });
});
