import fs from 'node:fs';
import path from 'node:path';
import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { errors } from '../../domain/errors.ts';
import type { CallService } from '../../services/call.service.ts';
import { ErrorResponse, PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const CallIdParam = Type.Object({ call_id: PathId });
/** The WAV, whole (200) or a range of it (206), as the document describes it; the handler sends a file stream. */
const Wav = (description: string) =>
  Type.Unsafe<fs.ReadStream>({ description, content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } });

/**
 * GET /v2/get-call-recording/:call_id: the call's WAV (2 channels, 16 kHz, 16-bit: user left,
 * agent right), behind the API key. Supports a single HTTP byte range (206), so players can seek.
 */
export function recordingRoutes(calls: CallService, dataDir: string): FastifyPluginAsyncTypebox {
  const root = path.resolve(dataDir);
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
      const row = await calls.readCall(callId);
      if (!row || row.account_id !== request.principal.accountId) throw errors.callNotFound(callId);
      if (!row.recording_path) throw errors.recordingNotFound(callId);
      const file = path.resolve(root, row.recording_path);
      if (!file.startsWith(root + path.sep)) throw errors.recordingNotFound(callId);
      let size: number;
      try {
        size = (await fs.promises.stat(file)).size;
      } catch {
        throw errors.recordingNotFound(callId);
      }
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
        return reply.code(206).send(fs.createReadStream(file, { start: range.start, end: range.end }));
      }
      reply.header('content-length', size);
      return reply.send(fs.createReadStream(file));
    });
  };
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
