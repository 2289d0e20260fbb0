import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { AccountService, Principal } from '../services/account.service.ts';

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}

/**
 * Requires a valid `Authorization: Bearer <key>` on every route of `scope`. Runs before the body is
 * parsed, so a request without a key gets 401 whatever its body.
 */
export function requireApiKey(scope: FastifyInstance, accounts: AccountService): void {
  scope.decorateRequest('principal', null as unknown as Principal);
  scope.addHook('onRequest', async (request: FastifyRequest) => {
    request.principal = await accounts.authenticate(request.headers.authorization);
  });
}
