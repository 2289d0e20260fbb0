import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { AgentSettings } from '../../domain/agent.ts';
import { Strict } from '../../domain/schema-kit.ts';
import { Voice } from '../../domain/voice.ts';
import type { AgentService } from '../../services/agent.service.ts';
import type { VoicePreviewService } from '../../services/voice-preview.service.ts';
import { PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const VoiceIdParam = Type.Object({ voice_id: PathId });

/** Longest text a voice preview speaks, in characters (a sentence or two). */
export const MAX_PREVIEW_TEXT_LENGTH = 300;

/** A voice preview: the text and the agent's voice settings, with the agent's own field schemas. */
const VoicePreviewBody = Strict({
  text: Type.String({ minLength: 1, maxLength: MAX_PREVIEW_TEXT_LENGTH, description: `What to say, 1 to ${MAX_PREVIEW_TEXT_LENGTH} characters.` }),
  voice_id: AgentSettings.voice_id,
  voice_speed: AgentSettings.voice_speed,
  volume: AgentSettings.volume,
  normalize_for_speech: AgentSettings.normalize_for_speech,
  pronunciation_dictionary: AgentSettings.pronunciation_dictionary,
});

const WavAnswer = Type.Unsafe<Buffer>({ description: 'The text spoken: a WAV file, 16 kHz mono 16-bit.', content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } });

/**
 * The voices of this server's speech engine (Retell's GET /list-voices and GET /get-voice): the
 * voices an agent's `voice_id` may name. They depend on TTS_PROVIDER, not on the account.
 */
export function voiceRoutes(agents: AgentService, previews: VoicePreviewService): FastifyPluginAsyncTypebox {
  return async (app) => {
    app.post('/v2/voice-preview', {
      // A short text and a pronunciation dictionary (200 entries) fit well within 64 KiB.
      bodyLimit: 65_536,
      schema: operation({
        operationId: 'voicePreview',
        tags: ['voices'],
        summary: "Hear a voice: a short text spoken by this server's speech engine with an agent's voice settings (at most 20 a minute per account)",
        body: VoicePreviewBody,
        response: { 200: WavAnswer, ...authErrors },
      }),
    }, async (request, reply) => {
      const wav = await previews.preview(request.principal.accountId, request.body);
      return reply.header('content-type', 'audio/wav').header('cache-control', 'no-store').send(wav);
    });

    app.get('/list-voices', {
      schema: operation({
        operationId: 'listVoices',
        tags: ['voices'],
        summary: "List the voices of this server's speech engine (the default first)",
        response: { 200: Type.Array(Voice), ...authErrors },
      }),
    }, async () => agents.listVoices());

    app.get('/get-voice/:voice_id', {
      schema: operation({
        operationId: 'getVoice',
        tags: ['voices'],
        summary: 'Get one voice of the speech engine',
        params: VoiceIdParam,
        response: { 200: Voice, ...authErrors },
      }),
    }, async (request) => agents.getVoice(request.params.voice_id));
  };
}
