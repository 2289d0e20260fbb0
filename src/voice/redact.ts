import type { Utterance } from './transcript.ts';

/**
 * PII redaction for the `everything_except_pii` storage policy. Finds, in transcript text:
 * e-mail addresses (written or spoken "x at y dot com"), phone numbers, card and account numbers
 * (runs of 4+ digits, written or spoken as digit words, separators allowed), and the given names
 * the flow captured. Each is replaced by a bracketed tag, and the utterance's time span is
 * returned so the recording can be silenced there. Recognisers give no word timings, so the
 * span is the whole utterance (`spans: 'utterance'`, the default, safe) or an estimate from the
 * character position with padding (`spans: 'estimate'`).
 */
export interface RedactOptions {
  /** Names to redact (e.g. EngineOutcome.names); matched case-insensitively as whole words. */
  names?: readonly string[];
  spans?: 'utterance' | 'estimate';
  /** Padding around estimated spans, ms; default 400. */
  paddingMs?: number;
}

export interface RedactedSpan {
  startMs: number;
  endMs: number;
}

export interface RedactionResult {
  utterances: Utterance[];
  /** Merged, sorted time spans to silence in the recording. */
  spans: RedactedSpan[];
}

const DIGIT_WORD = '(?:zero|oh|one|two|three|four|five|six|seven|eight|nine|double|triple)';
const PATTERNS: Array<{ tag: string; re: RegExp }> = [
  { tag: '[email]', re: /[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Za-z]{2,}/g },
  { tag: '[email]', re: /\b[a-z0-9._-]+(?: [a-z0-9._-]+){0,2} at [a-z0-9-]+(?: dot [a-z0-9-]+)+\b/gi },
  // Written numbers: 4+ digits, allowing spaces, dots, dashes and parentheses between groups.
  { tag: '[number]', re: /\+?\(?\d[\d\s().-]{2,}\d/g },
  // Spoken digit runs: four or more digit words in a row.
  { tag: '[number]', re: new RegExp(`\\b${DIGIT_WORD}(?:[\\s,-]+${DIGIT_WORD}){3,}\\b`, 'gi') },
];

/** Redacts one text; returns the text and the [start, end) character ranges that were redacted. */
export function redactText(text: string, names: readonly string[] = []): { text: string; ranges: Array<[number, number]> } {
  const ranges: Array<{ from: number; to: number; tag: string }> = [];
  const add = (from: number, to: number, tag: string): void => {
    if (ranges.some((r) => from < r.to && to > r.from)) return;
    ranges.push({ from, to, tag });
  };
  for (const { tag, re } of PATTERNS) {
    for (const m of text.matchAll(re)) {
      const digits = m[0].replace(/\D/g, '').length;
      if (tag === '[number]' && /\d/.test(m[0]) && digits < 4) continue;
      add(m.index, m.index + m[0].length, tag);
    }
  }
  for (const name of names) {
    for (const part of name.split(/\s+/).filter((p) => p.length > 1)) {
      const re = new RegExp(`\\b${part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}\\b`, 'gi');
      for (const m of text.matchAll(re)) add(m.index, m.index + m[0].length, '[name]');
    }
  }
  ranges.sort((a, b) => a.from - b.from);
  let out = '';
  let pos = 0;
  for (const r of ranges) {
    out += text.slice(pos, r.from) + r.tag;
    pos = r.to;
  }
  out += text.slice(pos);
  return { text: out, ranges: ranges.map((r) => [r.from, r.to]) };
}

/** Redacts a transcript and lists the time spans to silence in the recording. */
export function redactTranscript(utterances: readonly Utterance[], options: RedactOptions = {}): RedactionResult {
  const spans: RedactedSpan[] = [];
  const pad = options.paddingMs ?? 400;
  const out = utterances.map((u) => {
    const r = redactText(u.text, options.names);
    if (r.ranges.length === 0) return { ...u };
    for (const [from, to] of r.ranges) {
      if (options.spans === 'estimate' && u.text.length > 0) {
        const dur = u.endMs - u.startMs;
        spans.push({
          startMs: Math.max(u.startMs, u.startMs + (dur * from) / u.text.length - pad),
          endMs: Math.min(u.endMs, u.startMs + (dur * to) / u.text.length + pad),
        });
      } else {
        spans.push({ startMs: u.startMs, endMs: u.endMs });
      }
    }
    return { ...u, text: r.text };
  });
  spans.sort((a, b) => a.startMs - b.startMs);
  const merged: RedactedSpan[] = [];
  for (const s of spans) {
    const last = merged.at(-1);
    if (last && s.startMs <= last.endMs) last.endMs = Math.max(last.endMs, s.endMs);
    else merged.push({ ...s });
  }
  return { utterances: out, spans: merged };
}
