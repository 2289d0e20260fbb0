/**
 * What both ends of a WebRTC web call read from the SDP (docs/media-protocol.md, "WebRTC"): the
 * payload type the answer gave Opus. RTP must carry the negotiated one (RFC 3264 5.1: the answer's
 * numbers are the ones the answerer expects), which is the offerer's choice, not a fixed 111:
 * Chromium offers Opus as 111, werift as 96.
 */

/** The payload type of `opus/48000/2` in an SDP's audio section, or null when it has none. */
export function opusPayloadTypeOf(sdp: string): number | null {
  const match = /^a=rtpmap:(\d{1,3}) opus\/48000(?:\/2)?\r?$/im.exec(sdp);
  const payloadType = match ? Number(match[1]) : NaN;
  // Dynamic payload types only (RFC 3551 6): anything else is not a negotiated Opus.
  return payloadType >= 96 && payloadType <= 127 ? payloadType : null;
}
