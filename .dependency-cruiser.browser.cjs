/**
 * Import boundaries, second pass (`npm run lint`): what the browser bundles contain. Type-only
 * imports are left out here (esbuild erases them), so the rule follows exactly the imports that
 * end up in dist/web. From the web SDK and the web pages nothing under src/ but src/protocol/ may
 * be reached, nor TypeBox (the protocol's schemas reach the browser as `import type` only), nor a
 * node: builtin. Constants and plain helpers of src/protocol/ are fine as values.
 */
const { builtinModules } = require('node:module');
const main = require('./.dependency-cruiser.cjs');

/** Node's builtins as dependency-cruiser names them (with or without the node: prefix). */
const NODE_BUILTIN = `^(node:)?(${builtinModules.filter((name) => !name.startsWith('_')).join('|')})$`;

/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'browser-bundle-stays-browser',
      severity: 'error',
      comment:
        'A browser bundle would contain server code, TypeBox or a node: builtin. Import protocol types with `import type`, ' +
        'and only constants and plain helpers from src/protocol/ as values.',
      from: { path: '^(packages/web-sdk/src|web)/' },
      to: { reachable: true, path: ['^src/(?!protocol/)', '^(test|bench|scripts)/', 'node_modules/@sinclair/typebox/', NODE_BUILTIN] },
    },
  ],
  options: { ...main.options, tsPreCompilationDeps: false },
};
