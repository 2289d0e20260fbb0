/**
 * Every JSON message of the web-call media protocol, version 1 (docs/media-protocol.md), defined
 * once: a TypeBox schema per message, a union per direction, and the TypeScript types derived from
 * them. The server checks client messages against these schemas (src/media/protocol.ts) and builds
 * its events as these types; the Node client checks server messages against them; the browser SDK
 * and the web pages import the types only (`import type`), so TypeBox never reaches a bundle.
 *
 * Objects allow extra properties on purpose: a newer peer may add fields (forward compatibility).
 */
import { Type, type Static } from '@sinclair/typebox';

// Client -> server.

/** The first message of a connection: the call's single-use token and what the client speaks. */
export const JoinMessage = Type.Object({
  type: Type.Literal('join'),
  /** The `access_token` of create-web-call. */
  access_token: Type.String({ minLength: 1, maxLength: 4096 }),
  /** Must be `PROTOCOL_VERSION`. */
  protocol_version: Type.Integer(),
  /** Hz; must be `PROTOCOL_SAMPLE_RATE`. */
  sample_rate: Type.Integer(),
});
/** See {@link JoinMessage}. */
export type JoinMessage = Static<typeof JoinMessage>;

/** The user ends the call (`user_hangup`). */
export const HangupMessage = Type.Object({ type: Type.Literal('hangup') });
/** See {@link HangupMessage}. */
export type HangupMessage = Static<typeof HangupMessage>;

/** Keep-alive / round-trip check; the server answers `pong` with the same `id`. */
export const PingMessage = Type.Object({ type: Type.Literal('ping'), id: Type.Optional(Type.Unknown()) });
/** See {@link PingMessage}. */
export type PingMessage = Static<typeof PingMessage>;

/** Every JSON message a client sends. */
export const ClientMessage = Type.Union([JoinMessage, HangupMessage, PingMessage]);
/** See {@link ClientMessage}. */
export type ClientMessage = Static<typeof ClientMessage>;

// Server -> client.

/** One utterance of the live transcript, as `update` carries it. */
export const TranscriptEntry = Type.Object({
  role: Type.Union([Type.Literal('agent'), Type.Literal('user')]),
  content: Type.String(),
  /** Present (true) when the agent's reply was cut off by the user. */
  cut_off: Type.Optional(Type.Boolean()),
});
/** See {@link TranscriptEntry}. */
export type TranscriptEntry = Static<typeof TranscriptEntry>;

/** The join succeeded; audio may flow. */
export const CallStartedMessage = Type.Object({
  type: Type.Literal('call_started'),
  protocol_version: Type.Integer(),
  call_id: Type.String(),
  /** Hz, both directions. */
  sample_rate: Type.Integer(),
  /** How the call is carried: `websocket` or `webrtc` (issue 23; absent from older servers). */
  transport: Type.Optional(Type.String()),
  agent: Type.Object({
    agent_id: Type.String(),
    agent_version: Type.Integer(),
    agent_name: Type.Union([Type.String(), Type.Null()]),
  }),
});
/** See {@link CallStartedMessage}. */
export type CallStartedMessage = Static<typeof CallStartedMessage>;

/** The agent's audio for one reply begins; `utterance_id` is `utt_1`, `utt_2`, ... per call. */
export const AgentStartTalkingMessage = Type.Object({
  type: Type.Literal('agent_start_talking'),
  utterance_id: Type.String(),
});
/** See {@link AgentStartTalkingMessage}. */
export type AgentStartTalkingMessage = Static<typeof AgentStartTalkingMessage>;

/** The reply's audio ended, or was cut off by the user (`cut_off`). */
export const AgentStopTalkingMessage = Type.Object({
  type: Type.Literal('agent_stop_talking'),
  utterance_id: Type.String(),
  cut_off: Type.Boolean(),
});
/** See {@link AgentStopTalkingMessage}. */
export type AgentStopTalkingMessage = Static<typeof AgentStopTalkingMessage>;

/** Barge-in: the client drops every queued agent sample now. */
export const ClearMessage = Type.Object({
  type: Type.Literal('clear'),
  utterance_id: Type.String(),
});
/** See {@link ClearMessage}. */
export type ClearMessage = Static<typeof ClearMessage>;

/** The live transcript: the last 10 utterances, oldest first; the last may change while `final` is false. */
export const UpdateMessage = Type.Object({
  type: Type.Literal('update'),
  transcript: Type.Array(TranscriptEntry),
  final: Type.Boolean(),
});
/** See {@link UpdateMessage}. */
export type UpdateMessage = Static<typeof UpdateMessage>;

/** A conversation-flow agent moved between nodes; `from` is null when it had no node before. */
export const NodeTransitionMessage = Type.Object({
  type: Type.Literal('node_transition'),
  from: Type.Union([Type.String(), Type.Null()]),
  to: Type.String(),
});
/** See {@link NodeTransitionMessage}. */
export type NodeTransitionMessage = Static<typeof NodeTransitionMessage>;

/**
 * Data a custom LLM's server sent for the page (its `metadata` event, docs/custom-llm.md), passed
 * on as it came: any JSON value.
 */
export const MetadataMessage = Type.Object({
  type: Type.Literal('metadata'),
  metadata: Type.Unknown(),
});
/** See {@link MetadataMessage}. */
export type MetadataMessage = Static<typeof MetadataMessage>;

/** The call is over; the server closes the socket right after (1000, or 1011 for `error`). */
export const CallEndedMessage = Type.Object({
  type: Type.Literal('call_ended'),
  call_status: Type.Union([Type.Literal('ended'), Type.Literal('error')]),
  disconnection_reason: Type.String(),
});
/** See {@link CallEndedMessage}. */
export type CallEndedMessage = Static<typeof CallEndedMessage>;

/** A refusal or a failure; `code` is one of `ServerErrorCode` (a string on the wire: expect new ones). */
export const ErrorMessage = Type.Object({
  type: Type.Literal('error'),
  code: Type.String(),
  message: Type.String(),
});
/** See {@link ErrorMessage}. */
export type ErrorMessage = Static<typeof ErrorMessage>;

/** The answer to `ping`: its `id`, or null when the ping had none. */
export const PongMessage = Type.Object({
  type: Type.Literal('pong'),
  id: Type.Unknown(),
});
/** See {@link PongMessage}. */
export type PongMessage = Static<typeof PongMessage>;

/** Every JSON message the server sends. */
export const ServerMessage = Type.Union([
  CallStartedMessage,
  AgentStartTalkingMessage,
  AgentStopTalkingMessage,
  ClearMessage,
  UpdateMessage,
  NodeTransitionMessage,
  MetadataMessage,
  CallEndedMessage,
  ErrorMessage,
  PongMessage,
]);
/** See {@link ServerMessage}. */
export type ServerMessage = Static<typeof ServerMessage>;
