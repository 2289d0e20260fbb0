// A local server speaking Twilio's real wire protocol, for the Twilio transport's tests: the REST
// `Calls` API (create, and update a live call with TwiML or Status=completed) with HTTP Basic auth
// and Twilio's error bodies, the requests Twilio makes to us (the voice webhook and the status
// callbacks, each with a real X-Twilio-Signature) and the media-stream WebSocket client Twilio
// opens for <Connect><Stream> (connected, start, media as μ-law 8 kHz in 20 ms chunks, dtmf,
// mark echoed once the audio before it has played at real time, clear, stop), which decodes the
// DTMF tones in what it plays (Goertzel), as the far end's IVR would.
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import WebSocket from 'ws';
import { wsDataToBuffer } from '../../../src/lib/ws-data.ts';
import { decodeMulaw, encodeMulaw } from '../../../src/media/codec/mulaw.ts';
import { parseFormBody, twilioSignature } from '../../../src/media/twilio/signature.ts';
import { decodeKeypad } from '../keypad-decoder.ts';

/** A call created through the REST API, as the fake holds it. */
export interface FakeCall {
  sid: string;
  accountSid: string;
  params: Record<string, string | string[]>;
  /** The REST updates of the live call (Twiml, Url, Status), in order. */
  updates: Array<Record<string, string | string[]>>;
  stream?: FakeStream;
}

/** What Twilio's REST API answered, for a test's asserting. */
export interface RestRequest {
  method: string;
  path: string;
  authorized: boolean;
  params: Record<string, string | string[]>;
}

const sid = (prefix: string) => prefix + randomBytes(16).toString('hex');

export class FakeTwilio {
  readonly accountSid: string;
  readonly authToken: string;
  readonly calls = new Map<string, FakeCall>();
  readonly requests: RestRequest[] = [];
  /** Status callbacks the server answered, with their HTTP status. */
  readonly callbacks: Array<{ url: string; status: number; params: Record<string, string> }> = [];
  #server!: Server;
  baseUrl = '';
  /**
   * Where a public URL of ours is really reached: Twilio signs and requests the URL as configured
   * (`https://switchboard.example.com/twilio/voice`); a proxy in front of the server, here this
   * rewrite, takes it to the local port.
   */
  route: (url: string) => string = (url) => url;

  constructor(accountSid = `AC${randomBytes(16).toString('hex')}`, authToken = randomBytes(16).toString('hex')) {
    this.accountSid = accountSid;
    this.authToken = authToken;
  }

  async start(): Promise<this> {
    this.#server = createServer((req, res) => void this.#handle(req, res));
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `http://127.0.0.1:${(this.#server.address() as AddressInfo).port}`;
    return this;
  }

  async close(): Promise<void> {
    for (const call of this.calls.values()) call.stream?.ws.terminate();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /**
   * A call arrives at a number: Twilio asks the voice webhook (signed with `token`, by default
   * the account's), and opens the stream the TwiML names. Returns the webhook's answer, and the
   * stream when there is one.
   */
  async ring(webhookUrl: string, options: { from: string; to: string; token?: string; signature?: string | null; signedUrl?: string }): Promise<{ status: number; twiml: string; stream?: FakeStream; callSid: string }> {
    const callSid = sid('CA');
    const params = { AccountSid: this.accountSid, ApiVersion: '2010-04-01', CallSid: callSid, CallStatus: 'ringing', Called: options.to, Caller: options.from, Direction: 'inbound', From: options.from, To: options.to };
    const answer = await this.#post(webhookUrl, params, options.token, options.signature, options.signedUrl);
    const stream = answer.status === 200 ? await this.#openStream(answer.body, callSid) : undefined;
    return { status: answer.status, twiml: answer.body, callSid, ...(stream ? { stream } : {}) };
  }

  /** The callee of a call created through the REST API answers: Twilio fetches its Url and opens the stream. */
  async answer(callSid: string): Promise<FakeStream> {
    const call = this.#call(callSid);
    await this.#statusCallback(call, 'in-progress');
    const url = String(call.params.Url);
    const answer = await this.#post(url, { AccountSid: call.accountSid, ApiVersion: '2010-04-01', CallSid: call.sid, CallStatus: 'in-progress', Direction: 'outbound-api', From: String(call.params.From), To: String(call.params.To) });
    if (answer.status !== 200) throw new Error(`voice url answered ${answer.status}: ${answer.body}`);
    const stream = await this.#openStream(answer.body, callSid);
    if (!stream) throw new Error(`no stream in ${answer.body}`);
    call.stream = stream;
    return stream;
  }

  /** The call is not answered: Twilio posts the final status (busy, no-answer, failed, canceled) to the status callback. */
  async fail(callSid: string, status: 'busy' | 'no-answer' | 'failed' | 'canceled'): Promise<number> {
    return this.#statusCallback(this.#call(callSid), status);
  }

  /** The call ended: `completed` to the status callback. */
  async completed(callSid: string): Promise<number> {
    return this.#statusCallback(this.#call(callSid), 'completed');
  }

  #call(callSid: string): FakeCall {
    const call = this.calls.get(callSid);
    if (!call) throw new Error(`no call ${callSid}`);
    return call;
  }

  async #statusCallback(call: FakeCall, status: string): Promise<number> {
    const url = call.params.StatusCallback;
    if (typeof url !== 'string') return 0;
    const params = { AccountSid: call.accountSid, ApiVersion: '2010-04-01', CallSid: call.sid, CallStatus: status, Direction: 'outbound-api', From: String(call.params.From), To: String(call.params.To), Timestamp: new Date().toUTCString() };
    const answer = await this.#post(url, params);
    this.callbacks.push({ url, status: answer.status, params });
    return answer.status;
  }

  /** POSTs a form to one of our server's URLs as Twilio does: signed (for `signedUrl`, by default the URL itself), unless `signature` is given (null: none). */
  async #post(url: string, params: Record<string, string>, token = this.authToken, signature?: string | null, signedUrl = url): Promise<{ status: number; body: string }> {
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', 'user-agent': 'TwilioProxy/1.1', 'i-twilio-idempotency-token': randomBytes(8).toString('hex') };
    const signed = signature === undefined ? twilioSignature(token, signedUrl, params) : signature;
    if (signed !== null) headers['x-twilio-signature'] = signed;
    const res = await fetch(this.route(url), { method: 'POST', headers, body: new URLSearchParams(params).toString() });
    return { status: res.status, body: await res.text() };
  }

  /** Opens the stream that a <Connect><Stream> TwiML names, and sends connected and start. */
  async #openStream(twiml: string, callSid: string): Promise<FakeStream | undefined> {
    const match = /<Connect><Stream url="([^"]+)">(.*?)<\/Stream><\/Connect>/.exec(twiml);
    if (!match) return undefined;
    const unescape = (s: string) => s.replace(/&quot;/g, '"').replace(/&apos;/g, "'").replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    const parameters: Record<string, string> = {};
    for (const p of match[2]!.matchAll(/<Parameter name="([^"]*)" value="([^"]*)"\/>/g)) parameters[unescape(p[1]!)] = unescape(p[2]!);
    const stream = new FakeStream(this.route(unescape(match[1]!)), this.accountSid, callSid, parameters);
    await stream.open();
    const call = this.calls.get(callSid);
    if (call) call.stream = stream;
    return stream;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const params = parseFormBody(Buffer.concat(chunks).toString('utf8'));
    const path = (req.url ?? '').split('?')[0]!;
    const auth = req.headers.authorization ?? '';
    const authorized = auth === `Basic ${Buffer.from(`${this.accountSid}:${this.authToken}`).toString('base64')}`;
    this.requests.push({ method: req.method ?? '', path, authorized, params });
    const json = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!authorized) return json(401, { code: 20003, message: 'Authenticate', more_info: 'https://www.twilio.com/docs/errors/20003', status: 401 });
    const create = new RegExp(`^/2010-04-01/Accounts/${this.accountSid}/Calls\\.json$`).exec(path);
    const update = new RegExp(`^/2010-04-01/Accounts/${this.accountSid}/Calls/(CA[0-9a-f]{32})\\.json$`).exec(path);
    if (req.method === 'POST' && create) {
      for (const field of ['To', 'From']) {
        if (typeof params[field] !== 'string') return json(400, { code: 21201, message: `Required parameter "${field}" missing.`, status: 400 });
      }
      if (typeof params.Url !== 'string' && typeof params.Twiml !== 'string') return json(400, { code: 21205, message: 'Url parameter is required.', status: 400 });
      const call: FakeCall = { sid: sid('CA'), accountSid: this.accountSid, params, updates: [] };
      this.calls.set(call.sid, call);
      return json(201, { sid: call.sid, account_sid: this.accountSid, to: params.To, from: params.From, status: 'queued', direction: 'outbound-api', api_version: '2010-04-01', uri: `/2010-04-01/Accounts/${this.accountSid}/Calls/${call.sid}.json` });
    }
    if (req.method === 'POST' && update) {
      const call = this.calls.get(update[1]!) ?? [...this.calls.values()].find((c) => c.sid === update[1]);
      if (!call) return json(404, { code: 20404, message: `The requested resource /2010-04-01/Accounts/${this.accountSid}/Calls/${update[1]}.json was not found`, status: 404 });
      call.updates.push(params);
      // New TwiML (or a hang-up) ends the stream the call was in: Twilio sends stop and closes.
      call.stream?.stop();
      return json(200, { sid: call.sid, account_sid: this.accountSid, status: params.Status === 'completed' ? 'completed' : 'in-progress' });
    }
    return json(404, { code: 20404, message: 'The requested resource was not found', status: 404 });
  }

  /** Registers an inbound call's sid so the REST API can update it (a call Twilio itself received). */
  adopt(callSid: string, stream: FakeStream | undefined, params: Record<string, string> = {}): void {
    this.calls.set(callSid, { sid: callSid, accountSid: this.accountSid, params, updates: [], ...(stream ? { stream } : {}) });
  }
}

/** Twilio's side of one media stream: what it sends, what it has received, and a real-time player for our audio. */
export class FakeStream {
  readonly url: string;
  readonly streamSid = sid('MZ');
  readonly parameters: Record<string, string>;
  ws!: WebSocket;
  /** Every message we sent, parsed, in order. */
  readonly received: Array<{ event: string; [field: string]: unknown }> = [];
  /** Our audio as played (μ-law decoded to 8 kHz PCM), and the marks echoed, in order. */
  readonly played: Int16Array[] = [];
  readonly echoedMarks: string[] = [];
  readonly closed: Promise<number>;
  readonly #accountSid: string;
  readonly #callSid: string;
  /** Our audio and marks waiting to be played, in order. */
  #queue: Array<{ audio: Int16Array } | { mark: string }> = [];
  #player: ReturnType<typeof setInterval> | undefined;
  #sequence = 0;
  #chunk = 0;
  #startedAt = 0;

  constructor(url: string, accountSid: string, callSid: string, parameters: Record<string, string>) {
    this.url = url;
    this.#accountSid = accountSid;
    this.#callSid = callSid;
    this.parameters = parameters;
    this.closed = new Promise(() => {});
  }

  async open(): Promise<void> {
    const ws = new WebSocket(this.url, { perMessageDeflate: false });
    this.ws = ws;
    (this as { closed: Promise<number> }).closed = new Promise((resolve) => ws.on('close', (code) => resolve(code)));
    ws.on('error', () => {});
    ws.on('close', () => this.#halt());
    ws.on('message', (data) => this.#onMessage(JSON.parse(wsDataToBuffer(data).toString('utf8')) as { event: string; [field: string]: unknown }));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', resolve);
      ws.once('close', (code) => reject(new Error(`stream closed at once (${code})`)));
    });
    this.#startedAt = performance.now();
    this.#send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    this.#send({
      event: 'start',
      sequenceNumber: String(++this.#sequence),
      start: { accountSid: this.#accountSid, streamSid: this.streamSid, callSid: this.#callSid, tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 }, customParameters: this.parameters },
      streamSid: this.streamSid,
    });
    // Twilio plays what it receives at real time, 20 ms at a time.
    this.#player = setInterval(() => this.#play(), 20);
  }

  /**
   * The caller's audio (8 kHz PCM), sent as Twilio does: 20 ms μ-law chunks, one message each,
   * paced at real time. Resolves true once all of it was sent, false when the stream closed first.
   */
  async say(pcm8k: Int16Array): Promise<boolean> {
    for (let at = 0; at < pcm8k.length; at += 160) {
      if (this.ws.readyState !== WebSocket.OPEN) return false;
      this.sendMedia(encodeMulaw(pcm8k.subarray(at, at + 160)));
      await new Promise((r) => setTimeout(r, 20));
    }
    return true;
  }

  /** One media message with these μ-law bytes (unpaced). */
  sendMedia(mulaw: Uint8Array): void {
    this.#chunk += 1;
    this.#send({ event: 'media', sequenceNumber: String(++this.#sequence), media: { track: 'inbound', chunk: String(this.#chunk), timestamp: String(Math.round(performance.now() - this.#startedAt)), payload: Buffer.from(mulaw).toString('base64') }, streamSid: this.streamSid });
  }

  /** Chunks lost on the way: the next media message's number skips `n`. */
  skipChunks(n: number): void {
    this.#chunk += n;
  }

  /** The player stops: a carrier that plays nothing more and echoes no more marks. */
  stall(): void {
    this.#halt();
  }

  /** A key pressed on the caller's phone. */
  dtmf(digit: string): void {
    this.#send({ event: 'dtmf', streamSid: this.streamSid, sequenceNumber: String(++this.#sequence), dtmf: { track: 'inbound_track', digit } });
  }

  /** Any text on the socket (for hostile tests). */
  raw(text: string): void {
    this.ws.send(text);
  }

  /** The call ends on Twilio's side (the caller hung up, or new TwiML): stop, then close. */
  stop(): void {
    if (this.ws.readyState !== WebSocket.OPEN) return;
    this.#send({ event: 'stop', sequenceNumber: String(++this.#sequence), streamSid: this.streamSid, stop: { accountSid: this.#accountSid, callSid: this.#callSid } });
    this.#halt();
    this.ws.close(1000);
  }

  /** Every message of `event` we sent so far. */
  sent(event: string): Array<{ event: string; [field: string]: unknown }> {
    return this.received.filter((m) => m.event === event);
  }

  /** The keys heard in our audio as played so far (DTMF tones, decoded as a phone network's receiver does). */
  keysHeard(): string {
    return decodeKeypad(this.playedAudio(), 8000);
  }

  /** Our audio as played so far, in one piece (8 kHz). */
  playedAudio(): Int16Array {
    const out = new Int16Array(this.playedSamples);
    let at = 0;
    for (const a of this.played) {
      out.set(a, at);
      at += a.length;
    }
    return out;
  }

  /** Samples of our audio played so far. */
  get playedSamples(): number {
    return this.played.reduce((n, a) => n + a.length, 0);
  }

  #send(message: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(message));
  }

  #onMessage(message: { event: string; [field: string]: unknown }): void {
    this.received.push(message);
    if (message.event === 'media') {
      const payload = (message.media as { payload: string }).payload;
      this.#queue.push({ audio: decodeMulaw(Buffer.from(payload, 'base64')) });
    } else if (message.event === 'mark') {
      this.#queue.push({ mark: (message.mark as { name: string }).name });
    } else if (message.event === 'clear') {
      // Twilio drops the audio not played yet and sends back every mark that was waiting.
      const pending = this.#queue.filter((item): item is { mark: string } => 'mark' in item);
      this.#queue = [];
      for (const { mark } of pending) this.#echo(mark);
    }
  }

  /** Plays 20 ms of queued audio (160 samples), then echoes the marks that follow it. */
  #play(): void {
    let budget = 160;
    while (this.#queue.length > 0) {
      const head = this.#queue[0]!;
      if ('mark' in head) {
        this.#queue.shift();
        this.#echo(head.mark);
        continue;
      }
      if (budget === 0) break;
      const n = Math.min(budget, head.audio.length);
      this.played.push(head.audio.subarray(0, n));
      budget -= n;
      if (n === head.audio.length) this.#queue.shift();
      else head.audio = head.audio.subarray(n);
    }
  }

  #echo(name: string): void {
    this.echoedMarks.push(name);
    this.#send({ event: 'mark', sequenceNumber: String(++this.#sequence), streamSid: this.streamSid, mark: { name } });
  }

  #halt(): void {
    if (this.#player) clearInterval(this.#player);
    this.#player = undefined;
  }
}
