// Expected phrases reach the hosted recognisers that take them: OpenAI-compatible transcription as
// the request's `prompt` (bias() then the keywords given at open), Deepgram as `keywords` query
// parameters of the connection.
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { test } from 'node:test';
import { WebSocketServer } from 'ws';
import { wsDataToBuffer } from '../../src/lib/ws-data.ts';
import { DeepgramStt } from '../../src/providers/deepgram/deepgram.stt.ts';
import { OpenAiTranscriptionStt } from '../../src/providers/openai/transcription.stt.ts';

test('OpenAI transcription: the prompt carries the phrases of bias() and the open-time keywords; none without them', async () => {
  const prompts: Array<string | null> = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('latin1');
      const m = /name="prompt"\r\n\r\n([^\r]*)\r\n/.exec(body);
      prompts.push(m ? m[1]! : null);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"text":"ok"}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  try {
    const stt = new OpenAiTranscriptionStt({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, apiKey: 'k', model: 'whisper-1' });
    const plain = await stt.openStream();
    plain.write(new Int16Array(1600).fill(100));
    await plain.finalize();
    const s = await stt.openStream({ keywords: ['acme', 'appointment'] });
    s.write(new Int16Array(1600).fill(100));
    await s.finalize();
    s.bias!(['yes', 'no', 'appointment']);
    s.write(new Int16Array(1600).fill(100));
    await s.finalize();
    s.bias!(Array.from({ length: 400 }, (_, i) => `word${i}`));
    s.write(new Int16Array(1600).fill(100));
    await s.finalize();
    assert.deepEqual(prompts.slice(0, 3), [null, 'acme, appointment', 'yes, no, appointment, acme']);
    assert.ok(prompts[3]!.length <= 600 && prompts[3]!.startsWith('word0, word1'), 'a long list is cut');
    await Promise.all([plain.close(), s.close()]);
  } finally {
    server.closeAllConnections();
    await new Promise<void>((r) => server.close(() => r()));
  }
});

test('Deepgram: the keywords given at open are query parameters of the connection', async () => {
  const wss = new WebSocketServer({ port: 0, host: '127.0.0.1' });
  await new Promise<void>((r) => wss.once('listening', () => r()));
  const urls: string[] = [];
  wss.on('connection', (ws, req) => {
    urls.push(req.url ?? '');
    ws.on('message', (data, binary) => {
      if (!binary && (JSON.parse(wsDataToBuffer(data).toString('utf8')) as { type: string }).type === 'CloseStream') ws.close(1000);
    });
  });
  try {
    const stt = new DeepgramStt({ url: `ws://127.0.0.1:${(wss.address() as AddressInfo).port}/v1/listen`, apiKey: 'k' });
    const s = await stt.openStream({ keywords: ['appointment', 'alice johnson'] });
    await s.close();
    const params = new URL(urls[0]!, 'ws://x').searchParams;
    assert.deepEqual(params.getAll('keywords'), ['appointment', 'alice johnson']);
    assert.equal(s.bias, undefined, 'no mid-stream bias: the live API fixes keywords at connection');
  } finally {
    for (const ws of wss.clients) ws.terminate();
    await new Promise<void>((r) => wss.close(() => r()));
  }
});
