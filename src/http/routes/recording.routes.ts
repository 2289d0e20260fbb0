import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { errors } from '../../domain/errors.ts';
import type { Call } from '../../domain/call.ts';
import type { CallService } from '../../services/call.service.ts';
import type { Readable } from 'node:stream';
import type { RecordingLinks } from '../../services/recording-link.ts';
import type { RecordingStore } from '../../services/recording-store.ts';
import { ErrorResponse, PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const CallIdParam = Type.Object({ call_id: PathId });
const LinkQuery = Type.Object({
  expires: Type.Optional(Type.String({ maxLength: 32, description: 'Epoch ms after which the link no longer plays.' })),
  signature: Type.Optional(Type.String({ maxLength: 128 })),
});
/** The WAV, whole (200) or a range of it (206), as the document describes it; the handler sends a stream. */
const Wav = (description: string) =>
  Type.Unsafe<Readable>({ description, content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } });

/** What the recording routes read: the call, and its recording from the store the runtime chose. */
export interface RecordingRouteDeps {
  calls: Pick<CallService, 'readCall'>;
  recordings: RecordingStore;
}

/**
 * GET /v2/get-call-recording/:call_id: the call's WAV (2 channels, 16 kHz, 16-bit: user left,
 * agent right), behind the API key. Supports a single HTTP byte range (206), so players can seek.
 * Any server serves any call's recording on PostgreSQL (the recording lives in the database).
 */
export function recordingRoutes(deps: RecordingRouteDeps): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/v2/get-call-recording/:call_id', {
      schema: operation({
        operationId: 'getCallRecording',
        tags: ['calls'],
        summary: 'Download a call recording (WAV)',
        description: 'Stereo 16 kHz 16-bit PCM WAV: the user on the left channel, the agent on the right. Accepts `Range: bytes=a-b`.',
        params: CallIdParam,
        response: { 200: Wav('The recording.'), 206: Wav('The requested byte range.'), ...authErrors, 416: ErrorResponse },
      }),
    }, async (request, reply) => {
      const callId = request.params.call_id;
      const row = await deps.calls.readCall(callId);
      if (!row || row.account_id !== request.principal.accountId) throw errors.callNotFound(callId);
      return sendRecording(deps.recordings, row, request, reply);
    });
  };
}

/**
 * GET /v2/recording/:call_id?expires=...&signature=...: the same WAV, Range included, without an
 * API key: the signed, expiring link a call's `recording_url` carries (made afresh on every read
 * of the call). A link that was tampered with answers 401 `recording_link_invalid`, an expired one
 * 401 `recording_link_expired`.
 */
export function signedRecordingRoutes(deps: RecordingRouteDeps & { links: RecordingLinks }): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.get('/v2/recording/:call_id', {
      schema: operation({
        operationId: 'playCallRecording',
        tags: ['calls'],
        summary: 'Play a call recording through its signed link (no API key)',
        description: 'The `recording_url` of a call object: plays in an `<audio>` element until `expires`. Accepts `Range: bytes=a-b`.',
        security: [],
        params: CallIdParam,
        querystring: LinkQuery,
        response: { 200: Wav('The recording.'), 206: Wav('The requested byte range.'), 401: ErrorResponse, 416: ErrorResponse, 422: ErrorResponse },
      }),
    }, async (request, reply) => {
      const callId = request.params.call_id;
      const check = deps.links.check(callId, request.query.expires, request.query.signature);
      if (check === 'invalid') throw errors.recordingLinkInvalid();
      if (check === 'expired') throw errors.recordingLinkExpired();
      const row = await deps.calls.readCall(callId);
      if (!row) throw errors.recordingNotFound(callId);
      return sendRecording(deps.recordings, row, request, reply);
    });
  };
}

async function sendRecording(recordings: RecordingStore, row: Call, request: FastifyRequest, reply: FastifyReply) {
  const callId = row.call_id;
  if (!row.recording_path) throw errors.recordingNotFound(callId);
  const size = await recordings.size(callId, row.recording_path);
  if (size === null) throw errors.recordingNotFound(callId);
  const range = parseRange(request.headers.range, size);
  if (range === 'unsatisfiable') {
    // RFC 9110 15.5.17: the 416 says the current length; the body is our error body.
    reply.header('content-range', `bytes */${size}`);
    throw errors.rangeNotSatisfiable(size);
  }
  reply.header('content-type', 'audio/wav');
  reply.header('accept-ranges', 'bytes');
  reply.header('content-disposition', `attachment; filename="${callId}.wav"`);
  if (range) {
    reply.header('content-range', `bytes ${range.start}-${range.end}/${size}`);
    reply.header('content-length', range.end - range.start + 1);
    return reply.code(206).send(recordings.read(callId, row.recording_path, range.start, range.end));
  }
  reply.header('content-length', size);
  return reply.send(recordings.read(callId, row.recording_path, 0, size - 1));
}

/** One `bytes=` range (RFC 9110 14.1.2); multiple ranges are answered with the whole file. */
function parseRange(header: string | undefined, size: number): { start: number; end: number } | 'unsatisfiable' | null {
  if (!header) return null;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return null;
  let start: number;
  let end: number;
  if (m[1] === '') {
    const suffix = Number(m[2]);
    if (suffix === 0) return 'unsatisfiable';
    start = Math.max(0, size - suffix);
    end = size - 1;
  } else {
    start = Number(m[1]);
    end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  }
  if (start >= size || start > end) return 'unsatisfiable';
  return { start, end };
}
