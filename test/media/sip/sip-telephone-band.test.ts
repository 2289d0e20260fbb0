// Issue 24, item 6: a G.711 call runs at the telephone band end to end. baresip (Debian) dials in
// on PCMU with a Flite WAV, cut to 8 kHz, as its microphone; the server runs the embedded engines
// (PocketSphinx, fvad, Flite) with a recogniser that records what reaches it, told to take phone
// calls at 8 kHz (PocketSphinx's narrowband decoder; by default PocketSphinx is given an upsampled
// copy, which it hears better: SttCapabilities.telephoneRate). The recogniser is opened at 8 kHz
// and handed 20 ms frames of 160 samples (a step that resampled to 16 kHz would hand it 320), the
// flow takes the branch the caller asked for, and the recording is an 8 kHz WAV.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadConfig } from '../../../src/config/config.ts';
import type { SipTransport } from '../../../src/media/sip/sip.transport.ts';
import { buildProviders } from '../../../src/providers/registry.ts';
import { RecordingStt } from '../../helpers/recording-stt.ts';
import { NO_POCKETSPHINX, hasPocketsphinx } from '../../voice/capabilities.ts';
import { type MediaServer, eventually, startMediaServer } from '../helpers.ts';
import { Baresip, NO_BARESIP, ROUTING, fliteCallerWav, hasBaresip } from './baresip.ts';


const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-sip-8k-'));
after(() => fs.rmSync(dir, { recursive: true, force: true }));


describe('a G.711 SIP call at the telephone band, end to end', { skip: (!hasBaresip() && NO_BARESIP) || (!hasPocketsphinx() && NO_POCKETSPHINX) }, () => {
  let s: MediaServer;
  let sip: SipTransport;
  let stt: RecordingStt;
  before(async () => {
    const env = { SIP_PORT: '0', SIP_RTP_PORT_MIN: '45000', SIP_RTP_PORT_MAX: '45998' };
    const real = buildProviders(loadConfig({ DATA_DIR: dir, ...env }).media.providers);
    const stated = real.stt.capabilities;
    assert.ok(stated);
    stt = new RecordingStt(real.stt, { ...stated, telephoneRate: 8000 });
    s = await startMediaServer('sqlite', { providers: { ...real, stt }, env });
    sip = s.app.transports.get('sip') as SipTransport;
    await sip.ready;
  });
  after(() => s?.close());

  it('the recogniser is opened at 8 kHz and handed 160-sample frames; "buy" takes the sales branch; the recording is an 8 kHz WAV', { timeout: 40_000 }, async () => {
    const phone = await Baresip.start({ codecs: 'PCMU', wav: await fliteCallerWav(dir, 'buy', 'buy', { leadMs: 2_500, rate: 8_000, channels: 1 }) });
    try {
      const agentId = await s.flowAgent(ROUTING);
      assert.equal((await s.api('POST', '/import-phone-number', { phone_number: '+14155550810', inbound_agent_id: agentId })).status, 201);
      phone.command('dial', `sip:+14155550810@127.0.0.1:${sip.port}`);
      await phone.waitFor((e) => e.type === 'CALL_ESTABLISHED', 10_000);
      await phone.waitFor((e) => e.type === 'CALL_CLOSED', 25_000);
      const ended = await eventually(async () => ((await s.api('POST', '/v2/list-calls', {})).json as any[]).find((c) => c.to_number === '+14155550810' && c.call_status === 'ended'), 10_000);
      const lines = (ended.transcript_object as Array<{ role: string; content: string }>).map((u) => `${u.role}: ${u.content}`);
      assert.ok(lines.some((l) => l.startsWith('agent: Sales it is.')), lines.join(' | '));
      assert.deepEqual({ codec: ended.media.codec, sample_rate: ended.media.sample_rate }, { codec: 'pcmu', sample_rate: 8000 });

      // What reached the recogniser: a stream opened at 8 kHz, written 20 ms frames of 8 kHz audio.
      assert.equal(stt.opened.at(-1)?.sampleRateHz, 8000);
      assert.ok(stt.writes.length > 20, `${stt.writes.length} writes`);
      assert.deepEqual([...new Set(stt.writes)], [160], 'every write is one 20 ms frame at 8 kHz');

      const full = (await s.api('GET', `/v2/get-call/${ended.call_id}`)).json;
      const link = new URL(full.recording_url);
      const wav = Buffer.from(await (await fetch(`${s.baseUrl}${link.pathname}${link.search}`)).arrayBuffer());
      assert.equal(wav.readUInt32LE(24), 8000, 'the WAV header says 8000 Hz');
      assert.equal(wav.readUInt16LE(22), 2, 'stereo: the caller left, the agent right');
      const seconds = (wav.length - 44) / 4 / 8000;
      assert.ok(Math.abs(seconds * 1000 - ended.duration_ms) < 1_500, `${seconds} s of audio for a call of ${ended.duration_ms} ms`);
    } finally {
      await phone.close();
    }
  });
});
