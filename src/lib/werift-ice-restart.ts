/**
 * ICE restarts with werift 0.25 (docs/media-protocol.md, "ICE restarts"). werift renews the ICE
 * credentials (the offerer's `createOffer({ iceRestart: true })`; the answerer's
 * `setRemoteDescription` of an offer with new ones) but then skips the connectivity checks: its
 * `connect()` returns early while the DTLS transport is still connected, which it is, since a
 * restart keeps DTLS. So the restarted ICE transports are started here, once both descriptions are
 * applied, on both sides; DTLS, SRTP and the data channel go on over the pair they nominate.
 */
import type { RTCPeerConnection } from 'werift';

/** How often the answerer looks for the offerer's first check, ms. */
const POLL_MS = 20;

/**
 * Starts the connectivity checks of every ICE transport of `pc` that has the peer's credentials but
 * no nominated pair. The answerer passes `waitForPeerMs`: its checks start once the offerer's first
 * check has arrived (werift answers it and keeps it for then), that is once the offerer holds the
 * answer; checks sent before would meet an agent that does not know the new credentials yet, and a
 * check list that fails that way is not retried.
 */
export async function startRestartedIce(pc: RTCPeerConnection, waitForPeerMs = 0): Promise<void> {
  const waiting = pc.iceTransports.filter((t) => t.state !== 'closed' && t.connection.remoteUsername !== '' && t.connection.nominated === undefined);
  const heard = () => waiting.every((t) => (t.connection as unknown as { earlyChecks?: unknown[] }).earlyChecks?.length !== 0);
  for (let waited = 0; waitForPeerMs > 0 && waited < waitForPeerMs && !heard(); waited += POLL_MS) await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  await Promise.all(waiting.map((t) => t.start()));
}
