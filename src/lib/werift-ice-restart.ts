/**
 * ICE restarts with werift 0.25 (docs/media-protocol.md, "ICE restarts"). werift renews the ICE
 * credentials (the offerer's `createOffer({ iceRestart: true })`; the answerer's
 * `setRemoteDescription` of an offer with new ones) but then skips the connectivity checks: its
 * `connect()` returns early while the DTLS transport is still connected, which it is, since a
 * restart keeps DTLS. So the restarted ICE transports are started here, once both descriptions are
 * applied, on both sides; DTLS, SRTP and the data channel go on over the pair they nominate.
 */
import type { RTCPeerConnection } from 'werift';

/** Starts the connectivity checks of every ICE transport of `pc` that has the peer's credentials but no nominated pair. */
export function startRestartedIce(pc: RTCPeerConnection): Promise<void> {
  const waiting = pc.iceTransports.filter((t) => t.state !== 'closed' && t.connection.remoteUsername !== '' && t.connection.nominated === undefined);
  return Promise.all(waiting.map((t) => t.start())).then(() => undefined);
}
