/// <reference lib="es2024.string" />
/**
 * Text the service writes itself (what a caller said, what an engine or a backend answered) must
 * be storable on both stores: PostgreSQL text cannot hold U+0000, and a lone UTF-16 surrogate is
 * not Unicode. Requests with such text are refused at the edge (src/http/input-guard.ts); text
 * produced during a call is made storable instead, since refusing it would lose the call's record.
 */
export function storableText(text: string): string {
  const noNul = text.includes('\u0000') ? text.replaceAll('\u0000', '\uFFFD') : text;
  return noNul.isWellFormed() ? noNul : noNul.toWellFormed();
}
