import { Type } from '@sinclair/typebox';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Voice } from '../../domain/voice.ts';
import type { AgentService } from '../../services/agent.service.ts';
import { PathId, authErrors } from '../schemas/common.schemas.ts';
import { operation } from '../openapi.ts';

const VoiceIdParam = Type.Object({ voice_id: PathId });

/**
 * The voices of this server's speech engine (Retell's GET /list-voices and GET /get-voice): the
 * voices an agent's `voice_id` may name. They depend on TTS_PROVIDER, not on the account.
 */
export function voiceRoutes(agents: AgentService): FastifyPluginAsyncTypebox {
  return async (app) => {
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
