/**
 * A flow's `knowledge` node (issue 29): answers the caller's question offline, with no LLM, by
 * speaking the most relevant sentences of the best passage its knowledge bases hold. The search
 * goes through the engine's context seam (context.ts), the one retrieval path service LLMs use.
 */
import { queryTerms } from '../../domain/knowledge-base.ts';
import type { ChatMessage } from '../../providers/llm.ts';
import { askSource, type ReferencePassage, type TurnContextSource, type TurnTimingOptions } from './context.ts';
import type { FlowNode } from './types.ts';

/** Sentences of the passage an answer speaks at most. */
export const ANSWER_MAX_SENTENCES = 2;
/** Characters an answer speaks at most (a longer sentence is cut at a word boundary). */
export const ANSWER_MAX_CHARS = 300;

/** The variable a knowledge node sets for its edges: KNOWLEDGE_FOUND or KNOWLEDGE_NOT_FOUND. */
export const KNOWLEDGE_RESULT_VARIABLE = 'knowledge_result';
/** The variable holding what the node spoke ('' when nothing was found). */
export const KNOWLEDGE_ANSWER_VARIABLE = 'knowledge_answer';
export const KNOWLEDGE_FOUND = 'found';
export const KNOWLEDGE_NOT_FOUND = 'not_found';

/** What a knowledge node found for a question. */
export interface KnowledgeAnswer {
  /** What to speak: at most ANSWER_MAX_SENTENCES sentences, ANSWER_MAX_CHARS characters. */
  text: string;
  /** The passage it comes from. */
  passage: ReferencePassage;
}

/**
 * Searches the node's knowledge bases for `question` (through `source`, timed to `timing`) and
 * answers from the best passage, or null when none scores at least the node's `filter_score`.
 * Rejects only when `signal` aborts.
 */
export async function answerFromKnowledge(
  source: TurnContextSource,
  node: FlowNode,
  turn: { question: string; history: readonly ChatMessage[] },
  timing: TurnTimingOptions,
  signal: AbortSignal,
): Promise<KnowledgeAnswer | null> {
  const config = node.kb_config ?? {};
  const scope = {
    knowledgeBaseIds: node.knowledge_base_ids ?? [],
    ...(config.top_k !== undefined ? { topK: config.top_k } : {}),
    ...(config.filter_score !== undefined ? { filterScore: config.filter_score } : {}),
  };
  const found = await askSource(source, { userText: turn.question, history: [...turn.history], scope }, timing, signal);
  const best = found.passages[0];
  if (!best) return null;
  const text = answerSentences(best.text, turn.question);
  return text === '' ? null : { text, passage: best };
}

/**
 * The sentences of `passage` that answer `question` best: those sharing the most of its words
 * (a word counts once; plural and -ed/-ing endings aside), at most ANSWER_MAX_SENTENCES and
 * ANSWER_MAX_CHARS, in the passage's order; its first sentence when none shares a word.
 * Markdown marks are left out. Pure.
 */
export function answerSentences(passage: string, question: string): string {
  const sentences = splitSentences(speakable(passage));
  if (sentences.length === 0) return '';
  const wanted = new Set(queryTerms(question).map(stem));
  const scored = sentences.map((text, index) => ({ text, index, score: overlap(text, wanted) }));
  const ranked = scored.filter((s) => s.score > 0).sort((a, b) => b.score - a.score || a.index - b.index);
  const best = ranked[0] ?? scored[0]!;
  const chosen = [best];
  let chars = best.text.length;
  for (const next of ranked.slice(1)) {
    if (chosen.length >= ANSWER_MAX_SENTENCES) break;
    if (chars + 1 + next.text.length > ANSWER_MAX_CHARS) continue;
    chosen.push(next);
    chars += 1 + next.text.length;
  }
  const text = chosen.sort((a, b) => a.index - b.index).map((s) => s.text).join(' ');
  return text.length <= ANSWER_MAX_CHARS ? text : cutAtWord(text, ANSWER_MAX_CHARS);
}

/** The passage as plain sentences: headings, list marks, emphasis, code marks and link targets gone. */
function speakable(passage: string): string {
  return passage
    .split('\n')
    .filter((line) => !/^\s*#{1,6}\s/.test(line) && !/^\s*(```|~~~|[-=]{3,}\s*$)/.test(line))
    .map((line) => line.replace(/^\s*(?:[-*+]|\d+[.)])\s+/, '').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1').replace(/[*_`]+/g, ''))
    .join('\n');
}

function splitSentences(text: string): string[] {
  return text
    .split(/\n\s*\n|(?<=[.!?])\s+/)
    .map((s) => s.replace(/\s+/g, ' ').trim())
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
}

function overlap(sentence: string, wanted: ReadonlySet<string>): number {
  const seen = new Set<string>();
  for (const term of queryTerms(sentence)) if (wanted.has(stem(term))) seen.add(stem(term));
  return seen.size;
}

/** A crude English stem, enough to match "opens" with "open" and "Sundays" with "sunday". */
function stem(word: string): string {
  if (word.length <= 4) return word;
  return word.replace(/(?:ing|ed|es|s)$/, '');
}

function cutAtWord(text: string, max: number): string {
  const cut = text.slice(0, max);
  const space = cut.lastIndexOf(' ');
  return `${(space > max / 2 ? cut.slice(0, space) : cut).replace(/[\s,;:]+$/, '')}.`;
}
