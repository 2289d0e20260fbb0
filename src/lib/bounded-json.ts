/**
 * The one rule for JSON from an outside party (a custom-LLM server, a function backend, a speech
 * or language-model provider, a media client): parsed with a bound on its nesting and its size,
 * and refused beyond them. V8 parses any depth, but serialising a value nested a few thousand
 * levels deep (JSON.stringify, a log line, a structured clone) overflows the stack; a value that
 * passed this bound can be serialised again safely.
 */

/** How deep arrays and objects may nest (the value itself is level 0); the HTTP edge's bound too. */
export const MAX_JSON_DEPTH = 64;

export interface JsonBounds {
  /** Default MAX_JSON_DEPTH. */
  maxDepth?: number;
  /** Longest text taken, in UTF-16 code units (about bytes for JSON); default no bound here (the transport bounds it). */
  maxChars?: number;
}

export type BoundedJson = { ok: true; value: unknown } | { ok: false; problem: string };

/**
 * Parses `text` as JSON within `bounds`. Never throws: what is not JSON, nests deeper than
 * `maxDepth` or is longer than `maxChars` comes back as `{ok: false, problem}`, the problem in
 * words for a log or an error message ("nests more than 64 levels deep").
 */
export function parseBoundedJson(text: string, bounds: JsonBounds = {}): BoundedJson {
  if (bounds.maxChars !== undefined && text.length > bounds.maxChars) return { ok: false, problem: `is longer than ${bounds.maxChars} characters` };
  const maxDepth = bounds.maxDepth ?? MAX_JSON_DEPTH;
  if (nestsDeeperThan(text, maxDepth)) return { ok: false, problem: `nests more than ${maxDepth} levels deep` };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, problem: 'is not JSON' };
  }
}

/**
 * True when the JSON text opens more than `maxDepth` nested arrays or objects (brackets inside
 * strings do not count). One pass, no recursion, no allocation: about 1 ms per MB.
 */
export function nestsDeeperThan(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
      continue;
    }
    if (c === 0x22) inString = true;
    else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > maxDepth + 1) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) depth--;
  }
  return false;
}
