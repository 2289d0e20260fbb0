/**
 * One agent reply, from the engine's output to the caller's ears: the engine's text in sentences,
 * synthesized and pushed to the playout, function-call records placed where the audio reaches
 * them, and, once it has played (or was cut off), what the caller heard kept in the transcript
 * with the reply's latency. A reply prepared ahead (a preemptive reply) is synthesized up to its
 * first audio and waits there until its turn is confirmed.
 */
import type { Scheduler } from '../lib/scheduler.ts';
import type { SpeechStyle, SpokenWord, TtsProvider } from '../providers/tts.ts';
import { wordsHeard } from '../providers/streaming/word-timeline.ts';
import { fallbackVoiceOf } from './voice-fallback.ts';
import { ProviderError, isAbortError } from '../providers/errors.ts';
import { FRAME_MS, Framer } from './frames.ts';
import { EngineError, type EngineHangup, type EngineOutput, type EngineTiming, type RespondOptions, type ResponseEngine, type ToolCallRecord } from './engines/types.ts';
import type { FailureReason } from './pipeline.types.ts';
import { abortable } from '../lib/abortable.ts';
import type { TurnLatency } from './latency.ts';
import { turnTrace, type TurnMarks, type TurnTrace } from './turn-trace.ts';
import type { TimedToolCall, Utterance } from './transcript.ts';
import type { PacedPlayout } from './playout.ts';
import { sentenceStage } from './stages/engine.stage.ts';
import { ttsStage, type TtsEvent } from './stages/tts.stage.ts';
import { textStreamStage } from './stages/text-stream.stage.ts';

/** When a user turn ended (its last voiced frame) and when its final transcript came, on the pipeline clock. */
export interface TurnTiming {
  speechEndAt: number;
  transcriptAt: number;
  /** The turn's other marks, for its reply's trace (turn-trace.ts). */
  marks?: TurnMarks;
}

/** A reply held back until its turn is confirmed (preemptive replies). */
export interface HeldReply {
  ctrl: AbortController;
  confirmed: Promise<TurnTiming>;
  onOpen: () => void;
}

/** What a reply asks of the pipeline it runs in. */
export interface ReplyHost {
  readonly engine: ResponseEngine;
  readonly tts: TtsProvider;
  /** Samples in one 20 ms frame of the call's audio (the synthesiser gives the call's rate). */
  readonly frameSamples: number;
  readonly voiceId: string | undefined;
  /** Gain on the agent's speech (the agent's `volume`); undefined: as synthesized. */
  readonly volume?: number;
  /** Numbers, dates and times spoken as words (the agent's `normalize_for_speech`). */
  readonly normaliseForSpeech?: boolean;
  /** Speaking rate and pronunciations for the synthesiser (the agent's `voice_speed`, `pronunciation_dictionary`). */
  readonly speech?: SpeechStyle;
  readonly playout: PacedPlayout;
  /** The pipeline's own signal: aborted when the call is closed. */
  readonly signal: AbortSignal;
  /** The pipeline's clock and timers (its monotonic time; the idle flush of streamed text). */
  readonly time: Scheduler;
  elapsedMs(): number;
  closed(): boolean;
  /** A function-call record the engine reported, at `atMs` (the call's record keeps it, within its budget). */
  toolCall(record: ToolCallRecord, atMs: number): TimedToolCall | undefined;
  /** What the caller heard of a reply, for the transcript. */
  heard(utterance: Utterance): void;
  latency(record: TurnLatency): void;
  /** Where the reply's time went, after its latency record (diagnostics: turn-trace.ts). */
  turnTrace?(trace: TurnTrace): void;
  /** The reply failed (not aborted): the call ends with `reason`. */
  failed(reason: FailureReason, error: unknown): void;
  /** The engine hung up (or transferred the call) once the reply had played: the call ends `agent_hangup` (or `call_transfer`). */
  hangup(ending: EngineHangup): void | Promise<void>;
}

/** The state of one reply while it runs. */
interface Reply {
  ctrl: AbortController;
  sentences: string[];
  /** Frames queued per sentence, in order: the reply's audio is their concatenation. */
  queued: number[];
  /** The engine reported function calls during this reply: its utterance keeps its sentences' times. */
  hadToolCalls: boolean;
  /** Calls placed after audio that had not played yet, with when they really happened. */
  placed: Array<{ call: TimedToolCall; happenedMs: number }>;
  /** When the caller cut the reply off, ms since the pipeline started, and how much had been played then. */
  cutAtMs: number | undefined;
  cutPlayedFrames: number;
  synthesisDone: boolean;
  cutOff: boolean;
  startedAt: number | undefined;
  startMs: number;
  /** A reply streamed into one generation: the words the provider spoke, with their times in its audio. */
  words?: () => readonly SpokenWord[];
}

/** The replies of one pipeline, one playing at a time. */
export class Replies {
  readonly #h: ReplyHost;
  /** The reply whose audio is (or is about to be) playing. */
  #current: Reply | undefined;

  constructor(host: ReplyHost) {
    this.#h = host;
  }

  /** A reply is playing or about to: speech over it may interrupt it. */
  get active(): boolean {
    return this.#current !== undefined;
  }

  /** The playout began the current reply's audio; returns when (ms since the pipeline started). */
  started(): number | undefined {
    const r = this.#current;
    if (!r) return undefined;
    r.startedAt = this.#h.time.now();
    r.startMs = this.#h.elapsedMs();
    return r.startMs;
  }

  /** Barge-in: the current reply is cut off where the caller is in it. */
  interrupt(): void {
    const r = this.#current;
    if (!r || r.cutOff) return;
    r.cutOff = true;
    r.cutAtMs = this.#h.elapsedMs();
    r.cutPlayedFrames = Math.floor(this.#h.playout.playedMs() / FRAME_MS);
    r.ctrl.abort();
    this.#h.playout.clear();
  }

  /** The call is ending: the current reply stops producing (what was sent still plays out). */
  abort(): void {
    this.#current?.ctrl.abort();
  }

  /**
   * The call ends while a reply plays (a hang-up, a lost caller...): what was heard stays in the
   * transcript, marked cut off unless all of it had been played, as a barge-in keeps it.
   */
  keepSpokenPart(): void {
    const r = this.#current;
    if (!r || r.startedAt === undefined) return;
    // Exactly one of this and `run` records a reply: `run` records it only while not closed.
    const played = Math.floor(this.#h.playout.playedMs() / FRAME_MS);
    const complete = r.synthesisDone && played >= total(r.queued);
    if (!complete && !r.cutOff) {
      r.cutOff = true;
      r.cutPlayedFrames = played;
    }
    const heard = heardText(r);
    if (!heard) return;
    this.#h.heard({
      role: 'agent', text: heard, startMs: r.startMs, endMs: this.#h.elapsedMs(),
      ...(r.cutOff ? { cutOff: true } : {}),
      ...(r.hadToolCalls ? { sentences: timedSentences(r) } : {}),
    });
  }

  /**
   * Runs one reply: the engine's output, synthesized and pushed to the playout. A `held` reply
   * (preemptive) is prepared up to its first audio and waits there for its turn to be confirmed;
   * it becomes the current reply only then, and returns without a trace if dropped.
   */
  async run(userText: string | undefined, turnTiming: TurnTiming | undefined, unprompted = false, held?: HeldReply, userWords?: RespondOptions['words']): Promise<void> {
    const h = this.#h;
    let turn = turnTiming;
    const ctrl = held?.ctrl ?? new AbortController();
    const signal = AbortSignal.any([ctrl.signal, h.signal]);
    const reply: Reply = {
      ctrl, sentences: [], queued: [], hadToolCalls: false, placed: [], cutAtMs: undefined, cutPlayedFrames: 0,
      synthesisDone: false, cutOff: false, startedAt: undefined, startMs: 0,
    };
    let opened = false;
    const open = async (): Promise<void> => {
      if (opened) return;
      if (held) {
        turn = await abortable(held.confirmed, signal);
        held.onOpen();
      }
      opened = true;
      this.#current = reply;
      h.playout.open();
    };
    if (!held) await open();
    const engineStart = h.time.now();
    const marks: { firstText?: number; synthStart?: number; firstAudio?: number } = {};
    let hangup: EngineHangup | undefined;
    let functionMs = 0;
    let contextMs: number | undefined;
    const framer = new Framer(h.frameSamples);
    try {
      const engine = h.engine;
      const respondOptions: RespondOptions = {
        ...(held ? { confirmed: held.confirmed.then(() => undefined) } : {}),
        ...(userWords ? { words: userWords } : {}),
        // The reference material found for the turn (engines/context.ts): its own latency figure.
        onTiming: (timing: EngineTiming) => {
          if (timing.stage === 'context') contextMs = timing.ms;
        },
      };
      const outputs: AsyncIterable<EngineOutput> =
        userText !== undefined ? engine.respond(userText, signal, respondOptions) : unprompted && engine.unprompted ? engine.unprompted(signal) : engine.begin(signal);
      // Text goes to the synthesiser as it streams where the voice's provider takes it so
      // (issue 26); numbers spoken as words need whole sentences, so normalised speech keeps them.
      const stream = h.normaliseForSpeech ? undefined : h.tts.openTextStream?.({ ...(h.voiceId ? { voiceId: h.voiceId } : {}), ...h.speech, signal });
      let audio: AsyncIterable<TtsEvent>;
      if (stream) {
        reply.words = () => stream.words();
        audio = textStreamStage(outputs, stream, {
          signal,
          time: h.time,
          provider: h.tts.id,
          ...(h.volume !== undefined ? { volume: h.volume } : {}),
          onFirstText: () => (marks.firstText = h.time.now()),
          onSynthesisStart: () => (marks.synthStart = h.time.now()),
          onFirstAudio: () => (marks.firstAudio = h.time.now()),
        });
      } else {
        const pieces = sentenceStage(outputs, () => (marks.firstText = h.time.now()), h.time);
        audio = ttsStage(pieces, h.tts, {
          ...(h.voiceId ? { voiceId: h.voiceId } : {}),
          ...(h.volume !== undefined ? { volume: h.volume } : {}),
          normalise: h.normaliseForSpeech === true,
          ...h.speech,
          signal,
          onSynthesisStart: () => (marks.synthStart = h.time.now()),
          onFirstAudio: () => (marks.firstAudio = h.time.now()),
        });
      }
      for await (const ev of audio) {
        if (signal.aborted) break;
        if (ev.type !== 'sentence_start' && ev.type !== 'sentence_text') await open();
        if (ev.type === 'hangup') hangup ??= ev;
        else if (ev.type === 'tool_call_invocation' || ev.type === 'tool_call_result') {
          // A round trip the reply waited for before it had anything to say delays it.
          if (ev.type === 'tool_call_result' && ev.delayMs !== undefined && marks.firstText === undefined) functionMs += ev.delayMs;
          // Placed where the reply's audio reaches it: after the sentences already synthesized.
          reply.hadToolCalls = true;
          const before = reply.sentences.length;
          const atMs = before > 0 && reply.startedAt !== undefined ? reply.startMs + framesBefore(reply, before) * FRAME_MS : h.elapsedMs();
          const call = h.toolCall(ev, atMs);
          if (call && atMs > h.elapsedMs()) reply.placed.push({ call, happenedMs: h.elapsedMs() });
        } else if (ev.type === 'sentence_start') {
          reply.sentences[ev.index] = ev.text;
          reply.queued[ev.index] = 0;
        } else if (ev.type === 'sentence_text') {
          reply.sentences[ev.index] = ev.text;
          reply.queued[ev.index] ??= 0;
        } else {
          for (const pcm of framer.push(ev.pcm)) {
            if (signal.aborted) break;
            reply.queued[ev.index] = (reply.queued[ev.index] ?? 0) + 1;
            await h.playout.push(pcm);
          }
        }
      }
      if (!signal.aborted) {
        await open();
        for (const pcm of framer.flush()) {
          const last = reply.sentences.length - 1;
          reply.queued[last] = (reply.queued[last] ?? 0) + 1;
          await h.playout.push(pcm);
        }
      }
    } catch (e) {
      // A held reply that fails is dropped: the confirmed turn is answered anew.
      if (opened && !signal.aborted && !isAbortError(e)) {
        h.failed(failureReason(e), e);
        return;
      }
    }
    if (!opened) return;
    reply.synthesisDone = true;
    if (!reply.cutOff && !h.closed()) {
      h.playout.finish();
      await h.playout.drained();
    }
    if (this.#current === reply) this.#current = undefined;
    if (h.closed()) return;
    // A call placed after audio the caller cut off was never reached: it goes back to when it happened.
    for (const p of reply.placed) if (reply.cutAtMs !== undefined && p.call.atMs > reply.cutAtMs) p.call.atMs = p.happenedMs;
    const heard = heardText(reply);
    if (heard) {
      h.engine.agentSpoke(heard, reply.cutOff);
      h.heard({
        role: 'agent',
        text: heard,
        startMs: reply.startMs,
        endMs: h.elapsedMs(),
        ...(reply.cutOff ? { cutOff: true } : {}),
        ...(reply.hadToolCalls ? { sentences: timedSentences(reply) } : {}),
        ...(fallbackVoiceOf(h.tts) ? { voiceId: fallbackVoiceOf(h.tts) } : {}),
      });
    }
    if (turn && reply.startedAt !== undefined) {
      const lat: TurnLatency = {
        e2eMs: Math.max(0, reply.startedAt - turn.speechEndAt),
        asrMs: Math.max(0, turn.transcriptAt - turn.speechEndAt),
        llmMs: marks.firstText !== undefined ? Math.max(0, marks.firstText - engineStart) : 0,
        ttsMs: marks.firstAudio !== undefined && marks.synthStart !== undefined ? Math.max(0, marks.firstAudio - marks.synthStart) : 0,
      };
      if (functionMs > 0) lat.functionMs = Math.round(functionMs);
      if (contextMs !== undefined) lat.contextMs = Math.round(contextMs);
      h.latency(lat);
      if (turn.marks) h.turnTrace?.(turnTrace({ ...turn, marks: turn.marks }, { engineAt: engineStart, firstTextAt: marks.firstText, firstAudioAt: marks.firstAudio, startedAt: reply.startedAt }, lat));
    }
    if (hangup) await h.hangup(hangup);
  }
}

/**
 * The reason a failed reply ends the call with: the engine's (EngineError) or the provider's
 * kind (ProviderError: synthesis failures are wrapped as such by the TTS stage); anything else is
 * an error nobody expected, `error_unknown`, never blamed on a provider.
 */
function failureReason(e: unknown): FailureReason {
  if (e instanceof EngineError) return 'error_llm';
  if (e instanceof ProviderError) return e.kind === 'asr' ? 'error_asr' : e.kind === 'llm' ? 'error_llm' : 'error_tts';
  return 'error_unknown';
}

function total(counts: readonly number[]): number {
  let n = 0;
  for (const c of counts) n += c ?? 0;
  return n;
}

/** What the caller heard: whole sentences played, plus the played share of the sentence cut. */
function heardText(r: Reply): string {
  return heardSentences(r).filter(Boolean).join(' ').trim();
}

/** Frames queued for the reply's sentences before sentence `index` (its offset in the reply's audio). */
function framesBefore(r: Reply, index: number): number {
  let n = 0;
  for (let i = 0; i < index; i++) n += r.queued[i] ?? 0;
  return n;
}

/** The heard sentences of a reply, each with when it began to play (ms since the pipeline started). */
function timedSentences(r: Reply): Array<{ text: string; startMs: number }> {
  return heardSentences(r).flatMap((text, i) => (text ? [{ text, startMs: r.startMs + framesBefore(r, i) * FRAME_MS }] : []));
}

/**
 * What was heard of each sentence of a reply: all of them, or up to the played position where it
 * was cut off. A streamed reply is cut where the provider's word times put the played position
 * (the words the provider spoke, counted against the words written); without them, and for
 * sentences synthesised one by one, by the played share of the sentence cut.
 */
function heardSentences(r: Reply): string[] {
  if (!r.cutOff) return r.sentences.map((s) => s ?? '');
  const spoken = r.words?.() ?? [];
  if (spoken.length > 0) {
    const n = wordsHeard(spoken, r.cutPlayedFrames * FRAME_MS);
    return [(r.sentences[0] ?? '').split(/\s+/).filter(Boolean).slice(0, n).join(' ')];
  }
  const parts: string[] = [];
  let before = 0;
  for (let i = 0; i < r.sentences.length; i++) {
    const text = r.sentences[i] ?? '';
    const queued = r.queued[i] ?? 0;
    const heard = Math.max(0, Math.min(queued, r.cutPlayedFrames - before));
    before += queued;
    if (heard === 0) break;
    if (heard >= queued && i < r.sentences.length - 1) {
      parts.push(text);
      continue;
    }
    const ws = text.split(/\s+/).filter(Boolean);
    const n = Math.max(1, Math.floor((ws.length * heard) / Math.max(queued, 1)));
    parts.push(ws.slice(0, n).join(' '));
    break;
  }
  return parts;
}
