/**
 * What the recogniser is told about the caller's next turn (docs/voice-pipeline.md, "Vocabulary
 * biasing" and "Directed recognition"): the agent's boosted keywords and what the engine expects.
 */
import type { SttStream } from '../providers/stt.ts';
import { mergePhrases } from './engines/expected.ts';
import type { ResponseEngine } from './engines/types.ts';

/** The agent's boosted keywords and what the engine expects the user to say next. */
export function expectedPhrases(engine: ResponseEngine, boostedKeywords: readonly string[] = []): string[] {
  return mergePhrases(boostedKeywords, engine.expectedPhrases?.() ?? []);
}

/**
 * Hands the recogniser what the next user turn is expected to contain (after each engine step):
 * the engine's expectation when both have one (directed recognition; a closed one with the
 * agent's boosted keywords among its answers), else the expected phrases.
 */
export function hintRecogniser(stt: SttStream | undefined, engine: ResponseEngine, boostedKeywords: readonly string[] = []): void {
  const expectation = engine.expectation?.();
  if (!stt?.expect || !expectation) {
    stt?.bias?.(expectedPhrases(engine, boostedKeywords));
    return;
  }
  const phrases = expectation.closed ? mergePhrases(expectation.phrases, boostedKeywords) : expectedPhrases(engine, boostedKeywords);
  stt.expect({ ...expectation, phrases });
}
