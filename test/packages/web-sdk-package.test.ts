/**
 * @switchboard/web-sdk as a user installs it: `npm pack` holds exactly the bundle, its map, its
 * self-contained types, the README and package.json; the tarball installs into a fresh project
 * with no registry, its types compile there under `tsc --strict` (and catch a misuse), and the
 * module imports. The server serves the same types at /sdk/web-sdk.d.ts.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { buildPackage } from '../../scripts/build-packages.ts';
import { type Harness, startHarness } from '../helpers/harness.ts';
import { ROOT } from '../helpers/process.ts';
import { npm, packPackage, strictProject, tsc } from './pack-helpers.ts';

describe('@switchboard/web-sdk, packed and installed', () => {
  let work: string;
  let tarball: string;
  before(async () => {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-web-sdk-pack-'));
    await buildPackage('web-sdk');
    ({ tarball } = packPackage('packages/web-sdk', work));
  });
  after(() => fs.rmSync(work, { recursive: true, force: true }));

  it('packs exactly the bundle, its map and types, the README and package.json', () => {
    const packed = packPackage('packages/web-sdk', work);
    assert.deepEqual(packed.files, ['README.md', 'dist/web-sdk.d.ts', 'dist/web-sdk.js', 'dist/web-sdk.js.map', 'package.json']);
    const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'packages/web-sdk/package.json'), 'utf8'));
    assert.equal(manifest.private, undefined, 'publishable');
    assert.deepEqual(manifest.exports['.'], { types: './dist/web-sdk.d.ts', import: './dist/web-sdk.js' });
    assert.equal(manifest.dependencies, undefined, 'no dependencies');
    const types = fs.readFileSync(path.join(ROOT, 'packages/web-sdk/dist/web-sdk.d.ts'), 'utf8');
    assert.doesNotMatch(types, /^import |from ['"]@sinclair|import\(/m, 'the types import nothing');
  });

  it('installs from the tarball into a fresh project, compiles under tsc --strict and imports', () => {
    const project = strictProject(path.join(work, 'app'), { dom: true });
    npm(['install', '--offline', '--no-audit', '--no-fund', tarball], project);
    fs.writeFileSync(path.join(project, 'main.ts'), `
import { WebCallClient, WebCallError, PROTOCOL_VERSION, type UpdateEvent, type WebCallErrorCode, type CallState } from '@switchboard/web-sdk';
const client = new WebCallClient({ baseUrl: 'https://switchboard.example.com', joinTimeoutMs: 5000 });
client.on('update', (event: UpdateEvent) => {
  const last: string | undefined = event.transcript.at(-1)?.content;
  const role: 'agent' | 'user' | undefined = event.transcript[0]?.role;
  console.log(last, role);
});
client.on('error', (error) => {
  const code: WebCallErrorCode = error.code;
  console.log(code, error instanceof WebCallError);
});
client.on('call_ended', ({ disconnection_reason }) => console.log(disconnection_reason.length));
const state: CallState = client.state;
const version: number = PROTOCOL_VERSION;
export async function call(token: Promise<string>): Promise<void> {
  await client.startCall({ accessToken: token });
  await client.startCall({ accessToken: 'a-token', emitRawAudioSamples: true });
  console.log(state, version);
}
`);
    assert.equal(tsc(project).status, 0, tsc(project).stdout);

    // The types are real: a misuse fails.
    fs.writeFileSync(path.join(project, 'misuse.ts'), `
import { WebCallClient } from '@switchboard/web-sdk';
const client = new WebCallClient();
client.on('update', (event) => { const n: number = event.transcript; console.log(n); });
void client.startCall({ accessToken: 42 });
`);
    const misuse = tsc(project);
    assert.notEqual(misuse.status, 0);
    assert.match(misuse.stdout, /misuse\.ts\(4,\d+\): error TS2322/);
    assert.match(misuse.stdout, /misuse\.ts\(5,\d+\): error TS2322/);
    fs.rmSync(path.join(project, 'misuse.ts'));

    const imported = spawnSync(process.execPath, ['--input-type=module', '-e', "const m = await import('@switchboard/web-sdk'); console.log(Object.keys(m).sort().join(','))"], { cwd: project, encoding: 'utf8' });
    assert.equal(imported.status, 0, imported.stderr);
    assert.equal(imported.stdout.trim(), 'PROTOCOL_VERSION,RetellWebClient,WIRE_SAMPLE_RATE,WebCallClient,WebCallError');
  });
});

describe('the server serves the SDK types', () => {
  let h: Harness;
  before(async () => {
    await buildPackage('web-sdk');
    h = await startHarness('sqlite');
  });
  after(() => h?.close());

  it('at /sdk/web-sdk.d.ts, the same file as the package', async () => {
    const response = await h.app.inject({ method: 'GET', url: '/sdk/web-sdk.d.ts' });
    assert.equal(response.statusCode, 200);
    assert.match(String(response.headers['content-type']), /^application\/typescript/);
    assert.equal(response.headers['access-control-allow-origin'], '*');
    assert.equal(response.body, fs.readFileSync(path.join(ROOT, 'packages/web-sdk/dist/web-sdk.d.ts'), 'utf8'));
    assert.match(response.body, /declare class WebCallClient/);
    assert.equal((await h.app.inject({ method: 'GET', url: '/sdk/client.ts' })).statusCode, 404);
  });
});
