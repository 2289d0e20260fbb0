/**
 * SIP codec benchmark, `npm run bench -- sip-codec` (issue 24, Opus on SIP): the CPU one phone
 * call's media costs per second of call, both directions (the caller's audio decoded to the
 * pipeline's 16 kHz, the agent's 16 kHz audio encoded), on Opus against the baseline every G.711
 * call pays in the same run: μ-law with the Speex resampling between 8 and 16 kHz. And Opus with
 * 10 % of the caller's packets lost, each rebuilt from the next one's FEC. The audio: 10 s of
 * Flite speech. The ratio says what choosing Opus costs against the 200-concurrent-call target.
 */
import { concatPcm } from '../src/lib/pcm.ts';
import { type RtpMedia, createRtpCodec } from '../src/media/sip/rtp-codec.ts';
import { createResampler } from '../src/providers/audio/resample.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { fmt, machine } from './lib.ts';

const ROUNDS = Number(process.env.SIP_CODEC_BENCH_ROUNDS ?? 5);
const LOSS_EVERY = 10;

const media = (codec: RtpMedia['codec']): RtpMedia => ({ codec, payloadType: codec === 'opus' ? 96 : 0, eventPayloadType: null, eventClockRate: 8000, dtx: false, ptimeMs: 20 });

export async function runSipCodecBench(options: { log: (line: string) => void }): Promise<string> {
  const tts = new FliteTts();
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize('Thank you for calling the clinic. Your appointment is on Tuesday at three in the afternoon. Please bring your insurance card and arrive ten minutes early. If you need to reschedule, press one, or stay on the line and an agent will help you.', { voiceId: 'flite-kal16' })) parts.push(c);
  await tts.close();
  let speech = concatPcm(parts);
  while (speech.length < 160_000) speech = concatPcm([speech, speech]);
  speech = speech.subarray(0, 160_000); // 10 s at 16 kHz
  const seconds = speech.length / 16_000;

  /** CPU ms for one call's both directions over the audio; the best of ROUNDS. */
  const g711 = async () => {
    const codec = createRtpCodec(media('pcmu'));
    const down = await createResampler(16_000, 8000);
    const up = await createResampler(8000, 16_000);
    const start = performance.now();
    // The agent's audio: 16 kHz -> 8 kHz -> μ-law packets; the caller's: packets -> 8 kHz -> 16 kHz.
    const narrow = down.process(speech);
    for (let i = 0; i + 160 <= narrow.length; i += 160) {
      const payload = Buffer.from(codec.encode(narrow.subarray(i, i + 160)));
      up.process(codec.decode(payload) ?? new Int16Array(0));
    }
    const ms = performance.now() - start;
    down.close();
    up.close();
    return ms;
  };
  const opus = (lossy: boolean) => {
    const sender = createRtpCodec(media('opus'));
    const receiver = createRtpCodec(media('opus'));
    const start = performance.now();
    let index = 0;
    for (let i = 0; i + 320 <= speech.length; i += 320, index++) {
      const payload = Buffer.from(sender.encode(speech.subarray(i, i + 320)));
      if (lossy && index % LOSS_EVERY === LOSS_EVERY - 1) continue; // lost: the next packet repairs it
      if (lossy && index % LOSS_EVERY === 0 && index > 0) receiver.repair(payload, 320);
      receiver.decode(payload);
    }
    const ms = performance.now() - start;
    sender.close();
    receiver.close();
    return ms;
  };
  const best = async (run: () => number | Promise<number>) => {
    let min = Infinity;
    for (let r = 0; r < ROUNDS; r++) min = Math.min(min, await run());
    return min;
  };
  options.log(`sip-codec: ${seconds} s of speech, best of ${ROUNDS} rounds`);
  const baseline = await best(g711);
  const clean = await best(() => opus(false));
  const lossy = await best(() => opus(true));
  const perSecond = (ms: number) => ms / seconds;
  const row = (name: string, ms: number) => `| ${name} | ${fmt(perSecond(ms), 3)} ms | ${fmt(perSecond(ms) / perSecond(baseline), 2)}x | ${fmt(1000 / perSecond(ms), 0)} |`;
  return [
    `Machine: ${machine()}`,
    '',
    '| one call\'s media, both directions | CPU per s of call | against G.711 | calls one core carries |',
    '|---|---|---|---|',
    row('G.711 μ-law + 8/16 kHz resampling (baseline)', baseline),
    row('Opus, 16 kHz in and out, 24 kbps, FEC', clean),
    row(`Opus, 1 packet in ${LOSS_EVERY} lost and rebuilt from FEC`, lossy),
  ].join('\n');
}
