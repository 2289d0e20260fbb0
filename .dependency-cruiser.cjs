/**
 * Import boundaries, checked by `npm run lint` (scripts/lint.ts). Arrows run one way:
 *
 *   lib <- domain <- storage <- services <- http / webhooks / media;  providers <- voice <- media
 *   protocol <- anything but voice (its messages: the web-call transport and the Node client only)
 *   media: transports (one folder each) <- transports.ts; the session and registry see the port only
 *   config (values) <- composition roots;  browser code -> protocol only
 *   providers/catalog.ts (values) <- config: each provider's descriptor reads its own variables
 *
 * The composition roots (src/main.ts, src/runtime.ts, src/app.ts, src/index.ts, src/cli/) may
 * import anything, so no rule starts from them.
 *
 * Type-only imports count (tsPreCompilationDeps): a type import couples layers as much as a value
 * import does, and a cycle through types is still a cycle. The few places where only a type may
 * cross are said so below. The browser bundle itself (value imports only) is checked by
 * .dependency-cruiser.browser.cjs.
 *
 * test/lint/boundaries.test.ts proves that each rule fires.
 */

/** Folders of src/ that a layer may import, besides itself and src/protocol/ (an entry ending in .ts: that file only). */
const MAY_IMPORT = {
  lib: [],
  domain: ['lib'],
  storage: ['lib', 'domain'],
  services: ['lib', 'domain', 'storage'],
  http: ['lib', 'domain', 'storage', 'services', 'config'],
  webhooks: ['lib', 'domain', 'storage', 'services', 'config'],
  media: ['lib', 'domain', 'storage', 'services', 'providers', 'voice', 'config'],
  providers: ['lib', 'config/env-reader.ts'],
  voice: ['lib', 'domain', 'providers'],
  config: ['lib', 'domain', 'providers', 'webhooks'],
  client: ['lib', 'providers/audio'],
};

/** Of the above, the folders (or files) from which a layer may import types only. */
const TYPES_ONLY = {
  http: ['config'],
  webhooks: ['config'],
  media: ['storage', 'config'],
  providers: ['config/env-reader.ts'],
  config: ['providers', 'webhooks'],
};

/**
 * Of TYPES_ONLY, the files a layer may import values from all the same: config/ picks each role's
 * provider from the descriptor table and lets the descriptor read its own variables, so that
 * configuration names no vendor (docs/architecture.md, "Add a provider").
 */
const VALUES_ALSO = {
  config: ['providers/catalog.ts'],
};

/** The path pattern of a MAY_IMPORT / TYPES_ONLY entry: a folder, or one file. */
const pattern = (entry) => (entry.endsWith('.ts') ? `^src/${entry.replaceAll('.', '[.]')}$` : `^src/${entry}/`);
const named = (entry) => (entry.endsWith('.ts') ? entry : `${entry}/`);

const WHY = {
  lib: 'lib/ holds generic helpers and imports nothing else in src/.',
  domain: 'domain/ is pure types and rules: it may import lib/ only.',
  storage: 'storage/ may import lib/ and domain/ only.',
  services: 'services/ are use cases: lib/, domain/ and storage/ only, never http, media, voice, webhooks or providers.',
  http: 'http/ is the thin edge over services: never media/, voice/, webhooks/ or providers/ (app.ts wires the media transport).',
  webhooks: 'webhooks/ delivers the outbox: never http/, media/, voice/ or providers/.',
  media: 'media/ joins the transport, the voice pipeline and the services: never http/ or webhooks/.',
  providers: 'providers/ are engines behind interfaces: lib/ only, and the type of the reader their descriptors read their variables with (config/env-reader.ts).',
  voice: 'voice/ is the pipeline with no I/O of its own: providers/, domain/ and lib/ only.',
  config: "config/ reads the environment: lib/ and domain/, the option types of the parts it configures, and the providers' descriptor table (providers/catalog.ts).",
  client: 'src/client/ is the Node media client: the protocol and lib/ and the audio helpers, never server layers.',
};

const layerRules = Object.entries(MAY_IMPORT).map(([layer, allowed]) => ({
  name: `layer-${layer}`,
  severity: 'error',
  comment: WHY[layer],
  from: { path: `^src/${layer}/` },
  to: { path: '^src/', pathNot: [`^src/${layer}/`, '^src/protocol/', ...allowed.map(pattern)] },
}));

const typeOnlyRules = Object.entries(TYPES_ONLY).map(([layer, entries]) => ({
  name: `layer-${layer}-types-only`,
  severity: 'error',
  comment:
    `${layer}/ may import only types from ${entries.map(named).join(', ')} (values there belong to the composition root)` +
    (VALUES_ALSO[layer] ? `, values from ${VALUES_ALSO[layer].join(', ')} too.` : '.'),
  from: { path: `^src/${layer}/` },
  to: { path: entries.map(pattern), pathNot: (VALUES_ALSO[layer] ?? []).map(pattern), dependencyTypesNot: ['type-only'] },
}));

const BROWSER = '^(packages/web-sdk/src|web)/';
const NPM = ['npm', 'npm-dev', 'npm-optional', 'npm-peer', 'npm-bundled', 'npm-no-pkg', 'npm-unknown'];

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'A cycle, type-only ones included: split the shared part out into the lower layer.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'not-to-unresolvable',
      severity: 'error',
      comment: 'An import that resolves to no file: a typo, or a package missing from package.json.',
      from: {},
      to: { couldNotResolve: true },
    },
    ...layerRules,
    ...typeOnlyRules,
    {
      name: 'voice-knows-no-wire',
      severity: 'error',
      comment: 'voice/ knows no transport and no wire protocol: never media/ or protocol/ (the call session maps its events to an endpoint).',
      from: { path: '^src/voice/' },
      to: { path: '^src/(protocol|media)/' },
    },
    {
      name: 'web-protocol-in-web-call-only',
      severity: 'error',
      comment: "The web call's messages (src/protocol/media.messages.ts) are the web-call transports' wire: on the server only src/media/web-call/ (the WebSocket), src/media/webrtc/ (its data channel) and the shared mapping in src/media/codec/ import them (and the Node client, which speaks it).",
      from: { path: '^src/', pathNot: '^src/(protocol|media/web-call|media/webrtc|media/codec|client)/' },
      to: { path: '^src/protocol/media[.]messages[.]ts$' },
    },
    {
      name: 'transport-imports-no-other-transport',
      severity: 'error',
      comment: 'A transport is a folder of src/media/ that implements the endpoint port: it imports no other transport (shared codecs live in src/media/codec/).',
      from: { path: '^src/media/([^/]+)/', pathNot: '^src/media/codec/' },
      to: { path: '^src/media/[^/]+/', pathNot: ['^src/media/$1/', '^src/media/codec/'] },
    },
    {
      name: 'media-core-imports-no-transport',
      severity: 'error',
      comment: 'The call session, the registry and the rest of src/media/ speak to endpoints through the port (src/media/endpoint.ts); only the list of transports (src/media/transports.ts) names them.',
      from: { path: '^src/media/[^/]+[.]ts$', pathNot: '^src/media/transports[.]ts$' },
      to: { path: '^src/media/[^/]+/', pathNot: '^src/media/codec/' },
    },
    {
      name: 'protocol-is-a-leaf',
      severity: 'error',
      comment: 'src/protocol/ is the media protocol every side shares: it imports nothing else in src/.',
      from: { path: '^src/protocol/' },
      to: { path: '^(src|test|bench|scripts|web|packages)/', pathNot: '^src/protocol/' },
    },
    {
      name: 'protocol-only-typebox',
      severity: 'error',
      comment: 'src/protocol/ reaches the browser: its only package is @sinclair/typebox, and no node: builtin.',
      from: { path: '^src/protocol/' },
      to: { dependencyTypes: [...NPM, 'core'], pathNot: 'node_modules/@sinclair/typebox/' },
    },
    {
      name: 'server-not-to-tools',
      severity: 'error',
      comment: 'src/ does not import tests, benchmarks, scripts or browser code. The CLI uses the Node client (packages/node), its natural consumer.',
      from: { path: '^src/', pathNot: '^src/cli/' },
      to: { path: '^(test|bench|scripts|web|packages)/' },
    },
    {
      name: 'cli-to-node-client-only',
      severity: 'error',
      comment: 'Of the tools, the CLI imports only the Node client.',
      from: { path: '^src/cli/' },
      to: { path: '^(test|bench|scripts|web|packages)/', pathNot: '^packages/node/src/' },
    },
    {
      name: 'server-not-to-dev-dependencies',
      severity: 'error',
      comment: 'src/ runs with production dependencies only (types from devDependencies are fine).',
      from: { path: '^src/' },
      to: { dependencyTypes: ['npm-dev'], dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'browser-not-to-server',
      severity: 'error',
      comment: 'Browser code (web SDK, web pages) imports values from nothing in src/ but src/protocol/.',
      from: { path: BROWSER },
      to: { path: '^(src|test|bench|scripts)/', pathNot: '^src/protocol/', dependencyTypesNot: ['type-only'] },
    },
    {
      name: 'browser-types-from-api-shapes',
      severity: 'error',
      comment:
        "Browser code may import the API's own types (type-only, erased from the bundles) from the domain and the API's schema and view modules, nothing else of the server.",
      from: { path: BROWSER },
      to: {
        path: '^src/',
        pathNot: '^src/(protocol/|domain/|http/schemas/|services/[^/]+[.](view|schemas)[.]ts$)',
        dependencyTypes: ['type-only'],
      },
    },
    {
      name: 'browser-not-to-node-builtins',
      severity: 'error',
      comment: 'Browser code never imports a node: builtin.',
      from: { path: BROWSER },
      to: { dependencyTypes: ['core'] },
    },
  ],
  options: {
    // Unanchored: a symlinked node_modules (test/lint/boundaries.test.ts) resolves to a path outside the tree.
    doNotFollow: { path: 'node_modules/' },
    tsPreCompilationDeps: true,
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
  },
};
