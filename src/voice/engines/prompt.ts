/**
 * How the agent talks on the phone: the line every system prompt the engines write ends with
 * (a flow's prompt instructions, the service LLM's states), before the call's language
 * (language.ts). Speech is synthesized as written, so the model is asked for short spoken
 * sentences instead of text meant to be read.
 */
export const SPOKEN_STYLE =
  'You are speaking on a phone call. Reply with one to three short spoken sentences: no lists, no markdown, no emojis.';
