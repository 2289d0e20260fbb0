/**
 * The generated bad-input corpus (test/helpers/bad-input-corpus.ts) over every route the app
 * registers, on each store: no 5xx, no request left unanswered, the documented error body on every
 * 4xx, and nothing written by a refused request. CORPUS_SEED=<n> runs another corpus.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildApp } from '../../src/app.ts';
import { type CorpusRequest, generateCorpus } from '../helpers/bad-input-corpus.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { type FullFixture, VALID_REQUESTS, appRoutes, makeFullFixture, paramValues, routeSchemas, storeFingerprint } from '../helpers/routes.ts';
import { STORES } from '../helpers/stores.ts';

const SEED = Number(process.env.CORPUS_SEED ?? 20_240_610);
/** A request not answered within this long counts as a hang. */
const ANSWER_WITHIN_MS = 5000;

/** The request's response, or null when none came in time. */
async function answered(app: FastifyInstance, key: string, request: CorpusRequest): Promise<LightMyRequestResponse | null> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), ANSWER_WITHIN_MS);
  });
  try {
    return await Promise.race([
      app.inject({ method: request.method as 'GET', url: request.url, payload: request.payload, headers: { authorization: `Bearer ${key}`, ...request.headers } }),
      timeout,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Why `response` breaks the rules, or null. */
function problem(response: LightMyRequestResponse): string | null {
  if (response.statusCode >= 500) return `${response.statusCode}`;
  if (response.statusCode < 400) return null;
  let body: any;
  try {
    body = JSON.parse(response.body);
  } catch {
    return `${response.statusCode} without a JSON body`;
  }
  const keys = Object.keys(body ?? {}).filter((k) => k !== 'details').sort().join(',');
  if (body?.status !== 'error' || typeof body.code !== 'string' || typeof body.message !== 'string' || keys !== 'code,message,status') {
    return `${response.statusCode} with another body`;
  }
  if (!String(response.headers['content-type']).startsWith('application/json')) return `${response.statusCode} as ${response.headers['content-type']}`;
  return null;
}

for (const kind of STORES) {
  describe(`the bad-input corpus on ${kind.name}`, { skip: kind.skip }, () => {
    let h: Harness;
    let app: FastifyInstance;
    let key: string;
    let f: FullFixture;
    before(async () => {
      h = await startHarness(kind.name);
      key = (await h.account({ rateLimitPerMinute: 1_000_000 })).apiKey;
      f = await makeFullFixture(h, key);
      // The same runtime with the account's key as DEMO_API_KEY, so the demo's routes run too.
      app = await buildApp({ ...h.runtime, config: { ...h.config, demoApiKey: key } });
      await app.ready();
    });
    after(async () => {
      await app?.close();
      await h?.close();
    });

    it('answers every request in time, never with a 5xx, refuses with the error body and writes nothing', async () => {
      const schemas = routeSchemas(app);
      // Routes that delete go last, so the others keep their fixture.
      const routes = appRoutes(app)
        .sort((a, b) => Number(/delete/i.test(a.url)) - Number(/delete/i.test(b.url)))
        .map((route) => {
          const valid = VALID_REQUESTS[`${route.method} ${route.url}`]?.(f);
          return { ...route, schemas: schemas.get(`${route.method} ${route.url}`), base: { params: paramValues(f), query: valid?.query ?? {}, body: valid?.body } };
        });
      assert.ok(routes.length >= 45, `${routes.length} routes found`);
      const corpus = generateCorpus(routes, SEED);
      assert.ok(corpus.length >= 1000, `${corpus.length} requests`);

      const failures = new Map<string, string[]>();
      const fail = (what: string, label: string) => failures.set(what, [...(failures.get(what) ?? []), label]);
      let stored = await storeFingerprint(h);
      for (const request of corpus) {
        h.clock.advance(1);
        const response = await answered(app, key, request);
        if (!response) {
          fail('no answer', request.label);
          continue;
        }
        const wrong = problem(response);
        if (wrong) fail(wrong, `${request.label} -> ${response.body.slice(0, 160)}`);
        const now = await storeFingerprint(h);
        if (response.statusCode >= 400 && JSON.stringify(now) !== JSON.stringify(stored)) fail('refused but wrote', request.label);
        stored = now;
      }
      const summary = [...failures].map(([what, labels]) => `${labels.length} x ${what}:\n  ${labels.slice(0, 40).join('\n  ')}`).join('\n');
      assert.equal(failures.size, 0, `${corpus.length} requests (seed ${SEED}):\n${summary}`);
    });
  });
}
