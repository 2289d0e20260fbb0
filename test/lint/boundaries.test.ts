import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

/**
 * The import rules of .dependency-cruiser.cjs and .dependency-cruiser.browser.cjs fire: a throwaway
 * tree with one forbidden import per rule (each to a leaf file that imports nothing, so no rule
 * trips over another's fixture), next to imports the rules allow. Every violation must be the one
 * planted, and every planted one must be reported.
 */
const root = path.resolve(import.meta.dirname, '../..');
const depcruise = path.join(root, 'node_modules/dependency-cruiser/bin/dependency-cruiser.mjs');

const LEAF = 'export const value = 1;\nexport type Shape = { n: number };\n';
const LAYERS = ['lib', 'domain', 'storage', 'services', 'http', 'webhooks', 'media', 'providers', 'providers/audio', 'voice', 'config', 'client', 'protocol'];

/** Files of the fixture: a leaf in every layer, then the importers. */
const files: Record<string, string> = {
  ...Object.fromEntries(LAYERS.map((layer) => [`src/${layer}/leaf.ts`, LEAF])),
  'test/leaf.ts': LEAF,
  'src/config/env-reader.ts': LEAF,
  'src/providers/catalog.ts': LEAF,
  'src/protocol/schema.ts': "import { Type, type Static } from '@sinclair/typebox';\nexport const Hello = Type.Object({ n: Type.Number() });\nexport type Hello = Static<typeof Hello>;\n",

  // Forbidden, one per rule.
  'src/lib/up.ts': "import { value } from '../services/leaf.ts';\nexport const up = value;\n",
  'src/domain/up.ts': "import { value } from '../storage/leaf.ts';\nexport const up = value;\n",
  'src/storage/up.ts': "import { value } from '../services/leaf.ts';\nexport const up = value;\n",
  'src/services/up.ts': "import type { Shape } from '../http/leaf.ts';\nexport type Up = Shape;\n",
  'src/http/sideways.ts': "import { value } from '../media/leaf.ts';\nexport const up = value;\n",
  'src/http/config-value.ts': "import { value } from '../config/leaf.ts';\nexport const up = value;\n",
  'src/webhooks/sideways.ts': "import { value } from '../http/leaf.ts';\nexport const up = value;\n",
  'src/media/sideways.ts': "import { value } from '../webhooks/leaf.ts';\nexport const up = value;\n",
  'src/media/storage-value.ts': "import { value } from '../storage/leaf.ts';\nexport const up = value;\n",
  'src/providers/up.ts': "import { value } from '../domain/leaf.ts';\nexport const up = value;\n",
  'src/providers/config-type.ts': "import type { Shape } from '../config/leaf.ts';\nexport type Up = Shape;\n",
  'src/providers/reader-value.ts': "import { value } from '../config/env-reader.ts';\nexport const up = value;\n",
  'src/voice/up.ts': "import type { Shape } from '../storage/leaf.ts';\nexport type Up = Shape;\n",
  'src/config/up.ts': "import { value } from '../services/leaf.ts';\nexport const up = value;\n",
  'src/config/provider-value.ts': "import { value } from '../providers/leaf.ts';\nexport const up = value;\n",
  'src/client/up.ts': "import { value } from '../storage/leaf.ts';\nexport const up = value;\n",
  'src/protocol/up.ts': "import { value } from '../lib/leaf.ts';\nexport const up = value;\n",
  'src/protocol/node.ts': "import { EventEmitter } from 'node:events';\nexport const emitter = new EventEmitter();\n",
  'src/lib/tools.ts': "import { value } from '../../test/leaf.ts';\nexport const up = value;\n",
  'src/lib/dev.ts': "import { chromium } from 'playwright-core';\nexport const browser = chromium;\n",
  'src/lib/missing.ts': "import { value } from './nowhere.ts';\nexport const up = value;\n",
  'src/lib/cycle-a.ts': "import type { B } from './cycle-b.ts';\nexport type A = { b?: B };\n",
  'src/lib/cycle-b.ts': "import type { A } from './cycle-a.ts';\nexport type B = { a?: A };\n",
  'web/page.ts': "import type { Shape } from '../src/services/leaf.ts';\nexport type Page = Shape;\n",
  'web/domain-value.ts': "import { value } from '../src/domain/leaf.ts';\nexport const page = value;\n",
  'packages/web-sdk/src/node.ts': "import { EventEmitter } from 'node:events';\nexport const emitter = new EventEmitter();\n",
  'web/schema-value.ts': "import { Hello } from '../src/protocol/schema.ts';\nexport const hello = Hello;\n",
  'src/protocol/media.messages.ts': LEAF,
  'src/voice/wire.ts': "import { value } from '../protocol/leaf.ts';\nexport const up = value;\n",
  'src/voice/transport.ts': "import type { Shape } from '../media/leaf.ts';\nexport type Up = Shape;\n",
  'src/media/session.ts': "import { value } from '../protocol/media.messages.ts';\nexport const up = value;\n",
  'src/media/registry.ts': "import { value } from './web-call/leaf.ts';\nexport const up = value;\n",
  'src/media/web-call/leaf.ts': LEAF,
  'src/media/loopback/leaf.ts': LEAF,
  'src/media/codec/leaf.ts': LEAF,
  'src/media/loopback/sideways.ts': "import { value } from '../web-call/leaf.ts';\nexport const up = value;\n",

  // Allowed.
  'src/media/ok.ts':
    "import type { Shape } from '../storage/leaf.ts';\nimport { value as v } from '../voice/leaf.ts';\nimport { value as p } from '../providers/leaf.ts';\nimport { value as s } from '../services/leaf.ts';\nimport type { Shape as C } from '../config/leaf.ts';\nexport const ok: Shape | C = { n: v + p + s };\n",
  'src/http/ok.ts': "import { value as s } from '../services/leaf.ts';\nimport { value as t } from '../storage/leaf.ts';\nimport { value as d } from '../domain/leaf.ts';\nexport const ok = s + t + d;\n",
  'src/webhooks/ok.ts': "import { value as s } from '../services/leaf.ts';\nimport { value as t } from '../storage/leaf.ts';\nexport const ok = s + t;\n",
  'src/voice/ok.ts': "import { value as p } from '../providers/leaf.ts';\nimport { value as d } from '../domain/leaf.ts';\nimport { value as l } from '../lib/leaf.ts';\nexport const ok = p + d + l;\n",
  'src/config/catalog-ok.ts': "import { value } from '../providers/catalog.ts';\nexport const ok = value;\n",
  'src/providers/reader-ok.ts': "import type { Shape } from '../config/env-reader.ts';\nexport type Ok = Shape;\n",
  'src/config/ok.ts': "import type { Shape } from '../providers/leaf.ts';\nimport type { Shape as W } from '../webhooks/leaf.ts';\nimport { value } from '../lib/leaf.ts';\nexport const ok: Shape | W = { n: value };\n",
  'src/client/ok.ts': "import { value as a } from '../providers/audio/leaf.ts';\nimport { value as p } from '../protocol/leaf.ts';\nexport const ok = a + p;\n",
  'src/lib/ok.ts': "import { value } from '../protocol/leaf.ts';\nexport const ok = value;\n",
  'src/main.ts': "import { value as h } from './http/leaf.ts';\nimport { value as m } from './media/leaf.ts';\nimport { value as c } from './config/leaf.ts';\nexport const ok = h + m + c;\n",
  'src/cli/main.ts': "import { value as c } from '../client/leaf.ts';\nimport { value as s } from '../storage/leaf.ts';\nexport const ok = c + s;\n",
  'src/media/web-call/ok.ts': "import { value as m } from '../../protocol/media.messages.ts';\nimport { value as c } from '../codec/leaf.ts';\nimport { value as p } from '../leaf.ts';\nexport const ok = m + c + p;\n",
  'src/media/transports.ts': "import { value as w } from './web-call/leaf.ts';\nimport { value as l } from './loopback/leaf.ts';\nexport const ok = w + l;\n",
  'src/client/messages.ts': "import { value } from '../protocol/media.messages.ts';\nexport const ok = value;\n",
  'web/ok.ts': "import type { Hello } from '../src/protocol/schema.ts';\nimport { value } from '../src/protocol/leaf.ts';\nexport const ok: Hello = { n: value };\n",
  'src/services/thing.view.ts': LEAF,
  'web/api-types.ts': "import type { Shape } from '../src/services/thing.view.ts';\nimport type { Shape as D } from '../src/domain/leaf.ts';\nexport type Api = Shape | D;\n",
};

/** What must be reported: rule, from, to. */
const EXPECTED = [
  'layer-lib src/lib/up.ts -> src/services/leaf.ts',
  'layer-domain src/domain/up.ts -> src/storage/leaf.ts',
  'layer-storage src/storage/up.ts -> src/services/leaf.ts',
  'layer-services src/services/up.ts -> src/http/leaf.ts',
  'layer-http src/http/sideways.ts -> src/media/leaf.ts',
  'layer-http-types-only src/http/config-value.ts -> src/config/leaf.ts',
  'layer-webhooks src/webhooks/sideways.ts -> src/http/leaf.ts',
  'layer-media src/media/sideways.ts -> src/webhooks/leaf.ts',
  'layer-media-types-only src/media/storage-value.ts -> src/storage/leaf.ts',
  'layer-providers src/providers/up.ts -> src/domain/leaf.ts',
  'layer-providers src/providers/config-type.ts -> src/config/leaf.ts',
  'layer-providers-types-only src/providers/reader-value.ts -> src/config/env-reader.ts',
  'layer-voice src/voice/up.ts -> src/storage/leaf.ts',
  'layer-config src/config/up.ts -> src/services/leaf.ts',
  'layer-config-types-only src/config/provider-value.ts -> src/providers/leaf.ts',
  'layer-client src/client/up.ts -> src/storage/leaf.ts',
  'protocol-is-a-leaf src/protocol/up.ts -> src/lib/leaf.ts',
  'protocol-only-typebox src/protocol/node.ts -> events',
  'server-not-to-tools src/lib/tools.ts -> test/leaf.ts',
  'server-not-to-dev-dependencies src/lib/dev.ts -> playwright-core',
  'not-to-unresolvable src/lib/missing.ts -> ./nowhere.ts',
  'no-circular src/lib/cycle-a.ts -> src/lib/cycle-b.ts',
  'browser-types-from-api-shapes web/page.ts -> src/services/leaf.ts',
  'browser-not-to-server web/domain-value.ts -> src/domain/leaf.ts',
  'browser-not-to-node-builtins packages/web-sdk/src/node.ts -> events',
  'voice-knows-no-wire src/voice/wire.ts -> src/protocol/leaf.ts',
  'voice-knows-no-wire src/voice/transport.ts -> src/media/leaf.ts',
  'layer-voice src/voice/transport.ts -> src/media/leaf.ts',
  'web-protocol-in-web-call-only src/media/session.ts -> src/protocol/media.messages.ts',
  'media-core-imports-no-transport src/media/registry.ts -> src/media/web-call/leaf.ts',
  'transport-imports-no-other-transport src/media/loopback/sideways.ts -> src/media/web-call/leaf.ts',
];

const EXPECTED_BROWSER = [
  'browser-bundle-stays-browser web/domain-value.ts -> src/domain/leaf.ts',
  'browser-bundle-stays-browser web/schema-value.ts -> @sinclair/typebox',
  'browser-bundle-stays-browser packages/web-sdk/src/node.ts -> events',
];

let dir = '';

/** Runs dependency-cruiser in the fixture with one of the repository's configs; the violations found. */
function cruise(config: string, targets: string[]): string[] {
  const run = spawnSync(process.execPath, [depcruise, '--config', path.join(root, config), '--output-type', 'json', ...targets], {
    cwd: dir,
    encoding: 'utf8',
  });
  assert.ok(run.stdout.length > 0, `dependency-cruiser printed nothing: ${run.stderr}`);
  const result = JSON.parse(run.stdout) as { summary: { violations: { from: string; to: string; rule: { name: string } }[] } };
  // A file of a package (through the symlinked node_modules) is named by its package.
  const named = (file: string): string => file.replace(/^(?:.*\/)?node_modules\/((?:@[^/]+\/)?[^/]+)\/.*$/, '$1');
  return result.summary.violations.map((v) => `${v.rule.name} ${named(v.from)} -> ${named(v.to)}`).sort();
}

describe('import boundaries (dependency-cruiser)', () => {
  before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'switchboard-boundaries-'));
    for (const [file, text] of Object.entries(files)) {
      fs.mkdirSync(path.join(dir, path.dirname(file)), { recursive: true });
      fs.writeFileSync(path.join(dir, file), text);
    }
    // The real package.json tells dependencies from devDependencies; node_modules resolves them.
    fs.copyFileSync(path.join(root, 'package.json'), path.join(dir, 'package.json'));
    fs.symlinkSync(path.join(root, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  });

  after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('report every forbidden import, type-only ones and cycles included, and nothing allowed', () => {
    const found = cruise('.dependency-cruiser.cjs', ['src', 'test', 'web', 'packages/web-sdk/src']);
    assert.deepEqual(found, [...EXPECTED].sort());
  });

  it('keep server code, TypeBox and node builtins out of the browser bundles, but let protocol types and constants in', () => {
    const found = cruise('.dependency-cruiser.browser.cjs', ['web', 'packages/web-sdk/src']);
    assert.deepEqual(found, [...EXPECTED_BROWSER].sort());
  });
});
