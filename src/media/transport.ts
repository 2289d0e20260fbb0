/**
 * What a transport is to the server: a folder under src/media/ that implements the endpoint port
 * (src/media/endpoint.ts) for one way a call arrives, and one descriptor, listed once in
 * src/media/transports.ts. The app starts every listed transport with this context and closes
 * them after the registry has ended their calls (docs/architecture.md, "Add a transport").
 */
import type { IncomingMessage, Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { RtcConfig } from '../config/rtc.config.ts';
import type { Logger } from '../lib/logger.ts';
import type { Metrics } from '../lib/metrics.ts';
import type { PhoneNumberService } from '../services/phone-number.service.ts';
import type { PhoneCallService } from '../services/phone-call.service.ts';
import type { SessionRegistry } from './session-registry.ts';
import type { HttpMount } from '../lib/http-mount.ts';

export type { HttpMount, TransportReply, TransportRequest } from '../lib/http-mount.ts';
import type { SipConfig } from '../config/sip.config.ts';

export interface TransportContext {
  /** Runs the calls: `join` (a web call's access token) or `admit` (any other admission), each on an endpoint. */
  registry: SessionRegistry;
  /** The process's Prometheus registry, for the transport's own counters. */
  metrics: Metrics;
  /** The media component's logger. */
  log: Logger;
  /** The HTTP server, for transports reached through it (a WebSocket upgrade, a webhook). */
  server: Server;
  /** Routes on that server for a carrier's webhooks (mounted once every transport has started). */
  http: HttpMount;
  /** The address carriers reach this server at (PUBLIC_BASE_URL): the URLs we give them. */
  publicBaseUrl: string;
  /** What phone transports need (issue 24): the numbers accounts hold, and the SIP endpoint's configuration (null: SIP is off). */
  phone: {
    numbers: Pick<PhoneNumberService, 'findForInbound' | 'findForOutbound' | 'reachOf' | 'trunkAddressRefusal'>;
    sip: SipConfig | null;
    /** Phone calls: a transport that places calls registers its dialer and reports calls not answered; the SIP endpoint answers calls registered by register-phone-call. */
    calls: Pick<PhoneCallService, 'useDialer' | 'endUnanswered' | 'findDialIn' | 'noteTelephonyIdentifier' | 'inboundLimit' | 'atConcurrencyLimit'>;
    /** Twilio's REST API base (TWILIO_API_BASE_URL). */
    twilioApiBaseUrl: string;
    /**
     * Asks a number's `inbound_webhook_url` about an inbound call (src/webhooks/inbound-call.ts):
     * never rejects; an empty answer means the call goes on as the number says.
     */
    askInbound(call: { accountId: string; url: string; agentId: string | null; agentVersion: number | null; fromNumber: string; toNumber: string }): Promise<{
      agentId?: string;
      agentVersion?: number;
      dynamicVariables?: Record<string, string>;
      metadata?: Record<string, unknown>;
    }>;
  };
  /**
   * The Fastify app, not yet ready: a transport whose HTTP routes are part of the API (WebRTC's
   * signalling, with its schemas and the API's error bodies) registers them here.
   */
  app: FastifyInstance;
  /** WebRTC's settings (RTC_*): ICE servers, UDP ports, the advertised address. */
  rtc: RtcConfig;
}

/** A started transport: what closes it once its calls have ended (stop listening, drop the sockets left). */
export interface TransportHandle {
  close(): Promise<void>;
}

/** One transport's registration. */
export interface Transport<H extends TransportHandle = TransportHandle> {
  /** Its name: the `transport` its endpoints report (`websocket`, `loopback`, ...). */
  readonly id: string;
  start(context: TransportContext): H;
}

/** WebSocket upgrades a transport has taken for itself (several transports listen on one server). */
const claimedUpgrades = new WeakSet<IncomingMessage>();

/** A transport takes this upgrade: call it synchronously in the server's 'upgrade' listener. */
export function claimUpgrade(request: IncomingMessage): void {
  claimedUpgrades.add(request);
}

/** Whether a transport has taken this upgrade (read after every listener ran: on the next tick). */
export function upgradeClaimed(request: IncomingMessage): boolean {
  return claimedUpgrades.has(request);
}
