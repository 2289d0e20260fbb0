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
    return this.#judge(address)?.detail ?? null;
  }

  /** Null when `address` may be reached; else the rule that refuses it and the detail, for the log. */
  #judge(address: string): Refusal | null {
    const parsed = parseAddress(address);
    if (!parsed) return { rule: 'not_an_address', detail: `${address} is not an IP address` };
    for (const [range, bits] of this.#allowed) {
      if (range.kind() === parsed.kind() && parsed.match(range, bits)) return null;
    }
    const kind = parsed.range();
    if (kind !== 'unicast') return { rule: kind, detail: `${parsed.toString()} is ${/^[aeiou]/i.test(kind) ? 'an' : 'a'} ${kind} address` };
    if (parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE)) return { rule: 'ipv4Compatible', detail: `${parsed.toString()} is an IPv4-compatible address (::/96, deprecated)` };
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
      const refused = this.#judge('127.0.0.1') ?? this.#judge('::1');
      if (refused) return callback(refusedError(refused.rule, `${hostname} is this machine (${refused.detail})`), '');
    }
    dns.lookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error, '');
      const list = addresses;
      for (const entry of list) {
        const refused = this.#judge(entry.address);
        // The tenant learns the rule, never what the name resolves to (no probing of internal names).
        if (refused) return callback(refusedError(refused.rule, `${hostname} resolves to ${refused.detail}`), '');
      }
      if (list.length === 0) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '');
      if (options.all) return callback(null, list);
      const first = list[0] as LookupAddress;
      callback(null, first.address, first.family);
    });
  };

  /** Checks a URL's host when it is an IP literal (connect skips `lookup` for those). */
  literalRefusal(hostname: string): string | null {
    return this.literalRule(hostname)?.detail ?? null;
  }

  /** As literalRefusal, with the rule's name (what a tenant is told at connect time). */
  literalRule(hostname: string): Refusal | null {
    const bare = hostname.replace(/^\[|\]$/g, '');
    return net.isIP(bare) === 0 ? null : this.#judge(bare);
  }
}

/** Why an address is refused: the rule's name (ipaddr.js's range name, e.g. `loopback`, `private`, `linkLocal`) and the detail. */
export interface Refusal {
  rule: string;
  /** The address and its range: for operators (the log), never for tenants. */
  detail: string;
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

/**
 * The error of a refused connection. Its message, which tenants see (a function's result, a
 * delivery's last_error), names only the rule; `detail` (the name, what it resolved to) is for
 * the log.
 */
export function refusedError(rule: string, detail: string): NodeJS.ErrnoException & { detail: string } {
  return Object.assign(new Error(refusedMessage(rule)), { code: DESTINATION_REFUSED, detail });
}

/** What a tenant is told of a refused destination. */
export function refusedMessage(rule: string): string {
  return `destination refused (rule: ${rule})`;
}
