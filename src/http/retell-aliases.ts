import type { FastifyInstance, FastifyRequest, RouteOptions } from 'fastify';
import { errors } from '../domain/errors.ts';
import { hooksOf } from './json-body.ts';

/**
 * Retell's spellings, accepted as input so that clients written for Retell's API (and its SDK)
 * work unchanged. They are rewritten to ours before schema validation, here and nowhere else, so
 * services never see them; responses always use our names.
 *
 * | Retell's spelling                        | ours                            | routes                      |
 * |------------------------------------------|---------------------------------|-----------------------------|
 * | `retell_llm_dynamic_variables`           | `service_llm_dynamic_variables` | create-web-call             |
 * | `agent_override.retell_llm`              | `agent_override.service_llm`    | create-web-call             |
 * | `response_engine.type: "retell-llm"`     | `"service_llm"` (with `llm_id`) | create-agent, update-agent  |
 * | `response_engine.type: "conversation-flow"` | `"conversation_flow"` (with `conversation_flow_id`) | create-agent, update-agent |
 * | `response_engine.type: "custom-llm"`     | `"custom_llm"` (with `llm_websocket_url`) | create-agent, update-agent |
 * | `model_choice: {"type": "cascading", "model", "high_priority"?}` | `model` (`high_priority` has no effect: no priority tier) | create-conversation-flow, update-conversation-flow |
 *
 * A body that has both spellings of one field is refused (400): which one was meant is unclear.
 */
const REWRITES: Record<string, (body: Record<string, unknown>) => void> = {
  'POST /v2/create-web-call': webCallBody,
  'POST /v3/create-web-call': webCallBody,
  'POST /create-agent': agentBody,
  'PATCH /update-agent/:agent_id': agentBody,
  'POST /create-conversation-flow': flowBody,
  'PATCH /update-conversation-flow/:conversation_flow_id': flowBody,
};

/** Retell's response engine types and ours; the engines' id fields have the same names. */
const ENGINE_TYPES: Record<string, string> = {
  'retell-llm': 'service_llm',
  'conversation-flow': 'conversation_flow',
  'custom-llm': 'custom_llm',
};

/** Adds the rewriting to the routes that take aliases. Call before the routes are registered. */
export function installRetellAliases(app: FastifyInstance): void {
  app.addHook('onRoute', (route: RouteOptions) => {
    for (const method of [route.method].flat()) {
      const rewrite = REWRITES[`${method} ${route.url}`];
      if (!rewrite) continue;
      const hook = (request: FastifyRequest, _reply: unknown, done: (error?: Error) => void) => {
        try {
          if (isObject(request.body)) rewrite(request.body);
          done();
        } catch (error) {
          done(error as Error);
        }
      };
      route.preValidation = [hook, ...hooksOf(route.preValidation)];
    }
  });
}

function webCallBody(body: Record<string, unknown>): void {
  rename(body, 'retell_llm_dynamic_variables', 'service_llm_dynamic_variables', 'body');
  if (isObject(body.agent_override)) rename(body.agent_override, 'retell_llm', 'service_llm', 'body/agent_override');
}

function agentBody(body: Record<string, unknown>): void {
  const engine = body.response_engine;
  if (isObject(engine) && typeof engine.type === 'string' && Object.hasOwn(ENGINE_TYPES, engine.type)) {
    engine.type = ENGINE_TYPES[engine.type];
  }
}

/** Retell's flow `model_choice` (issue 26): a cascading model is our `model`; any other type is refused, naming it. */
function flowBody(body: Record<string, unknown>): void {
  if (!Object.hasOwn(body, 'model_choice')) return;
  const choice = body.model_choice;
  if (!isObject(choice) || choice.type !== 'cascading' || typeof choice.model !== 'string') {
    throw errors.invalidRequest('body/model_choice must be {"type": "cascading", "model": "<model>"} (high_priority optional)');
  }
  const extra = Object.keys(choice).find((key) => !['type', 'model', 'high_priority'].includes(key));
  if (extra !== undefined) throw errors.invalidRequest(`body/model_choice has an unknown field: ${extra}`);
  if (choice.high_priority !== undefined && typeof choice.high_priority !== 'boolean') throw errors.invalidRequest('body/model_choice/high_priority must be boolean');
  if (Object.hasOwn(body, 'model')) throw errors.invalidRequest('body has both model_choice and model; send one');
  body.model = choice.model;
  delete body.model_choice;
}

function rename(object: Record<string, unknown>, alias: string, name: string, where: string): void {
  if (!Object.hasOwn(object, alias)) return;
  if (Object.hasOwn(object, name)) throw errors.invalidRequest(`${where} has both ${alias} and ${name}; send one`);
  object[name] = object[alias];
  delete object[alias];
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
