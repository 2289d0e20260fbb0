import type WebSocket from 'ws';
import { wsDataToBuffer } from '../../lib/ws-data.ts';
import { parseBoundedJson } from '../../lib/bounded-json.ts';
import { ANY_LANGUAGE } from '../../lib/language-tags.ts';
import { ProviderError } from '../errors.ts';
import { entryPhones } from '../../lib/phonemes.ts';
import type { Pronunciation, SpokenWord, TtsCapabilities, TtsOptions, TtsProvider, TtsTextStream, VoiceInfo } from '../tts.ts';
import { WordTimeline } from '../streaming/word-timeline.ts';
import { AudioQueue, pcmFromBase64 } from '../streaming/audio-queue.ts';
import { closedFailure, openProviderSocket } from '../streaming/socket.ts';
import type { HostedVoice } from '../streaming/voice-table.ts';

/** ElevenLabs' API host, the default base URL (the socket's path is added to it). */
export const ELEVENLABS_BASE_URL = 'wss://api.elevenlabs.io';

/** Models that speak English only; the others are multilingual. */
const ENGLISH_ONLY_MODELS = new Set(['eleven_flash_v2', 'eleven_turbo_v2', 'eleven_monolingual_v1']);

export interface ElevenLabsOptions {
  /** ws:// or wss:// base URL; default ELEVENLABS_BASE_URL. */
  baseUrl?: string;
  /** Sent as `xi-api-key`. */
  apiKey?: string;
  /** e.g. 'eleven_flash_v2_5' (the default), 'eleven_turbo_v2_5'. */
  model: string;
  /** The voices offered: the premade ones and the account's own (TTS_VOICES). */
  voices: readonly HostedVoice[];
  /** Voice of agents created without a voice_id; one of `voices`. */
  defaultVoiceId: string;
  /** ElevenLabs' `optimize_streaming_latency` (0-4), sent where set. */
  optimizeStreamingLatency?: number;
  /** Connection timeout, ms; default 5 000. */
  connectTimeoutMs?: number;
  /** Longest wait for the next audio chunk, ms; default 10 000. */
  idleTimeoutMs?: number;
}

export function elevenLabsCapabilities(o: Pick<ElevenLabsOptions, 'model' | 'voices'>): TtsCapabilities {
  // `output_format=pcm_8000` gives a telephone-band call its rate from the source.
  return { streaming: true, languages: elevenLabsLanguages(o.model), voices: o.voices.map((v) => v.voiceId), outputSampleRates: [8_000] };
}

function elevenLabsLanguages(model: string): readonly string[] {
  return ENGLISH_ONLY_MODELS.has(model) ? ['en'] : [ANY_LANGUAGE];
}

interface ServerMessage {
  audio?: unknown;
  alignment?: { chars?: unknown; charStartTimesMs?: unknown; charDurationsMs?: unknown } | null;
  isFinal?: unknown;
  error?: unknown;
  message?: unknown;
}

/**
 * ElevenLabs text-to-speech over its stream-input WebSocket
 * (`/v1/text-to-speech/{voice_id}/stream-input`), one socket per sentence: the opening message
 * (`text: " "`, voice settings), the sentence with `try_trigger_generation` and `flush`, the
 * closing `text: ""`; the server answers with base64 `audio` chunks (raw 16 kHz PCM, asked as
 * `output_format=pcm_16000`; 8 kHz as `pcm_8000` when TtsOptions.sampleRateHz asks) and `isFinal`. Stopping early (barge-in) closes the socket, which
 * ends the generation.
 */
export class ElevenLabsTts implements TtsProvider {
  readonly id = 'elevenlabs';
  readonly #o: ElevenLabsOptions;
  readonly #byVoiceId: ReadonlyMap<string, HostedVoice>;

  constructor(options: ElevenLabsOptions) {
    this.#o = options;
    this.#byVoiceId = new Map(options.voices.map((v) => [v.voiceId, v]));
  }

  get defaultVoiceId(): string {
    return this.#o.defaultVoiceId;
  }

  get capabilities(): TtsCapabilities {
    return elevenLabsCapabilities(this.#o);
  }

  voices(): readonly VoiceInfo[] {
    return this.#o.voices.map((v) => ({
      voice_id: v.voiceId,
      voice_name: v.name,
      provider: 'elevenlabs',
      gender: v.gender,
      ...(v.accent ? { accent: v.accent } : {}),
      language: 'en-US',
      multilingual: !ENGLISH_ONLY_MODELS.has(this.#o.model),
      sample_rate_hz: 16_000,
      description: v.description,
    }));
  }

  languages(): readonly string[] {
    return elevenLabsLanguages(this.#o.model);
  }

  /** The socket URL of one voice, its audio raw PCM at `rateHz`. */
  #url(voice: HostedVoice, rateHz: number): URL {
    const base = (this.#o.baseUrl ?? ELEVENLABS_BASE_URL).replace(/\/+$/, '');
    const url = new URL(`${base}/v1/text-to-speech/${encodeURIComponent(voice.providerVoiceId)}/stream-input`);
    url.searchParams.set('model_id', this.#o.model);
    url.searchParams.set('output_format', `pcm_${String(rateHz)}`);
    if (this.#o.optimizeStreamingLatency !== undefined) url.searchParams.set('optimize_streaming_latency', String(this.#o.optimizeStreamingLatency));
    return url;
  }

  #open(voice: HostedVoice, signal: AbortSignal | undefined, rateHz: number): Promise<WebSocket> {
    return openProviderSocket({
      kind: 'tts',
      provider: this.id,
      url: this.#url(voice, rateHz),
      headers: this.#o.apiKey ? { 'xi-api-key': this.#o.apiKey } : {},
      connectTimeoutMs: this.#o.connectTimeoutMs ?? 5000,
      ...(signal ? { signal } : {}),
    });
  }

  /**
   * A reply streamed into one stream-input socket (issue 26): text goes as it is written, the
   * server's `chunk_length_schedule` deciding when to speak it, `flush: true` when asked to speak
   * at once, `text: ""` at the end; the `alignment` of each audio chunk gives the words' times.
   */
  openTextStream(options: TtsOptions = {}): TtsTextStream {
    const voice = this.#byVoiceId.get(options.voiceId ?? '') ?? this.#byVoiceId.get(this.#o.defaultVoiceId);
    const queue = new AudioQueue({ kind: 'tts', provider: this.id, idleTimeoutMs: this.#o.idleTimeoutMs ?? 10_000 });
    const timeline = new WordTimeline();
    let opening: Promise<WebSocket | undefined> = Promise.resolve(undefined);
    if (!voice) queue.fail(new ProviderError('tts', this.id, 'no voice configured'));
    else {
      const rateHz = options.sampleRateHz ?? 16_000;
      opening = this.#open(voice, options.signal, rateHz).then(
        (ws) => {
          listen(ws, queue, this.id, rateHz, timeline);
          ws.send(JSON.stringify({ text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.8, ...elevenLabsSpeed(options.speed) }, generation_config: { chunk_length_schedule: [50, 90, 120, 150] } }));
          return ws;
        },
        (e: unknown) => {
          queue.fail(e as Error);
          return undefined;
        },
      );
    }
    // Messages keep their order: each is sent once the socket is open, after the opening one.
    let sending: Promise<WebSocket | undefined> = opening;
    const send = (message: Record<string, unknown>): void => {
      sending = sending.then((ws) => {
        if (ws && ws.readyState === ws.OPEN) ws.send(JSON.stringify(message));
        return ws;
      });
    };
    let written = false;
    let ended = false;
    const pronunciations = options.pronunciations ?? [];
    return {
      write: (text) => {
        if (ended || !text) return;
        written = true;
        send({ text: withPhonemeTags(text, pronunciations) });
      },
      flush: () => {
        if (!ended && written) send({ text: ' ', flush: true });
      },
      end: () => {
        if (ended) return;
        ended = true;
        if (!written) {
          queue.end();
          return;
        }
        send({ text: ' ', flush: true });
        send({ text: '' });
      },
      audio: async function* () {
        try {
          yield* queue.read(options.signal);
        } finally {
          // Done, failed or stopped early (barge-in): the socket goes, and with it the generation.
          ended = true;
          void opening.then((ws) => ws?.terminate());
        }
      },
      words: (): readonly SpokenWord[] => timeline.words(),
    };
  }

  async *synthesize(text: string, options: TtsOptions = {}): AsyncIterable<Int16Array> {
    if (!text.trim()) return;
    const voice = this.#byVoiceId.get(options.voiceId ?? '') ?? this.#byVoiceId.get(this.#o.defaultVoiceId);
    if (!voice) throw new ProviderError('tts', this.id, 'no voice configured');
    const rateHz = options.sampleRateHz ?? 16_000;
    const ws = await this.#open(voice, options.signal, rateHz);
    const queue = new AudioQueue({ kind: 'tts', provider: this.id, idleTimeoutMs: this.#o.idleTimeoutMs ?? 10_000 });
    listen(ws, queue, this.id, rateHz);
    try {
      ws.send(JSON.stringify({ text: ' ', voice_settings: { stability: 0.5, similarity_boost: 0.8, ...elevenLabsSpeed(options.speed) } }));
      ws.send(JSON.stringify({ text: `${withPhonemeTags(text.trim(), options.pronunciations ?? [])} `, try_trigger_generation: true, flush: true }));
      ws.send(JSON.stringify({ text: '' }));
      yield* queue.read(options.signal);
    } finally {
      // Done, failed or stopped early (barge-in): the socket goes, and with it the generation.
      ws.terminate();
    }
  }
}

/** Routes the server's messages of one synthesis (PCM at `rateHz`) into `queue`, and the audio's alignment into `timeline`. */
function listen(ws: WebSocket, queue: AudioQueue, provider: string, rateHz: number, timeline?: WordTimeline): void {
  let carry: Buffer = Buffer.alloc(0);
  /** Samples received before the current chunk: an alignment's times start at its own chunk. */
  let samples = 0;
  ws.on('message', (data, isBinary) => {
    if (isBinary || queue.settled) return;
    // The server's messages are a peer's: bounded, and every field checked before use.
    const parsed = parseBoundedJson(wsDataToBuffer(data).toString('utf8'));
    if (!parsed.ok || typeof parsed.value !== 'object' || parsed.value === null) {
      queue.fail(new ProviderError('tts', provider, 'unreadable message from the server', { retryable: true }));
      return;
    }
    const m = parsed.value as ServerMessage;
    if (typeof m.audio === 'string' && m.audio.length > 0) {
      const decoded = pcmFromBase64(m.audio, carry);
      carry = decoded.carry;
      if (timeline && m.alignment && typeof m.alignment === 'object') timeline.addChars(m.alignment.chars, m.alignment.charStartTimesMs, m.alignment.charDurationsMs, (samples * 1000) / rateHz);
      samples += decoded.samples.length;
      queue.push(decoded.samples);
    } else if (m.isFinal !== true && (typeof m.error === 'string' || typeof m.message === 'string')) {
      // An error message ({ message, error, code }) comes before the server closes the socket.
      const why = (typeof m.error === 'string' ? m.error : String(m.message)).slice(0, 200);
      queue.fail(new ProviderError('tts', provider, `the server refused the synthesis: ${why}`, { retryable: false }));
    }
    if (m.isFinal === true) queue.end();
  });
  ws.on('error', (e) => queue.fail(new ProviderError('tts', provider, 'socket error', { retryable: true, cause: e })));
  ws.on('close', (code, reason) => queue.fail(closedFailure('tts', provider, code, reason)));
}

/**
 * ElevenLabs' `voice_settings.speed` takes 0.7 to 1.2: the agent's voice_speed (0.5 to 2) is
 * clipped there (docs/providers.md#speaking-rate); nothing is sent at the voice's own rate.
 */
export function elevenLabsSpeed(speed: number | undefined): { speed?: number } {
  if (speed === undefined || speed === 1) return {};
  return { speed: Math.min(1.2, Math.max(0.7, speed)) };
}

/**
 * The text with each dictionary word wrapped in ElevenLabs' phoneme tag in CMU ARPAbet (IPA
 * converted, lib/phonemes.ts), matched whole and in any case. ElevenLabs reads the tags on its
 * English Flash and Turbo v2 models and skips them on the others.
 */
export function withPhonemeTags(text: string, entries: readonly Pronunciation[]): string {
  const tags = new Map<string, string>();
  for (const e of entries) {
    const parsed = entryPhones(e.alphabet, e.phoneme);
    if (parsed && 'phones' in parsed && /^[\p{L}\p{N}'-]+$/u.test(e.word)) tags.set(e.word.toLowerCase(), parsed.phones.join(' '));
  }
  if (tags.size === 0) return text;
  return text.replace(/[\p{L}\p{N}][\p{L}\p{N}'-]*/gu, (word) => {
    const ph = tags.get(word.toLowerCase());
    return ph ? `<phoneme alphabet="cmu-arpabet" ph="${ph}">${word}</phoneme>` : word;
  });
}
