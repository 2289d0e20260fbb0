import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

/** The code of the error raised when a destination address is refused (a permanent failure). */
export const DESTINATION_REFUSED = 'EDESTINATIONREFUSED';

/** ::/96, the deprecated IPv4-compatible IPv6 addresses (RFC 4291 2.5.5.1), e.g. ::127.0.0.1. */
const IPV4_COMPATIBLE: [ipaddr.IPv6, number] = [ipaddr.IPv6.parse('::'), 96];

/** `localhost` and the names under `.localhost`: always this machine (RFC 6761 6.3), whatever a resolver says. */
export function isLocalhostName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '');
  return name === 'localhost' || name.endsWith('.localhost');
}

/**
 * Which addresses deliveries may connect to: public unicast only, unless inside one of the
 * allowed CIDR ranges (WEBHOOK_ALLOWED_CIDRS). Loopback, private, link-local (cloud metadata
 * 169.254.169.254), carrier-grade NAT, unique-local, multicast, unspecified, reserved and the
 * IPv6 transition ranges are refused, and so is the deprecated IPv4-compatible range ::/96
 * (`::127.0.0.1`), which ipaddr.js counts as unicast. IPv4-mapped IPv6 addresses are judged as
 * IPv4. `localhost` names are judged as 127.0.0.1 and ::1 without asking the resolver.
 */
export class DestinationPolicy {
  readonly #allowed: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]>;

  constructor(allowedCidrs: readonly string[] = []) {
    this.#allowed = allowedCidrs.map((cidr) => ipaddr.parseCIDR(cidr));
  }

  /** Null when `address` (an IP literal) may be reached; else the reason it may not. */
  refusal(address: string): string | null {
    const parsed = parseAddress(address);
    if (!parsed) return `${address} is not an IP address`;
    for (const [range, bits] of this.#allowed) {
      if (range.kind() === parsed.kind() && parsed.match(range, bits)) return null;
    }
    const kind = parsed.range();
    if (kind !== 'unicast') return `${parsed.toString()} is ${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind} address`;
    if (parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE)) return `${parsed.toString()} is an IPv4-compatible address (::/96, deprecated)`;
    return null;
  }

  /**
   * What can be told of a URL's host without resolving it (at set time): an IP literal is judged
   * as an address, a `localhost` name as 127.0.0.1 and ::1; other names are left to connect time.
   * Null when nothing is known against the host; else why it is refused.
   */
  hostRefusal(hostname: string): string | null {
    if (isLocalhostName(hostname)) {
      const loopback = this.refusal('127.0.0.1') ?? this.refusal('::1');
      return loopback ? `${hostname} is this machine (${loopback})` : null;
    }
    return this.literalRefusal(hostname);
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
    if (isLocalhostName(hostname)) {
      const reason = this.hostRefusal(hostname);
      if (reason) return callback(refusedError(reason), '');
    }
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

/**
 * An address as the socket will use it, IPv4-mapped IPv6 as IPv4; null when it is not one. IPv6
 * text goes through the WHATWG URL parser first, because ipaddr.js reads a dotted tail as mapped
 * (`::127.0.0.1` as `::ffff:127.0.0.1`) where the address is IPv4-compatible (`::7f00:1`); the
 * system resolver writes IPv4-compatible addresses with a dotted tail.
 */
function parseAddress(text: string): ipaddr.IPv4 | ipaddr.IPv6 | null {
  const bare = text.replace(/^\[|\]$/g, '').replace(/%.*$/, '');
  try {
    return ipaddr.process(bare.includes(':') ? new URL(`http://[${bare}]/`).hostname.slice(1, -1) : bare);
  } catch {
    return null;
  }
}

export function refusedError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`destination refused: ${message}`), { code: DESTINATION_REFUSED });
}
