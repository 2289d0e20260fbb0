/**
 * `npm run -s cli -- call` and `join`: join a web call (one the CLI creates over HTTP, or one
 * created through the API, by its access token), stream a WAV in real time (or silence), stay
 * until the agent hangs up (or hang up `lingerMs` after the WAV and the agent's last activity),
 * and return what the client saw. Each finished utterance and node change is reported as it
 * happens (`onLine`), so a person sees the conversation live. Client side only: speaks HTTP and
 * the media protocol.
 */
import fs from 'node:fs/promises';
import { type ClientEvent, WebCallClient, readWav, type TranscriptLine } from './web-call-client.ts';

export interface CallCommandOptions {
  baseUrl: string;
  apiKey: string;
  agentId: string;
  wavFile: string;
  /** Where to write the agent's audio (16 kHz mono WAV). */
  outFile?: string;
  /** Quiet time after the WAV (no agent audio or event) before the client hangs up, ms; default 5 000. */
  lingerMs?: number;
  /** Called with each line of the live conversation (`agent: ...`, `user: ...`, `node: a -> b`). */
  onLine?: (line: string) => void;
  /** How the call is carried: `websocket` (default) or `webrtc` (Opus over UDP). */
  transport?: Transport;
}

/** The CLI's `--transport`. */
export type Transport = 'websocket' | 'webrtc';

export interface JoinCommandOptions {
  baseUrl: string;
  /** The call's `access_token` from create-web-call (single use, valid 30 s). */
  accessToken: string;
  /** What to say; without it the client sends silence until the agent ends the call or `stop` resolves. */
  wavFile?: string;
  outFile?: string;
  lingerMs?: number;
  onLine?: (line: string) => void;
  /** Hangs up when it resolves (the CLI: on Ctrl-C). */
  stop?: Promise<void>;
  transport?: Transport;
}

export interface CallCommandResult {
  call_id: string;
  call_status: string;
  disconnection_reason: string;
  transcript: TranscriptLine[];
}

export class CallCommandError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

/** Creates a web call on `agentId`, then talks to it as `join` does with the WAV. */
export async function runCallCommand(o: CallCommandOptions): Promise<CallCommandResult> {
  // Refuses unreadable or unsupported files before any call exists.
  const audio = await loadWav(o.wavFile);
  const res = await fetch(`${o.baseUrl.replace(/\/+$/, '')}/v2/create-web-call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: o.agentId }),
  }).catch((e: unknown) => {
    throw new CallCommandError('connection_failed', `cannot reach ${o.baseUrl}: ${e instanceof Error ? e.message : String(e)}`);
  });
  const body = (await res.json().catch(() => ({}))) as { call_id?: string; access_token?: string; code?: string; message?: string };
  if (res.status !== 201 || !body.access_token || !body.call_id) {
    throw new CallCommandError(body.code ?? `http_${res.status}`, `create-web-call answered ${res.status}: ${body.message ?? 'no message'}`);
  }
  return converse({ baseUrl: o.baseUrl, accessToken: body.access_token, audio, outFile: o.outFile, lingerMs: o.lingerMs, onLine: o.onLine, transport: o.transport });
}

/** Joins a call created through the API by its access token: the WAV, or silence. */
export async function runJoinCommand(o: JoinCommandOptions): Promise<CallCommandResult> {
  const audio = o.wavFile === undefined ? null : await loadWav(o.wavFile);
  return converse({ ...o, audio });
}

async function loadWav(file: string): Promise<Int16Array> {
  try {
    return readWav(await fs.readFile(file));
  } catch (e) {
    throw new CallCommandError('bad_wav', `${file}: ${e instanceof Error ? e.message : String(e)}`);
  }
}

async function converse(o: { baseUrl: string; accessToken: string; audio: Int16Array | null; outFile?: string; lingerMs?: number; onLine?: (line: string) => void; stop?: Promise<void>; transport?: Transport | undefined }): Promise<CallCommandResult> {
  const printer = new ConversationPrinter(o.onLine ?? (() => undefined));
  const client = await WebCallClient.join({ url: o.baseUrl, accessToken: o.accessToken, onEvent: (event) => printer.event(event), transport: o.transport ?? 'websocket' });
  let endedEarly = false;
  void client.ended.then(() => (endedEarly = true));
  let stopped = false;
  void o.stop?.then(() => {
    stopped = true;
    if (!endedEarly) void client.hangup();
  });
  if (o.audio === null) {
    // Silence (the client sends it whenever nothing is queued) until the call ends or `stop`.
    await client.ended;
  } else {
    await Promise.race([client.play(o.audio), client.ended]);
    if (!endedEarly && !stopped) {
      const linger = o.lingerMs ?? 5_000;
      // Wait while the agent is still answering; hang up after `linger` ms of quiet.
      for (;;) {
        const lastActivity = Math.max(client.agentAudio.at(-1)?.atMs ?? 0, client.events.at(-1)?.atMs ?? 0);
        const quietFor = client.now() - lastActivity;
        if (endedEarly || stopped) break;
        if (quietFor >= linger) {
          await Promise.race([client.hangup(), sleep(10_000)]);
          break;
        }
        await Promise.race([sleep(Math.min(250, linger - quietFor)), client.ended]);
      }
    }
  }
  const end = await Promise.race([client.ended, sleep(15_000).then(() => null)]);
  if (!end) client.drop();
  printer.finish(client.transcript);
  if (o.outFile) await client.saveAgentWav(o.outFile);
  return {
    call_id: client.callId,
    call_status: end?.call_status ?? 'unknown',
    disconnection_reason: end?.disconnection_reason ?? 'no_call_ended_event',
    transcript: client.transcript,
  };
}

/**
 * Turns the server's events into lines a person reads: each utterance once it is final (an
 * `update` carries the whole transcript; every entry but the last is final), and node changes.
 */
export class ConversationPrinter {
  readonly #onLine: (line: string) => void;
  #transcript: TranscriptLine[] = [];
  #printed = 0;

  constructor(onLine: (line: string) => void) {
    this.#onLine = onLine;
  }

  event(event: ClientEvent): void {
    if (event.type === 'update') {
      this.#transcript = event.transcript;
      this.#print(event.transcript, event.transcript.length - 1);
    }
    if (event.type === 'node_transition') {
      // A transition follows the end of a turn: what was said so far is final.
      this.#print(this.#transcript, this.#transcript.length);
      this.#onLine(`node: ${event.from ?? '(start)'} -> ${event.to}`);
    }
  }

  /** Prints what is left once the call is over. */
  finish(transcript: TranscriptLine[]): void {
    this.#print(transcript, transcript.length);
  }

  #print(transcript: TranscriptLine[], upTo: number): void {
    for (; this.#printed < upTo; this.#printed++) {
      const line = transcript[this.#printed];
      if (line) this.#onLine(`${line.role}: ${line.content}${line.cut_off ? ' [cut off]' : ''}`);
    }
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
