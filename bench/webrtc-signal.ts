/**
 * What the recogniser hears over WebRTC (issue 23, the server's own reply latency): the browser
 * bench's caller phrases (Flite rms, as Chromium's fake microphone plays them) as the server gets
 * them over the WebSocket (the PCM itself) and over WebRTC (through Opus as Chromium sends it:
 * 48 kHz, 32 kbps, complexity 9, decoded to 16 kHz by the endpoint's decoder), and what the
 * adaptive end of turn decides from each (src/voice/end-of-turn.ts, the agent defaults):
 *
 *   - the VAD's end of speech (fvad, the last voiced 20 ms frame);
 *   - the recogniser's interim hypothesis once it has decoded the utterance and 300 ms of its
 *     silence (what SpeechFeed gives it), waited for in full, so this is the decision of an idle
 *     machine, not of one whose recogniser lags: complete, incomplete or unknown, and the
 *     silence that ends the turn for it (250, 1200 or 488 ms);
 *   - the final transcript.
 *
 * No clock is involved: the figures do not depend on the machine's load. Chromium's audio
 * processing (noise suppression, gain control) is not applied: both sides of the comparison lack
 * it alike. The 16 -> 48 kHz step before the encoder is linear interpolation.
 *
 * `node bench/webrtc-signal.ts` runs it alone.
 */
import { fileURLToPath } from 'node:url';
import { Encoder } from '@evan/opus';
import { FRAME_SAMPLES, OpusCodec } from '../src/providers/audio/opus.ts';
import { FliteTts } from '../src/providers/flite/flite.tts.ts';
import { PocketsphinxStt } from '../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { FvadProvider } from '../src/providers/vad/fvad.ts';
import { completeness, endOfTurnSilenceMs, type EndOfTurnSettings } from '../src/voice/end-of-turn.ts';
import { concatPcm } from '../src/lib/pcm.ts';
import { CALLER_PHRASES } from './recognition.ts';
import { machine } from './lib.ts';

/** The agent defaults (src/domain/agent.ts). */
const DEFAULTS: EndOfTurnSettings = { responsiveness: 1, minSilenceMs: 250, maxSilenceMs: 1200 };
/** What SpeechFeed writes of a pause (src/voice/stages/speech-feed.ts, TRAILING_SILENCE_MS). */
const TRAILING_MS = 300;
/** Chromium's Opus send defaults for a mono microphone (WebRTC's AudioEncoderOpus on desktop). */
const CHROMIUM_BITRATE = 32_000;
const CHROMIUM_COMPLEXITY = 9;

/** 16 kHz to 48 kHz by linear interpolation. */
function upsample(pcm: Int16Array): Int16Array {
  const out = new Int16Array(pcm.length * 3);
  for (let i = 0; i < pcm.length; i++) {
    const a = pcm[i] ?? 0;
    const b = pcm[i + 1] ?? a;
    for (let k = 0; k < 3; k++) out[i * 3 + k] = Math.round(a + ((b - a) * k) / 3);
  }
  return out;
}

/** The PCM as the endpoint decodes it after Chromium's encoder. */
function throughOpus(pcm: Int16Array): Int16Array {
  const encoder = new Encoder({ channels: 1, sample_rate: 48_000, application: 'voip' });
  encoder.bitrate = CHROMIUM_BITRATE;
  encoder.complexity = CHROMIUM_COMPLEXITY;
  const decoder = new OpusCodec({ dtx: false });
  const wide = upsample(pcm);
  const out: Int16Array[] = [];
  for (let at = 0; at + FRAME_SAMPLES * 3 <= wide.length; at += FRAME_SAMPLES * 3) {
    const packet = encoder.encode(wide.subarray(at, at + FRAME_SAMPLES * 3));
    const decoded = decoder.decode(Buffer.from(packet));
    if (decoded) out.push(decoded);
  }
  decoder.close();
  return concatPcm(out);
}

interface Heard {
  vadEndMs: number;
  interim: string;
  silenceMs: number;
  judged: string;
  final: string;
}

async function hear(pcm: Int16Array, stt: PocketsphinxStt, vads: FvadProvider): Promise<Heard> {
  const vad = await vads.create();
  let lastVoiced = -1;
  for (let i = 0; (i + 1) * FRAME_SAMPLES <= pcm.length; i++) if (vad.isSpeech(pcm.subarray(i * FRAME_SAMPLES, (i + 1) * FRAME_SAMPLES))) lastVoiced = i;
  vad.close();
  const vadEndMs = (lastVoiced + 1) * 20;
  let interim = '';
  const stream = await stt.openStream({ onInterim: (hypothesis) => (interim = hypothesis.text) });
  const until = Math.min(pcm.length, (vadEndMs + TRAILING_MS) * 16);
  for (let at = 0; at < until; at += FRAME_SAMPLES) stream.write(pcm.subarray(at, Math.min(until, at + FRAME_SAMPLES)));
  // An idle machine's decision: the recogniser has decoded all it was given.
  for (let waited = 0; waited < 10_000 && (stream.pendingMs?.() ?? 0) > 0; waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
  await new Promise((resolve) => setTimeout(resolve, 100));
  const judged = completeness(interim);
  const final = await stream.finalize();
  await stream.close();
  return { vadEndMs, interim, silenceMs: endOfTurnSilenceMs(judged, DEFAULTS), judged, final: final.text };
}

export async function runWebRtcSignalBench(log: (line: string) => void = () => undefined): Promise<string> {
  const tts = new FliteTts();
  const stt = new PocketsphinxStt();
  const vads = new FvadProvider();
  const rows: string[] = [];
  const totals = { pcm: 0, opus: 0, flips: 0, vadShift: 0 };
  try {
    for (const phrase of CALLER_PHRASES) {
      const parts: Int16Array[] = [new Int16Array(16 * 300)];
      for await (const chunk of tts.synthesize(phrase.text, { voiceId: 'flite-rms' })) parts.push(chunk);
      parts.push(new Int16Array(16 * 1500));
      const pcm = concatPcm(parts);
      const direct = await hear(pcm, stt, vads);
      const opus = await hear(throughOpus(pcm), stt, vads);
      log(`# webrtc signal: ${phrase.text}: ${direct.judged} / ${opus.judged}`);
      totals.pcm += direct.silenceMs;
      totals.opus += opus.silenceMs;
      totals.vadShift += opus.vadEndMs - direct.vadEndMs;
      if (direct.judged !== opus.judged) totals.flips += 1;
      const cell = (h: Heard) => `"${h.interim}": ${h.judged}, ${h.silenceMs} ms`;
      rows.push(`| ${phrase.text} | ${opus.vadEndMs - direct.vadEndMs} | ${cell(direct)} | ${cell(opus)} | ${direct.final === opus.final ? 'same' : `"${direct.final}" / "${opus.final}"`} |`);
    }
  } finally {
    await tts.close();
  }
  const n = CALLER_PHRASES.length;
  return [
    `Machine: ${machine()}`,
    '',
    '| caller phrase (Flite rms) | VAD end, Opus less PCM (ms) | PCM (WebSocket): interim, judged, end-of-turn silence | Opus as Chromium sends it (WebRTC) | final transcript, PCM / Opus |',
    '|---|---|---|---|---|',
    ...rows,
    '',
    `End-of-turn silence asked for, mean over the ${n} phrases: PCM ${Math.round(totals.pcm / n)} ms, Opus ${Math.round(totals.opus / n)} ms; ${totals.flips} of ${n} phrases judged differently; the VAD's end of speech moved by ${Math.round(totals.vadShift / n)} ms on average.`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) process.stdout.write(`${await runWebRtcSignalBench((line) => process.stderr.write(`${line}\n`))}\n`);
