// The .env file (issue 27): the server and the CLI read settings from it, the process's own
// environment wins over it, and a named file that is missing stops start-up with its name.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { environment } from '../../src/config/env-file.ts';
import { runCli, startServer } from '../helpers/process.ts';

const FAKE_ENGINES = { STT_PROVIDER: 'fake', TTS_PROVIDER: 'fake', VAD_PROVIDER: 'energy' };

describe('the .env file', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-envfile-'));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('is read from the working directory by default; the environment wins; ENV_FILE= reads none', () => {
    fs.writeFileSync(path.join(dir, '.env'), '# settings\nDATA_DIR=./from-file\nLOG_LEVEL=debug\nQUOTED="a b"\n');
    const env = environment({ LOG_LEVEL: 'warn' }, dir);
    assert.equal(env['DATA_DIR'], './from-file');
    assert.equal(env['QUOTED'], 'a b');
    assert.equal(env['LOG_LEVEL'], 'warn', 'the process environment wins over the file');
    assert.deepEqual(environment({ ENV_FILE: '', LOG_LEVEL: 'warn' }, dir), { ENV_FILE: '', LOG_LEVEL: 'warn' });
    assert.deepEqual(environment({ A: '1' }, os.tmpdir() + path.sep + 'nowhere-sb'), { A: '1' }, 'no .env: nothing added');
  });

  it('the server takes DATA_DIR from it, and the CLI its key and server; a missing named file stops start-up', { timeout: 60_000 }, async () => {
    const dataDir = path.join(dir, 'data-from-file');
    const serverEnv = path.join(dir, 'server.env');
    // PORT=1 in the file loses to the PORT=0 the test environment sets: the server still starts.
    fs.writeFileSync(serverEnv, `DATA_DIR=${dataDir}\nPORT=1\n`);
    const key = await runCli(['keys', 'create', '--name', 'envfile'], { ...FAKE_ENGINES, ENV_FILE: serverEnv });
    assert.equal(key.code, 0, key.stderr);
    const apiKey = JSON.parse(key.stdout).api_key as string;
    assert.ok(fs.existsSync(dataDir), 'the key was stored in the DATA_DIR of the file');

    const server = await startServer({ ...FAKE_ENGINES, ENV_FILE: serverEnv });
    try {
      const cliEnv = path.join(dir, 'cli.env');
      fs.writeFileSync(cliEnv, `SWITCHBOARD_API_KEY=${apiKey}\nSWITCHBOARD_BASE_URL=${server.baseUrl}\n`);
      const list = await runCli(['calls', 'list'], { ENV_FILE: cliEnv });
      assert.equal(list.code, 0, list.stderr);
      assert.deepEqual(JSON.parse(list.stdout), { calls: [] }, 'the key from the file is accepted by the server using the DATA_DIR from its file');
    } finally {
      await server.stop();
    }

    const missing = await runCli(['keys', 'create'], { ENV_FILE: path.join(dir, 'absent.env') });
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /ENV_FILE .*absent\.env cannot be read \(ENOENT\)/);
  });
});
