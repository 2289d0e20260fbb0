import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** The code of the error raised when a destination address is refused (a permanent failure). */
export const DESTINATION_REFUSED = 'EDESTINATIONREFUSED';

/**
 * Which addresses deliveries may connect to: public unicast only, unless inside one of the
 * allowed CIDR ranges (WEBHOOK_ALLOWED_CIDRS). Loopback, private, link-local (cloud metadata
 * 169.254.169.254), carrier-grade NAT, unique-local, multicast, unspecified, reserved and the
 * IPv6 transition ranges are refused. IPv4-mapped IPv6 addresses are judged as IPv4.
 */
export class DestinationPolicy {
  readonly #allowed: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  constructor(allowedCidrs: readonly string[] = []) {
    this.#allowed = allowedCidrs.map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /** Null when `address` (an IP literal) may be reached; else the reason it may not. */
  refusal(address: string): string | null {
    let parsed: ipaddr.IPv4 | ipaddr.IPv6;
    try {
      parsed = ipaddr.process(address.replace(/^\[|\]$/g, '').replace(/%.*$/, ''));
    } catch {
      return `${address} is not an IP address`;
    }
    for (const [range, bits] of this.#allowed) {
      if (range.kind() === parsed.kind() && parsed.match(range, bits)) return null;
    }
    const kind = parsed.range();
    return kind === 'unicast' ? null : `${parsed.toString()} is a ${kind} address`;
  }

  /**
   * A `lookup` for `net.connect` that resolves with the system resolver and refuses the host if
   * any address it resolves to is refused, so the checked address is the one connected to.
   */
  readonly lookup = (
    hostname: string,
    options: LookupOptions,
    callback: (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void,
  ): void => {
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses;
      for (const entry of list) {
        const reason = this.refusal(entry.address);
        if (reason) return callback(refusedError(`${hostname} resolves to ${reason}`), '');
      }
      if (list.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      if (options.all) return callback(null, list);
      const first = list[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  };

  /** Checks a URL's host when it is an IP literal (connect skips `lookup` for those). */
  literalRefusal(hostname: string): string | null {
    const bare = hostname.replace(/^\[|\]$/g, '');
    return net.isIP(bare) === 0 ? null : this.refusal(bare);
  }
}

export function refusedError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`destination refused: ${message}`), { code: DESTINATION_REFUSED });
}
