// The call's language reaches the providers that take one (issue 13, item 7): OpenAI
// transcription gets its ISO-639-1 code, Deepgram the BCP-47 tag; the languages and voices each
// provider says it offers.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { OpenAiTranscriptionStt } from '../../src/providers/openai/transcription.stt.ts';
import { OpenAiSpeechTts } from '../../src/providers/openai/speech.tts.ts';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { PocketsphinxStt } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { languageSupported } from '../../src/lib/language-tags.ts';

test("OpenAI transcription: the stream's language is sent as its ISO-639-1 code, over the configured one", async () => {
  const sent: Array<FormDataEntryValue | null> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      void new Response(Buffer.concat(chunks), { headers: { 'content-type': String(req.headers['content-type']) } }).formData().then((form) => {
        sent.push(form.get('language'));
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"olá"}');
      });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const stt = new OpenAiTranscriptionStt({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, model: 'whisper-1', language: 'en' });
    for (const language of ['pt-BR', undefined]) {
      const stream = await stt.openStream(language ? { language } : {});
      stream.write(new Int16Array(1600));
      assert.equal((await stream.finalize()).text, 'olá');
      await stream.close();
    }
    assert.deepEqual(sent, ['pt', 'en']);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test("Deepgram: the stream's language is the `language` parameter, over the configured one", async () => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const urls: string[] = [];
  wss.on('connection', (_ws, req) => urls.push(req.url ?? ''));
  try {
    const stt = new DeepgramStt({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/listen`, language: 'en-US' });
    for (const language of ['de-CH', undefined]) {
      const stream = await stt.openStream(language ? { language } : {});
      await stream.close();
    }
    assert.deepEqual(urls.map((u) => new URL(u, 'ws://x').searchParams.get('language')), ['de-CH', 'en-US']);
  } finally {
    for (const c of wss.clients) c.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
});

test('each provider says what it takes', () => {
  assert.deepEqual(new PocketsphinxStt().languages(), ['en-US']);
  const flite = new FliteTts();
  assert.deepEqual(flite.languages(), ['en-US']);
  assert.equal(flite.defaultVoiceId, 'flite-kal16');
  assert.deepEqual(flite.voices().filter((v) => v.sample_rate_hz === 8000).map((v) => v.voice_id), ['flite-kal']);
  const openai = new OpenAiSpeechTts({ baseUrl: 'http://127.0.0.1:9/v1', model: 'tts-1', defaultVoice: 'my-cloned-voice' });
  assert.equal(openai.voices()[0]?.voice_id, 'my-cloned-voice', "another compatible server's default voice is offered");
  assert.equal(openai.voices().length, 14);
  assert.ok(languageSupported('pt-BR', openai.languages()) && languageSupported('ja', openai.languages()));
  assert.ok(!languageSupported('tlh', openai.languages()));
  assert.ok(languageSupported('x-anything', new DeepgramStt().languages()));
  assert.ok(languageSupported('EN-us', ['en-US']) && !languageSupported('en', ['en-US']) && !languageSupported('en-GB', ['en-US']));
});
