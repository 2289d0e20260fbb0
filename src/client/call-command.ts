/**
 * `npm run -s cli -- call`: creates a web call over HTTP, joins it, streams a WAV in real time,
 * stays until the agent hangs up (or hangs up itself `lingerMs` after the WAV and the agent's last
 * activity), and returns what the client saw. Client side only: speaks HTTP and the media protocol.
 */
import fs from 'node:fs/promises';
import { WebCallClient, readWav, type TranscriptLine } from './web-call-client.ts';

export interface CallCommandOptions {
  baseUrl: string;
  apiKey: string;
  agentId: string;
  wavFile: string;
  /** Where to write the agent's audio (16 kHz mono WAV). */
  outFile?: string;
  /** Quiet time after the WAV (no agent audio or event) before the client hangs up, ms; default 5 000. */
  lingerMs?: number;
}

export interface CallCommandResult {
  call_id: string;
  call_status: string;
  disconnection_reason: string;
  transcript: TranscriptLine[];
}

export class CallCommandError extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
}

export async function runCallCommand(o: CallCommandOptions): Promise<CallCommandResult> {
  // Refuses unreadable or unsupported files before any call exists.
  let audio: Int16Array;
  try {
    audio = readWav(await fs.readFile(o.wavFile));
  } catch (e) {
    throw new CallCommandError('bad_wav', `${o.wavFile}: ${e instanceof Error ? e.message : String(e)}`);
  }
  const res = await fetch(`${o.baseUrl.replace(/\/+$/, '')}/v2/create-web-call`, {
    method: 'POST',
    headers: { authorization: `Bearer ${o.apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ agent_id: o.agentId }),
  }).catch((e: unknown) => {
    throw new CallCommandError('connection_failed', `cannot reach ${o.baseUrl}: ${e instanceof Error ? e.message : String(e)}`);
  });
  const body = (await res.json().catch(() => ({}))) as { call_id?: string; access_token?: string; code?: string; message?: string };
  if (res.status !== 201 || !body.access_token || !body.call_id) {
    throw new CallCommandError(body.code ?? `http_${res.status}`, `create-web-call answered ${res.status}: ${body.message ?? 'no message'}`);
  }
  const client = await WebCallClient.join({ url: o.baseUrl, accessToken: body.access_token });
  let endedEarly = false;
  void client.ended.then(() => (endedEarly = true));
  await Promise.race([client.play(audio), client.ended]);
  if (!endedEarly) {
    const linger = o.lingerMs ?? 5_000;
    // Wait while the agent is still answering; hang up after `linger` ms of quiet.
    for (;;) {
      const lastActivity = Math.max(client.agentAudio.at(-1)?.atMs ?? 0, client.events.at(-1)?.atMs ?? 0);
      const quietFor = client.now() - lastActivity;
      if (endedEarly) break;
      if (quietFor >= linger) {
        await Promise.race([client.hangup(), sleep(10_000)]);
        break;
      }
      await Promise.race([sleep(Math.min(250, linger - quietFor)), client.ended]);
    }
  }
  const end = await Promise.race([client.ended, sleep(15_000).then(() => null)]);
  if (!end) client.drop();
  if (o.outFile) await client.saveAgentWav(o.outFile);
  return {
    call_id: body.call_id,
    call_status: end?.call_status ?? 'unknown',
    disconnection_reason: end?.disconnection_reason ?? 'no_call_ended_event',
    transcript: client.transcript,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms).unref());
}
