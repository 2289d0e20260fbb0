/**
 * Switchboard browser SDK: join web calls from a page.
 * Speaks the web-call media protocol v1 (docs/media-protocol.md); see docs/browser-sdk.md.
 */
export {
  WebCallClient,
  type CallEndedEvent,
  type CallStartedEvent,
  type CallState,
  type CallTransport,
  type StartCallOptions,
  type UpdateEvent,
  type WebCallClientOptions,
  type WebCallEvents,
  type WebCallStats,
} from './client.ts';
export { WebCallError, type WebCallErrorCode } from './errors.ts';
export { PROTOCOL_VERSION, WIRE_SAMPLE_RATE, type TranscriptEntry } from './protocol.ts';
export {
  RetellWebClient,
  type RetellMetadataEvent,
  type RetellStartCallConfig,
  type RetellUpdateEvent,
  type RetellWebClientEvents,
  type RetellWebClientOptions,
} from './retell.ts';
