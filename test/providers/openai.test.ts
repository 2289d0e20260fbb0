import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAiChatLlm } from '../../src/providers/openai/chat.llm.ts';
import { OpenAiTranscriptionStt } from '../../src/providers/openai/transcription.stt.ts';
import { OpenAiSpeechTts } from '../../src/providers/openai/speech.tts.ts';
import { ProviderError } from '../../src/providers/errors.ts';
import { decodeWav, encodeWav } from '../../src/lib/wav.ts';

type Handler = (req: IncomingMessage, body: Buffer, res: ServerResponse) => void | Promise<void>;

async function server(handler: Handler): Promise<{ baseUrl: string; close: () => Promise<void> }> {
  const s = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      // An async handler that fails answers 500 with its error, so the test fails on what the client saw.
      Promise.resolve(handler(req, Buffer.concat(chunks), res)).catch((error: unknown) => {
        if (res.headersSent) res.destroy();
        else res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
      });
    });
  });
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address() as AddressInfo;
  return { baseUrl: `http://127.0.0.1:${port}/v1`, close: () => new Promise((r) => { s.close(() => r()); s.closeAllConnections(); }) };
}

function sse(res: ServerResponse, chunks: unknown[]): void {
  res.writeHead(200, { 'content-type': 'text/event-stream' });
  for (const c of chunks) res.write(`data: ${JSON.stringify(c)}\n\n`);
  res.end('data: [DONE]\n\n');
}

test('chat: streams text deltas and assembles tool calls from SSE chunks', async () => {
  let seen: Record<string, unknown> = {};
  let auth = '';
  const srv = await server((req, body, res) => {
    seen = JSON.parse(body.toString()) as Record<string, unknown>;
    auth = String(req.headers.authorization);
    sse(res, [
      { choices: [{ delta: { role: 'assistant', content: 'Hel' } }] },
      { choices: [{ delta: { content: 'lo there.' } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, id: 'call_1', function: { name: 'transition_to_', arguments: '' } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { name: 'booking', arguments: '{"a":' } }] } }] },
      { choices: [{ delta: { tool_calls: [{ index: 0, function: { arguments: '1}' } }] }, finish_reason: 'tool_calls' }] },
    ]);
  });
  const llm = new OpenAiChatLlm({ baseUrl: srv.baseUrl, apiKey: 'sk-test', model: 'm1' });
  const out = [];
  for await (const d of llm.chat({ messages: [{ role: 'user', content: 'hi' }], tools: [{ name: 'end_call', parameters: { type: 'object' } }, { name: 'lookup', parameters: { type: 'object' }, strict: true }] })) out.push(d);
  assert.deepEqual(out, [
    { type: 'text', text: 'Hel' },
    { type: 'text', text: 'lo there.' },
    { type: 'tool_call', call: { id: 'call_1', name: 'transition_to_booking', arguments: '{"a":1}' } },
    { type: 'done', finishReason: 'tool_calls' },
  ]);
  assert.equal(auth, 'Bearer sk-test');
  assert.equal(seen['model'], 'm1');
  assert.equal(seen['stream'], true);
  assert.deepEqual((seen['tools'] as Array<{ function: { name: string } }>)[0]?.function.name, 'end_call');
  assert.deepEqual((seen['tools'] as Array<{ function: { strict?: boolean } }>).map((t) => t.function.strict), [undefined, true], 'strict only where the tool asks (tool_call_strict_mode)');
  await srv.close();
});

test('chat: 4xx is permanent, 5xx is retried then reported', async () => {
  let calls = 0;
  const srv = await server((_req, _body, res) => {
    calls++;
    res.writeHead(calls === 1 ? 503 : 401, { 'content-type': 'application/json' });
    res.end('{"error":{"message":"nope"}}');
  });
  const llm = new OpenAiChatLlm({ baseUrl: srv.baseUrl, model: 'm', maxRetries: 2 });
  await assert.rejects(
    async () => {
      for await (const _ of llm.chat({ messages: [] })) void _;
    },
    (e: unknown) => e instanceof ProviderError && e.kind === 'llm' && e.status === 401 && !e.retryable,
  );
  assert.equal(calls, 2, 'the 503 was retried once, the 401 was not');
  await srv.close();
});

test('transcription: uploads the utterance as multipart WAV and returns the text', async () => {
  let fields: FormData | undefined;
  const srv = await server(async (req, body, res) => {
    fields = await new Response(new Uint8Array(body), { headers: { 'content-type': String(req.headers['content-type']) } }).formData();
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ text: ' hello world ' }));
  });
  const stt = new OpenAiTranscriptionStt({ baseUrl: srv.baseUrl, model: 'whisper-1', language: 'en' });
  const s = await stt.openStream();
  s.write(new Int16Array(3200).fill(100));
  s.write(new Int16Array(3200).fill(-100));
  assert.deepEqual(await s.finalize(), { text: 'hello world' });
  assert.equal(fields?.get('model'), 'whisper-1');
  assert.equal(fields?.get('language'), 'en');
  const file = fields?.get('file') as File;
  const wav = decodeWav(new Uint8Array(await file.arrayBuffer()));
  assert.equal(wav.sampleRate, 16000);
  assert.equal(wav.samples.length, 6400);
  assert.deepEqual(await s.finalize(), { text: '' }, 'an empty utterance is not uploaded');
  await s.close();
  await srv.close();
});

test('speech: streams 24 kHz pcm, resampled to 16 kHz; wav answers are parsed', async () => {
  const seconds = 0.5;
  const pcm24 = new Int16Array(24000 * seconds).map((_, i) => Math.round(5000 * Math.sin((2 * Math.PI * 200 * i) / 24000)));
  let body: Record<string, unknown> = {};
  const srv = await server((req, b, res) => {
    body = JSON.parse(b.toString()) as Record<string, unknown>;
    res.writeHead(200, { 'content-type': 'application/octet-stream' });
    const bytes = body['response_format'] === 'wav' ? encodeWav({ sampleRate: 24000, channels: 1, samples: pcm24 }) : Buffer.from(pcm24.buffer);
    // Odd-sized pieces: the client must carry half samples across chunks.
    for (let i = 0; i < bytes.length; i += 1001) res.write(bytes.subarray(i, i + 1001));
    res.end();
  });
  for (const responseFormat of ['pcm', 'wav'] as const) {
    const tts = new OpenAiSpeechTts({ baseUrl: srv.baseUrl, model: 'tts-1', responseFormat });
    let n = 0;
    for await (const c of tts.synthesize('Hello.', { voiceId: 'nova' })) n += c.length;
    assert.ok(Math.abs(n - 16000 * seconds) < 400, `${responseFormat}: ${n} samples at 16 kHz`);
    assert.equal(body['voice'], 'nova');
    assert.equal(body['input'], 'Hello.');
    assert.equal(body['speed'], undefined, "the voice's own rate: no speed sent");
  }
  // The agent's voice_speed is OpenAI's `speed`.
  try {
    for await (const chunk of new OpenAiSpeechTts({ baseUrl: srv.baseUrl, model: 'tts-1' }).synthesize('Hello.', { speed: 1.25 })) assert.ok(chunk.length > 0);
    assert.equal(body['speed'], 1.25);
  } finally {
    await srv.close();
  }
});
