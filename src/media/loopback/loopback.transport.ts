/**
 * The loopback transport: calls driven from code in this process (tests, simulated callers,
 * tools), on LoopbackEndpoints. A web call joins with its access token as a browser would; any
 * other call is admitted directly (the registry's documented admission, with its own call_type).
 */
import type { AdmitCallInput } from '../../services/call-lifecycle.ts';
import type { CallSession } from '../call-session.ts';
import type { SessionRegistry } from '../session-registry.ts';
import type { Transport, TransportHandle } from '../transport.ts';
import { LoopbackEndpoint, type LoopbackOptions } from './loopback.endpoint.ts';

/** A call on the loopback: its endpoint (the caller's side) and its session. */
export interface LoopbackCall {
  endpoint: LoopbackEndpoint;
  session: CallSession;
}

export class LoopbackTransport implements TransportHandle {
  readonly #registry: SessionRegistry;
  readonly #calls = new Set<LoopbackEndpoint>();

  constructor(registry: SessionRegistry) {
    this.#registry = registry;
  }

  /** Joins a web call with its access token (create-web-call's), as a browser would. Throws CallRefused. */
  async join(accessToken: string, options: LoopbackOptions = {}): Promise<LoopbackCall> {
    const endpoint = this.#track(new LoopbackEndpoint(options));
    try {
      return { endpoint, session: await this.#registry.join(accessToken, endpoint) };
    } catch (error) {
      endpoint.end({ reason: 'client_disconnected', status: 'ended' });
      throw error;
    }
  }

  /** Admits a call directly (no token; `call_type` from the input) and runs it. Throws the admission's AppError or CallRefused. */
  async admit(input: AdmitCallInput, options: LoopbackOptions = {}): Promise<LoopbackCall> {
    const endpoint = this.#track(new LoopbackEndpoint(options));
    try {
      return { endpoint, session: await this.#registry.admit(input, endpoint) };
    } catch (error) {
      endpoint.end({ reason: 'client_disconnected', status: 'ended' });
      throw error;
    }
  }

  /** Its calls have been ended by the registry by now; the endpoints' timers stop with them. */
  async close(): Promise<void> {
    for (const endpoint of this.#calls) endpoint.drop();
    this.#calls.clear();
  }

  #track(endpoint: LoopbackEndpoint): LoopbackEndpoint {
    this.#calls.add(endpoint);
    void endpoint.ended.then(() => this.#calls.delete(endpoint));
    return endpoint;
  }
}

export const loopbackTransport: Transport<LoopbackTransport> = {
  id: 'loopback',
  start: (context) => new LoopbackTransport(context.registry),
};
