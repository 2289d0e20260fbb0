// The providers as the runtime uses them (src/providers/logged.ts): failures logged, and
// everything else of each provider and stream reaching the caller as it is. The optional members
// of a recognition stream were once dropped (pendingMs), which hid PocketSphinx's lag from the
// adaptive end of turn in production.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pino from 'pino';
import { ProviderError } from '../../src/providers/errors.ts';
import { EnergyVad, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { logProviderFailures } from '../../src/providers/logged.ts';
import { pocketsphinxCapabilities } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import type { Providers } from '../../src/providers/registry.ts';
import type { SttCapabilities, SttProvider, SttStream } from '../../src/providers/stt.ts';

/** A recogniser whose streams have every optional member, recording the calls they get. */
function fullStt(calls: string[], capabilities: () => SttCapabilities | undefined = () => undefined): SttProvider {
  return {
    id: 'full',
    get capabilities() {
      return capabilities();
    },
    languages: () => ['en-US'],
    openStream: async (): Promise<SttStream> => ({
      write: () => calls.push('write'),
      finalize: async () => ({ text: 'ok' }),
      close: async () => void calls.push('close'),
      bias: (phrases) => void calls.push(`bias ${phrases.join(',')}`),
      pendingMs: () => 240,
    }),
  };
}

function wrap(stt: SttProvider, lines: Array<Record<string, unknown>> = []): Providers {
  const log = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line) as Record<string, unknown>) });
  return logProviderFailures({ llm: undefined, stt, tts: new FakeTts(), vad: new EnergyVad(), close: async () => {} }, log);
}

describe('logged providers', () => {
  it("forward every optional member a stream has: pendingMs() and bias() reach the stream's own", async () => {
    const calls: string[] = [];
    const stream = await wrap(fullStt(calls)).stt.openStream();
    assert.equal(stream.pendingMs?.(), 240, 'how far the recogniser lags reaches the end of turn');
    stream.bias?.(['book', 'pay']);
    stream.write(new Int16Array(160));
    assert.deepEqual(await stream.finalize(), { text: 'ok' });
    await stream.close();
    assert.deepEqual(calls, ['bias book,pay', 'write', 'close']);
  });

  it('add no optional member a stream lacks', async () => {
    const stream = await wrap(new FakeStt(['hi'])).stt.openStream();
    assert.equal('pendingMs' in stream, false);
    assert.equal('bias' in stream, false);
    await stream.close();
  });

  it("state the wrapped provider's capabilities, as they are when read", () => {
    let capabilities: SttCapabilities | undefined = pocketsphinxCapabilities('process');
    const providers = wrap(fullStt([], () => capabilities));
    assert.equal(providers.stt.capabilities?.interimResults, false);
    capabilities = pocketsphinxCapabilities('library');
    assert.equal(providers.stt.capabilities?.interimResults, true);
    capabilities = undefined;
    assert.equal(providers.stt.capabilities, undefined, 'a recogniser that states none still states none');
    assert.deepEqual(providers.tts.capabilities, new FakeTts().capabilities);
  });

  it('log a failure once with the provider and pass it on unchanged', async () => {
    const lines: Array<Record<string, unknown>> = [];
    const fake = new FakeStt(['hi']);
    const stream = await wrap(fake, lines).stt.openStream();
    stream.write(new Int16Array(160));
    fake.fail('engine died');
    await assert.rejects(stream.finalize(), (error: unknown) => error instanceof ProviderError && /engine died/.test(error.message));
    assert.deepEqual(
      lines.map((l) => [l['msg'], l['provider'], l['operation'], l['kind']]),
      [['provider failed', 'fake', 'finalize', 'asr']],
    );
    await stream.close();
  });
});
