/**
 * The call endpoint port: what a call session speaks to, whatever carries the call (the web
 * call's WebSocket, an in-process loopback, WebRTC and the phone). The session sends the agent's
 * audio (20 ms frames at the endpoint's `sampleRate`: the endpoint encodes it for its wire), clears it on barge-in,
 * tells neutral events and ends the call with a reason; the endpoint hands back the caller's audio
 * and what the caller did (hung up, was lost, flooded). A transport is a folder that implements
 * this port (docs/architecture.md, "Add a transport"); the session, the pipeline and the engines
 * never import a transport or a wire protocol, and this file imports nothing from `protocol/`.
 */
import type { DisconnectionReason } from '../domain/call-status.ts';
import type { CallMedia } from '../domain/call.ts';
import type { CallSampleRate } from '../voice/frames.ts';

/** The wideband rate of the port: 16-bit mono PCM at 16 kHz (WebSocket, WebRTC's Opus, SIP's Opus, loopback). */
export const ENDPOINT_SAMPLE_RATE = 16_000;
/** The telephone band's rate: G.711 over SIP and Twilio's μ-law streams carry it, and their calls run at it end to end. */
export const TELEPHONE_SAMPLE_RATE = 8_000;

/** One utterance of the live transcript as events carry it. */
export interface TranscriptLine {
  role: 'agent' | 'user';
  text: string;
  /** True when the agent's reply was cut off. */
  cutOff?: boolean;
}

/** What the session tells the endpoint, in order; each endpoint maps these to its own wire. */
export type CallEvent =
  /** The call runs: audio may flow. */
  | { type: 'started'; callId: string; agentId: string; agentVersion: number; agentName: string | null }
  /** The agent's audio for one reply begins (`utteranceId`: `utt_1`, `utt_2`, ... per call). */
  | { type: 'agent_talking'; utteranceId: string }
  /** The reply's audio ended, or the caller cut it off (after `clear()`). */
  | { type: 'agent_done'; utteranceId: string; cutOff: boolean }
  /** The transcript changed: every final utterance so far (the endpoint keeps what its wire shows). */
  | { type: 'transcript'; lines: readonly TranscriptLine[] }
  /** What the recogniser has heard so far of the caller's utterance (it may still change), after the final lines. */
  | { type: 'interim'; lines: readonly TranscriptLine[]; text: string }
  /** The conversation moved (a flow's node); `from` is null when there was none before. */
  | { type: 'node_changed'; from: string | null; to: string }
  /** Data the agent's own server sent for the caller's page (a custom LLM's `metadata` event): any JSON value. */
  | { type: 'metadata'; metadata: unknown }
  /** A failure the caller is told of (its code is a disconnection reason, or `bad_message` and the like); the end follows. */
  | { type: 'error'; code: string; message: string };

/** How a call ended, as the endpoint tells its caller. */
export interface CallEnding {
  reason: DisconnectionReason;
  /** `error` when the reason is a failure (`error_*`). */
  status: 'ended' | 'error';
}

/** What an endpoint hands back to the session it carries; each method may be called from any I/O callback. */
export interface EndpointSink {
  /** The caller's audio: mono PCM at the endpoint's `sampleRate`, any length, in order. */
  audio(pcm: Int16Array): void;
  /** Keypad digits the caller pressed (phone endpoints), in order. */
  dtmf?(digits: string): void;
  /** The caller ended the call on purpose. */
  hangup(): void;
  /** The connection to the caller was lost. */
  lost(): void;
  /** The caller sent far faster than real time; the endpoint stopped reading it. */
  flood(): void;
}

/**
 * One caller's connection, as a session sees it. Its `attach` is called once, as soon as the
 * call's session has made its pipeline (which queues the caller's audio while its recogniser
 * opens); before that, while the call is admitted, the endpoint holds what the caller sends (a
 * carrier's stream: the latest 1 s) or the caller has not been told to send yet (`call_started`).
 */
export interface CallEndpoint {
  /** How the call is carried (`websocket`, `loopback`, ...): the call's record and logs name it. */
  readonly transport: string;
  /**
   * The rate of the port's audio both ways, Hz, and so of the call's whole pipeline: the rate of
   * what the wire carries where the pipeline takes it (8000 for G.711 and Twilio's μ-law, which no
   * step resamples to 16 kHz; 16000 for the WebSocket, Opus and the loopback).
   */
  readonly sampleRate: CallSampleRate;
  /** Starts handing the caller's audio and actions to `sink`. */
  attach(sink: EndpointSink): void;
  /** One event for the caller. */
  send(event: CallEvent): void;
  /** One piece of agent audio (mono PCM at `sampleRate`, usually a 20 ms frame), paced at real time by the session; the endpoint bounds what it queues. */
  playAudio(pcm: Int16Array): void;
  /**
   * How far the session may send agent audio ahead of real time, ms, where the wire has its own
   * receive buffer (WebRTC's jitter buffer: 40); absent, the pipeline's default (80) stands. Audio
   * sent ahead is what the caller still hears after a barge-in.
   */
  readonly outputLeadMs?: number;
  /**
   * How long the far end plays audio after it has arrived (a phone's jitter buffer), ms, where the
   * endpoint cannot see what was played: when the call ends on our side, the session waits it
   * after the output lead before the endpoint hangs up (a SIP BYE stops the phone's playout).
   * Absent: 0.
   */
  readonly farEndPlayoutMs?: number;
  /**
   * How far the caller's audio may arrive behind the call's clock before the pipeline takes the
   * time between for a gap the caller never sent, and skips it, ms; absent, the pipeline's default
   * (MAX_INPUT_LAG_MS, 300). An endpoint that places the caller's audio by the sender's own
   * timestamps and fills in what never came (WebRTC: up to 1 s) states how far its fill reaches:
   * audio later than the clock within it is delay (a stalled sender or network that then catches
   * up), which skipping would cut out of the middle of the caller's words.
   */
  readonly maxInputLagMs?: number;
  /**
   * The caller cannot read the call's results (a phone): the session ends the endpoint as soon as
   * the call's media has stopped, before the post-call analysis and storing, which may take
   * seconds (an LLM writing the analysis), so the line is not held open in silence. Absent, `end`
   * follows the stored results: a web page's `call_ended` promises that a get-call sees them.
   */
  readonly endsWithMedia?: boolean;
  /** Barge-in: drops every piece of agent audio not played yet. */
  clear(): void;
  /**
   * How much of the current reply's audio has been played to the caller, ms since its
   * `agent_talking` event, where the endpoint can tell (marks from a phone carrier, a loopback
   * reader); absent where it cannot, and the session's pacer estimates it. What the caller heard
   * of a reply cut off is read from it.
   */
  playedMs?(): number;
  /**
   * How the call has been carried so far (the call object's `media`): the transport, the codec and
   * rate on the wire, and the traffic it can measure (null where it cannot). Read when the call ends.
   */
  mediaStats?(): CallMedia;
  /**
   * Hands the call to `destination` (an E.164 number or a SIP URI): a cold transfer, where the
   * carrier can make one (REFER on SIP, `<Dial>` on Twilio); absent on endpoints that cannot (a
   * web call), and then the engines do not offer their transfer tools. Resolves once the carrier
   * took the call on; rejects when it refused. `end` follows either way.
   */
  transfer?(destination: string): Promise<void>;
  /**
   * Presses keys on the call (`0-9`, `*`, `#`, `A-D`), as the far end hears them (RFC 4733
   * telephone events on SIP; in-band Q.23 tones after the audio already sent on a Twilio stream):
   * the agent navigates another IVR. Absent on endpoints that cannot, and then the engines do not
   * offer `press_digit`. Resolves once the keys are sent (on Twilio: once the carrier played them).
   */
  sendDigits?(digits: string): Promise<void>;
  /** The call is over: the endpoint tells its caller how it ended and closes. Idempotent. */
  end(ending: CallEnding): void;
}
