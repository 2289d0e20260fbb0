import { createHash } from 'node:crypto';
import type { FastifyReply } from 'fastify';

/**
 * The policy of our own pages (/demo, /dashboard): scripts and connections to this origin only
 * (the SDK's AudioWorklets load from Blob URLs, recordings play from Blob URLs in the dashboard).
 */
export const PAGE_CSP = [
  "default-src 'self'",
  "script-src 'self' blob:",
  "connect-src 'self'",
  "media-src 'self' blob:",
  "img-src 'self' data:",
  "style-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The one inline style Swagger UI needs: the <style> element inside the Swagger logo it renders
 * in its top bar (swagger-ui-standalone-preset.js). Allowed by its hash, nothing else inline.
 */
const SWAGGER_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}';

/**
 * The policy of the API reference (/docs, Swagger UI): its index page loads every script and
 * style sheet as a file from /docs/static (no inline script, so no script hash or nonce), one
 * inline <style> is allowed by its hash, its style sheet draws icons from `data:` URLs, the logo
 * is a `data:` image, and the document comes from /docs/json. "Try it out" calls this origin only.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  `style-src 'self' 'sha256-${createHash('sha256').update(SWAGGER_LOGO_STYLE).digest('base64')}'`,
  "img-src 'self' data:",
  "font-src 'self' data:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

/** The headers every page and its assets carry: its policy, no MIME sniffing, no referrer, no framing. */
export function setPageHeaders(reply: FastifyReply, csp: string): FastifyReply {
  return reply
    .header('content-security-policy', csp)
    .header('x-content-type-options', 'nosniff')
    .header('referrer-policy', 'no-referrer')
    .header('x-frame-options', 'DENY');
}
