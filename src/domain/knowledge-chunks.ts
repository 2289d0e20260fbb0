/**
 * How a document becomes chunks (issue 29): Markdown-aware, about 300-500 tokens, each chunk
 * carrying the headings above it as context. Pure: text in, chunks out.
 */
import type { DocumentFormat } from './knowledge-base.ts';

/** A chunk grows to about this many tokens before a new one starts. */
export const CHUNK_TARGET_TOKENS = 400;
/** No chunk passes this many tokens: a longer paragraph is cut between sentences (or words). */
export const CHUNK_MAX_TOKENS = 500;

export interface DocumentChunk {
  /** The headings above it, outermost first, joined with " > "; the document's title when none. */
  heading: string;
  text: string;
  /** Its words (whitespace-separated), the length retrieval normalises by. */
  words: number;
}

/** Tokens of `text` as LLM tokenisers count English, about 4 for every 3 words. */
export function estimateTokens(text: string): number {
  return tokensOf(countWords(text));
}

function tokensOf(words: number): number {
  return Math.ceil((words * 4) / 3);
}

/**
 * Whitespace-separated words of `text` (as `/\S+/g` counts them, without building the matches:
 * the chunker's hottest loop).
 */
export function countWords(text: string): number {
  let words = 0;
  let inWord = false;
  for (let i = 0; i < text.length; i++) {
    const space = isSpace(text.charCodeAt(i));
    if (!space && !inWord) words++;
    inWord = !space;
  }
  return words;
}

/** JavaScript's `\s`: ASCII and Unicode spaces, line terminators and the byte order mark. */
function isSpace(c: number): boolean {
  if (c <= 32) return c === 32 || (c >= 9 && c <= 13);
  if (c < 160) return false;
  return c === 160 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff;
}

interface Block {
  headings: readonly string[];
  text: string;
}

/**
 * Cuts `body` into chunks, each headed by its section's headings (the title where it has none). Markdown: `#` headings (ATX) and underlined headings (Setext) open
 * sections; a chunk never spans two sections, so each one's heading says what it is about;
 * paragraphs, lists and fenced code blocks are kept whole where they fit. Plain text: paragraphs
 * (blank-line separated) under the title only.
 */
export function chunkDocument(title: string, body: string, format: DocumentFormat): DocumentChunk[] {
  const blocks = format === 'markdown' ? markdownBlocks(body) : textBlocks(body);
  const chunks: DocumentChunk[] = [];
  // Each piece's words are counted once (its tokens and the chunk's words follow from them).
  let current: { headings: readonly string[]; parts: string[]; tokens: number; words: number } | null = null;
  const flush = () => {
    if (current && current.parts.length > 0) {
      const text = current.parts.join('\n\n');
      const headings = current.headings.length > 0 ? current.headings : [title];
      chunks.push({ heading: headings.filter((h) => h !== '').join(' > '), text, words: current.words });
    }
    current = null;
  };
  for (const block of blocks) {
    for (const { text: piece, words } of splitToFit(block.text)) {
      const tokens = tokensOf(words);
      const sameSection: boolean = current !== null && sameHeadings(current.headings, block.headings);
      if (!sameSection || (current !== null && current.tokens + tokens > CHUNK_MAX_TOKENS) || (current !== null && current.tokens >= CHUNK_TARGET_TOKENS)) flush();
      current ??= { headings: block.headings, parts: [], tokens: 0, words: 0 };
      current.parts.push(piece);
      current.tokens += tokens;
      current.words += words;
    }
  }
  flush();
  return chunks;
}

function sameHeadings(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((h, i) => h === b[i]);
}

const ATX = /^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$/;
const FENCE = /^ {0,3}(`{3,}|~{3,})/;
const SETEXT = /^ {0,3}(=+|-+)[ \t]*$/;

function markdownBlocks(body: string): Block[] {
  const lines = body.replace(/\r\n?/g, '\n').split('\n');
  const blocks: Block[] = [];
  let headings: string[] = [];
  let paragraph: string[] = [];
  let fence: string | null = null;
  const endParagraph = () => {
    const text = paragraph.join('\n').trim();
    if (text !== '') blocks.push({ headings, text });
    paragraph = [];
  };
  const openSection = (level: number, text: string) => {
    endParagraph();
    const next = headings.slice(0, level - 1);
    while (next.length < level - 1) next.push('');
    next.push(cleanHeading(text));
    headings = next;
  };
  for (const line of lines) {
    if (fence !== null) {
      paragraph.push(line);
      if (line.trim().startsWith(fence)) {
        fence = null;
        endParagraph();
      }
      continue;
    }
    const fenceOpen = FENCE.exec(line);
    if (fenceOpen) {
      endParagraph();
      fence = fenceOpen[1]!;
      paragraph.push(line);
      continue;
    }
    const atx = ATX.exec(line);
    if (atx) {
      openSection(atx[1]!.length, atx[2]!);
      continue;
    }
    const setext = SETEXT.exec(line);
    if (setext && paragraph.length === 1 && paragraph[0]!.trim() !== '') {
      const text = paragraph[0]!;
      paragraph = [];
      openSection(setext[1]!.startsWith('=') ? 1 : 2, text);
      continue;
    }
    if (line.trim() === '') endParagraph();
    else paragraph.push(line);
  }
  endParagraph();
  return blocks.map((b) => ({ headings: b.headings.filter((h) => h !== ''), text: b.text }));
}

/**
 * Heading text without Markdown emphasis, code or link syntax. An underscore inside a word is
 * kept (CommonMark: it opens no emphasis there), so `` `webhook_url` `` stays webhook_url.
 */
function cleanHeading(text: string): string {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/[*`]|(?<![\p{L}\p{N}])_+|_+(?![\p{L}\p{N}])/gu, '')
    .trim();
}

function textBlocks(body: string): Block[] {
  return body
    .replace(/\r\n?/g, '\n')
    .split(/\n[ \t]*\n/)
    .map((text) => text.trim())
    .filter((text) => text !== '')
    .map((text) => ({ headings: [], text }));
}

/**
 * `text` in pieces of at most CHUNK_MAX_TOKENS, with their words: between sentences where it can,
 * else between words.
 */
function splitToFit(text: string): Array<{ text: string; words: number }> {
  const words = countWords(text);
  if (tokensOf(words) <= CHUNK_MAX_TOKENS) return [{ text, words }];
  return splitLong(text).map((piece) => ({ text: piece, words: countWords(piece) }));
}

function splitLong(text: string): string[] {
  const sentences = text.match(/[^.!?\n]+(?:[.!?]+|\n|$)\s*/g) ?? [text];
  const pieces: string[] = [];
  // The current piece's words are kept as it grows (recounting it at every sentence was quadratic
  // in a long paragraph's length).
  let current = '';
  let currentWords = 0;
  const push = (piece: string, words: number) => {
    const joined = currentWords + words - (endsInWord(current) && piece !== '' && !isSpace(piece.charCodeAt(0)) ? 1 : 0);
    if (current !== '' && tokensOf(joined) > CHUNK_MAX_TOKENS) {
      pieces.push(current.trim());
      current = '';
      currentWords = 0;
    }
    currentWords = current === '' ? words : joined;
    current += piece;
  };
  for (const sentence of sentences) {
    const words = countWords(sentence);
    if (tokensOf(words) <= CHUNK_MAX_TOKENS) push(sentence, words);
    else for (const word of sentence.split(/(?<=\s)/)) push(word, countWords(word));
  }
  if (current.trim() !== '') pieces.push(current.trim());
  return pieces;
}

function endsInWord(text: string): boolean {
  return text !== '' && !isSpace(text.charCodeAt(text.length - 1));
}
