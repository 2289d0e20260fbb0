// Issue 24: voicemail detection end to end over SIP, on both stores. create-phone-call reaches a
// baresip (Debian) that answers at once and plays an answering machine's greeting as its
// microphone: Flite speech, then a 1 kHz beep made with sox. The agent holds its opening through
// the greeting, leaves its message after the beep, hangs up (our BYE), and the call ends
// `voicemail_reached` with `call_analysis.in_voicemail`.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { writeWav } from '../../../src/client/web-call-client.ts';
import { decodeWav } from '../../../src/lib/wav.ts';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { FliteTts } from '../../../src/providers/flite/flite.tts.ts';
import { STORES } from '../../helpers/stores.ts';
import { type MediaServer, eventually, fakeProviders, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, hasBaresip } from './baresip.ts';

const OPENING = 'Hi, this is Ada from Acme.';
const FLOW = { start_node_id: 'greet', nodes: [{ id: 'greet', type: 'conversation', instruction: { type: 'static_text', text: OPENING }, edges: [] }] };
const MESSAGE = 'Hi Sam, Ada from Acme here. Please call us back.';

/** The machine's greeting as a WAV (8 kHz): Flite's words, 300 ms of quiet, a 500 ms 1 kHz beep from sox, 8 s of quiet. Returns its path and where the beep begins, ms. */
async function machineGreeting(dir: string): Promise<{ wav: string; beepStartMs: number }> {
  const flite = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of flite.synthesize("Hi, you have reached Sam. I can't come to the phone right now, so please leave a message after the tone.", { voiceId: 'flite-kal16' })) parts.push(c);
  await flite.close();
  const words16k = new Int16Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) words16k.set(p, (at += p.length) - p.length);
  // At most 4.5 s of it, on the phone band: pairs averaged to 8 kHz.
  const words = Int16Array.from({ length: Math.min(Math.floor(words16k.length / 2), 8 * 4_500) }, (_, i) => Math.round((words16k[2 * i]! + words16k[2 * i + 1]!) / 2));
  const speech = path.join(dir, 'words.wav');
  fs.writeFileSync(speech, writeWav(words, 8000));
  const wav = path.join(dir, 'machine.wav');
  const beep = path.join(dir, 'beep.wav');
  const quiet = path.join(dir, 'quiet.wav');
  const gap = path.join(dir, 'gap.wav');
  for (const [file, args] of [
    [beep, ['synth', '0.5', 'sine', '1000', 'vol', '0.3']],
    [quiet, ['trim', '0', '8']],
    [gap, ['trim', '0', '0.3']],
  ] as const) {
    const made = spawnSync('sox', ['-n', '-r', '8000', '-c', '1', '-b', '16', file, ...args], { encoding: 'utf8' });
    assert.equal(made.status, 0, made.stderr);
  }
  const joined = spawnSync('sox', [speech, gap, beep, quiet, wav], { encoding: 'utf8' });
  assert.equal(joined.status, 0, joined.stderr);
  return { wav, beepStartMs: words.length / 8 + 300 };
}

// One greeting for both stores (Flite and sox run once).
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-sip-vm-'));
let made: Promise<{ wav: string; beepStartMs: number }> | undefined;
after(() => fs.rmSync(dir, { recursive: true, force: true }));

for (const kind of STORES) {
  describe(`voicemail detection on an outbound SIP call to baresip (${kind.name})`, { skip: kind.skip || (!hasBaresip() && NO_BARESIP) }, () => {
    let s: MediaServer;
    let sip: SipTransport;
    let greeting: { wav: string; beepStartMs: number };
    before(async () => {
      greeting = await (made ??= machineGreeting(dir));
      s = await startMediaServer(kind.name, { providers: fakeProviders([], { msPerChar: 30 }), env: { SIP_PORT: '0', SIP_RTP_PORT_MIN: '47000', SIP_RTP_PORT_MAX: '47998', WEBHOOK_ALLOWED_CIDRS: '127.0.0.0/8' } });
      sip = s.app.transports.get('sip') as SipTransport;
      await sip.ready;
    });
    after(async () => {
      await s?.close();
    });

    it('the machine answers: the agent waits through its greeting, leaves the message after the beep and ends voicemail_reached', { timeout: 40_000 }, async () => {
      const machine = await Baresip.start({ user: '+14155550777', answer: 'auto', wav: greeting.wav });
      try {
        const agentId = await s.flowAgent(FLOW, {
          enable_voicemail_detection: true,
          voicemail_detection_timeout_ms: 20_000,
          voicemail_option: { action: { type: 'static_text', text: 'Hi {{name}}, Ada from Acme here. Please call us back.' } },
        });
        const imported = await s.api('POST', '/import-phone-number', { phone_number: '+14155550100', termination_uri: `127.0.0.1:${machine.sipPort}`, outbound_agent_id: agentId });
        assert.equal(imported.status, 201, JSON.stringify(imported.json));
        const created = await s.api('POST', '/v2/create-phone-call', { from_number: '+14155550100', to_number: '+14155550777', retell_llm_dynamic_variables: { name: 'Sam' } });
        assert.equal(created.status, 201, JSON.stringify(created.json));
        const callId = created.json.call_id as string;
        await machine.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
        // The agent hangs up after its message: our BYE closes the machine's call.
        await machine.waitFor((e) => e.type === 'CALL_CLOSED', 25_000);
        const row = await eventually(async () => {
          const call = (await s.api('GET', `/v2/get-call/${callId}`)).json;
          return call.call_status === 'ended' ? call : undefined;
        }, 15_000);
        assert.equal(row.disconnection_reason, 'voicemail_reached');
        assert.equal(row.call_analysis.in_voicemail, true);
        assert.equal(row.media.transport, 'sip');
        const agentTurns = (row.transcript_object as Array<{ role: string; content: string; start_ms: number }>).filter((u) => u.role === 'agent');
        assert.deepEqual(agentTurns.map((u) => u.content), [MESSAGE], 'the message, never the opening');
        // On the call's timeline (from the answer, when the machine began its greeting): not over the greeting.
        assert.ok((agentTurns[0]?.start_ms ?? 0) >= greeting.beepStartMs, `the message began at ${agentTurns[0]?.start_ms} ms, the beep at ${Math.round(greeting.beepStartMs)} ms`);
        // What the machine recorded (baresip's decoded audio; it records the packets that came, and none came before the message).
        const heard = machine.recordings().find((file) => file.endsWith('-dec.wav'));
        assert.ok(heard, 'baresip recorded what it heard');
        const audio = decodeWav(fs.readFileSync(heard));
        // 100 ms windows with speech in them (a click or two is not speech).
        const windowSamples = audio.sampleRate / 10;
        const loudWindows = Array.from({ length: Math.floor(audio.samples.length / windowSamples) }, (_, w) => audio.samples.subarray(w * windowSamples, (w + 1) * windowSamples).filter((v) => Math.abs(v) > 1000).length > windowSamples / 10);
        assert.ok(loudWindows.filter(Boolean).length >= 10, `${loudWindows.filter(Boolean).length} windows of speech: the message reached the machine`);
        assert.equal(sip.dialogCount, 0);
      } finally {
        await machine.close();
      }
    });
  });
}
