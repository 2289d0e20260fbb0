/**
 * Every transport the server runs, one line each. Adding a transport is one folder under
 * src/media/ and one line here (docs/architecture.md, "Add a transport").
 */
import type { Transport } from './transport.ts';
import { webCallTransport } from './web-call/web-call.transport.ts';
import { loopbackTransport } from './loopback/loopback.transport.ts';
import { sipTransport } from './sip/sip.transport.ts';
import { webrtcTransport } from './webrtc/webrtc.transport.ts';
import { twilioTransport } from './twilio/twilio.transport.ts';

export const TRANSPORTS: readonly Transport[] = [webCallTransport, webrtcTransport, loopbackTransport, sipTransport, twilioTransport];
