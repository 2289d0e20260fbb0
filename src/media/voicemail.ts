/**
 * Voicemail detection for a call session (issue 24): whether a call runs it (an outbound phone
 * call whose agent has `enable_voicemail_detection`), and what it does on a machine, from the
 * agent's Retell fields: `voicemail_option.action`, else the older `voicemail_message` (static
 * text), else hang up. A `prompt` action has the server's LLM write the message; a server with no
 * LLM, or an LLM that fails within PROMPT_MESSAGE_TIMEOUT_MS, hangs up without one (the log says so).
 */
import type { AgentConfig } from '../domain/agent.ts';
import type { Call } from '../domain/call.ts';
import type { Logger } from '../lib/logger.ts';
import { type LlmProvider, chatText } from '../providers/llm.ts';
import { type CallVariables, renderTemplate, resolveVariables } from '../voice/index.ts';
import { type VoicemailAction, VoicemailGate, type VoicemailGateOptions } from '../voice/voicemail-gate.ts';
import { VOICEMAIL_TIMEOUT_BOUNDS_MS } from '../voice/voicemail-detector.ts';

/** The longest wait for the LLM to write a `prompt` action's message, ms. */
export const PROMPT_MESSAGE_TIMEOUT_MS = 10_000;
/** The longest voicemail message written by the LLM, characters. */
const MESSAGE_MAX_CHARS = 1_000;

/** The voicemail action an agent's settings ask for, its text with the call's variables filled in. */
export function voicemailAction(settings: AgentConfig, vars: CallVariables): VoicemailAction {
  const values = resolveVariables(undefined, vars);
  const action = settings.voicemail_option?.action;
  if (action?.type === 'static_text') return { type: 'static_text', text: renderTemplate(action.text, values) };
  if (action?.type === 'prompt') return { type: 'prompt', text: renderTemplate(action.text, values) };
  if (action?.type === 'hangup') return action;
  const message = settings.voicemail_message?.trim();
  return message ? { type: 'static_text', text: renderTemplate(message, values) } : { type: 'hangup' };
}

/** A gate for this call, or undefined when it runs no detection (not an outbound phone call, or detection off). */
export function voicemailGateFor(input: {
  call: Call;
  /** The call's audio rate (its endpoint's), Hz: the detector hears the audio at it. */
  sampleRateHz: 8000 | 16000;
  settings: AgentConfig;
  vars: CallVariables;
  llm: LlmProvider | undefined;
  log: Logger;
  hooks: Pick<VoicemailGateOptions, 'startSpeaker' | 'onMachine' | 'lastUserStartMs' | 'elapsedMs'>;
}): VoicemailGate | undefined {
  const { call, settings, llm, log } = input;
  if (call.call_type !== 'phone_call' || call.direction !== 'outbound' || settings.enable_voicemail_detection !== true) return undefined;
  const action = voicemailAction(settings, input.vars);
  if (action.type === 'prompt' && !llm) log.warn('voicemail_option is a prompt but this server has no LLM: a machine is hung up on without a message');
  return new VoicemailGate({
    ...input.hooks,
    timeoutMs: settings.voicemail_detection_timeout_ms ?? VOICEMAIL_TIMEOUT_BOUNDS_MS.default,
    sampleRateHz: input.sampleRateHz,
    action,
    ...(llm ? { writeMessage: (prompt: string, signal: AbortSignal) => writeMessage(llm, prompt, signal, log) } : {}),
    onDecision: (d) => log.info({ kind: d.kind, cue: d.cue, atMs: d.atMs }, 'voicemail detection'),
  });
}

async function writeMessage(llm: LlmProvider, prompt: string, signal: AbortSignal, log: Logger): Promise<string> {
  try {
    const text = await chatText(llm, {
      messages: [
        { role: 'system', content: 'You leave a voicemail message on an answering machine. Answer with only the words to say: at most three short sentences, no greeting to a machine, no stage directions.' },
        { role: 'user', content: prompt },
      ],
      temperature: 0,
      signal: AbortSignal.any([signal, AbortSignal.timeout(PROMPT_MESSAGE_TIMEOUT_MS)]),
    });
    return text.slice(0, MESSAGE_MAX_CHARS);
  } catch (error) {
    log.warn({ err: error }, 'the LLM did not write the voicemail message: the call hangs up without one');
    return '';
  }
}
