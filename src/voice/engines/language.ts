/**
 * The line of an engine's system prompt that names the call's language, so a model answers in the
 * language the caller speaks and the recogniser and voice were chosen for: 'pt-BR' gives "The
 * caller speaks Brazilian Portuguese (pt-BR): always reply in Brazilian Portuguese."
 */
export function languageInstruction(tag: string): string {
  let name = tag;
  try {
    name = new Intl.DisplayNames(['en'], { type: 'language' }).of(tag) ?? tag;
  } catch {
    // A tag Intl cannot name is passed as it is: the model knows BCP-47.
  }
  return `The caller speaks ${name} (${tag}): always reply in ${name}.`;
}
