// The shared PocketSphinx decoders (decoder-pool.ts): loaded once, leased per utterance, reset
// between holders; a crashed thread fails only its holder and is replaced; streams are bounded;
// a retired decoder's memory goes back to the system.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { ProviderError } from '../../src/providers/errors.ts';
import { DecoderPool } from '../../src/providers/pocketsphinx/decoder-pool.ts';
import { DEBIAN_MODEL_DIR, PocketsphinxStt, probeLibrary } from '../../src/providers/pocketsphinx/pocketsphinx.stt.ts';
import { nativeHeapStats, trimNativeHeap } from '../../src/lib/native-heap.ts';
import { FliteTts } from '../../src/providers/flite/flite.tts.ts';
import { concat, silence } from '../voice/harness.ts';

const LIBRARY = { skip: probeLibrary().ok ? false : 'libpocketsphinx cannot be called in-process here' };

let tts: FliteTts;
const said = new Map<string, Int16Array>();
before(() => {
  tts = new FliteTts();
});
after(() => tts.close());

/** Flite kal16 saying `text`, with silence around it. */
async function speech(text: string): Promise<Int16Array> {
  const known = said.get(text);
  if (known) return known;
  const parts: Int16Array[] = [];
  for await (const c of tts.synthesize(text, { voiceId: 'flite-kal16' })) parts.push(c);
  const pcm = concat(silence(200), ...parts, silence(600));
  said.set(text, pcm);
  return pcm;
}

/** Writes `pcm` in 20 ms frames, as a call does. */
function play(s: { write(pcm: Int16Array): void }, pcm: Int16Array): void {
  for (let i = 0; i < pcm.length; i += 320) s.write(pcm.subarray(i, i + 320));
}

const DOCTOR = 'hi i need to book a visit with the doctor';

test('a decoder reused by a second call carries nothing over: no partial utterance, no bias, no grammar', LIBRARY, async () => {
  const fresh = new PocketsphinxStt({ mode: 'library' });
  const s0 = await fresh.openStream();
  play(s0, await speech(DOCTOR));
  const plain = (await s0.finalize()).text;
  await s0.close();
  await fresh.close();
  assert.ok(!/\bbook\b|appointment/.test(plain), `the language model alone misses the keyword: ${plain}`);

  const decoders = new DecoderPool({ maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders });
  try {
    // The first call: told to expect a closed set and to bias towards "book", then it hangs up
    // in the middle of an utterance, its words still on the decoder.
    const a = await stt.openStream();
    a.expect!({ closed: true, phrases: ['book', 'appointment'], values: ['yes_no'] });
    play(a, (await speech('i would like to buy something')).subarray(0, 16_000));
    await a.close();
    assert.equal(decoders.size, 1);
    assert.equal(decoders.leased, 0, 'the decoder went back to the pool');

    // The second call gets the same decoder and hears what a fresh decoder hears.
    const b = await stt.openStream();
    play(b, await speech(DOCTOR));
    assert.equal((await b.finalize()).text, plain, 'neither the first call\'s words, bias nor grammar shaped this text');
    assert.equal(decoders.size, 1, 'one decoder served both calls');
    // And the second call's own settings still apply to its next utterance on that decoder.
    b.bias!(['appointment', 'book']);
    play(b, await speech(DOCTOR));
    assert.match((await b.finalize()).text, /\bbook\b/, 'its own bias reached the reused decoder');
    await b.close();
  } finally {
    await stt.close();
  }
});

test('a crashed decoder thread fails only the call holding it and is replaced', LIBRARY, async () => {
  const decoders = new DecoderPool({ warm: 2, maxDecoders: 2 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders });
  try {
    stt.warm();
    assert.equal(decoders.size, 2);
    const a = await stt.openStream();
    const b = await stt.openStream();
    const yes = await speech('yes');
    play(a, yes);
    play(b, yes);
    assert.equal(decoders.leased, 2, 'each call holds a decoder for its utterance');
    const held = decoders.threads.filter((t) => t.leased);
    const aFinal = a.finalize();
    const bFinal = b.finalize();
    await held[0]!.terminate(); // the first call's decoder thread dies (once past its load, as a crash mid-decode)
    await assert.rejects(aFinal, (e) => e instanceof ProviderError && e.kind === 'asr');
    assert.equal((await bFinal).text, 'yes', 'the other call was not touched');
    await assert.rejects(a.finalize(), (e) => e instanceof ProviderError && e.kind === 'asr', 'the crashed call stays failed');
    assert.equal(decoders.size, 2, 'the dead decoder was replaced');
    // The replacement serves a new call.
    const c = await stt.openStream();
    play(c, yes);
    assert.equal((await c.finalize()).text, 'yes');
    await Promise.all([a.close(), b.close(), c.close()]);
  } finally {
    await stt.close();
  }
});

test('the pool refuses a stream beyond POCKETSPHINX_MAX_STREAMS before it opens, and admits again once one closes', LIBRARY, async () => {
  const decoders = new DecoderPool({ maxStreams: 2 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders });
  try {
    const a = await stt.openStream();
    const b = await stt.openStream();
    await assert.rejects(stt.openStream(), (e) => e instanceof ProviderError && e.kind === 'asr' && e.retryable && /at capacity: 2/.test(e.message));
    assert.equal(decoders.streams, 2);
    assert.equal(decoders.size, 1, 'one decoder loads ahead of the first utterance, none per stream');
    assert.equal(decoders.leased, 0, 'streams hold no decoder until they hear speech');
    await a.close();
    await a.close();
    assert.equal(decoders.streams, 1, 'a stream is counted once however often it closes');
    const c = await stt.openStream();
    await Promise.all([b.close(), c.close()]);
    assert.equal(decoders.streams, 0);
  } finally {
    await stt.close();
  }
});

test('utterances beyond maxDecoders wait for a decoder, audio queued, and each gets its own text', LIBRARY, async () => {
  const decoders = new DecoderPool({ maxDecoders: 1 });
  const stt = new PocketsphinxStt({ mode: 'library', decoders });
  try {
    const [a, b] = [await stt.openStream(), await stt.openStream()];
    play(a, await speech('yes'));
    play(b, await speech('stop'));
    assert.ok(b.pendingMs!() > 500, 'the waiting audio counts as not decoded yet');
    const [ta, tb] = await Promise.all([a.finalize(), b.finalize()]);
    assert.deepEqual([ta.text, tb.text], ['yes', 'stop']);
    assert.equal(decoders.size, 1);
    await Promise.all([a.close(), b.close()]);
  } finally {
    await stt.close();
  }
});

test('the decoder reports its progress after every chunk: pendingMs reaches 0 once the audio is decoded (every 200 ms it stuck at the remainder)', LIBRARY, async () => {
  /** pendingMs once the decoder has had time for 1.1 s of audio written at once. */
  const settled = async (progressEveryMs?: number): Promise<number> => {
    const stt = new PocketsphinxStt({ mode: 'library', ...(progressEveryMs === undefined ? {} : { progressEveryMs }) });
    const s = await stt.openStream();
    try {
      play(s, (await speech('i would like to buy something')).subarray(0, 17_600));
      for (let waited = 0; waited < 10_000 && s.pendingMs!() > 100; waited += 50) await new Promise((r) => setTimeout(r, 50));
      await new Promise((r) => setTimeout(r, 300)); // the last chunks' reports, if any come
      return s.pendingMs!();
    } finally {
      await s.close();
      await stt.close();
    }
  };
  assert.equal(await settled(), 0, 'every chunk decoded is reported');
  assert.equal(Math.round(await settled(200)), 100, 'reports every 200 ms leave the last 100 ms unreported');
});

test('a decoder let go with 30 s of audio still queued skips it, frees its model when retired, and the pool trims the malloc arenas', LIBRARY, async () => {
  const trims: number[] = [];
  const decoders = new DecoderPool({
    idleMs: 50,
    trim: async () => {
      trims.push(performance.now());
      return trimNativeHeap();
    },
  });
  const m = DEBIAN_MODEL_DIR;
  const data = { args: ['-hmm', `${m}/en-us`, '-lm', `${m}/en-us.lm.bin`, '-dict', `${m}/cmudict-en-us.dict`, '-fwdflat', 'no', '-logfn', '/dev/null'], interimEverySamples: 3200, rateHz: 16_000, progressEverySamples: 0, redecodeFirstUtterance: false };
  // Arena and mmapped chunks both: glibc serves a large allocation from either, as its dynamic
  // mmap threshold stands after the frees before it.
  const inUseMb = () => {
    const heap = nativeHeapStats()!;
    return (heap.inUseBytes + heap.mmappedBytes) / 2 ** 20;
  };
  // Synthesised first: Flite's first use in the process holds about 20 MB of its own.
  const pcm = await speech('i would like to buy something');
  try {
    const before = inUseMb();
    let lease!: ReturnType<DecoderPool['lease']>;
    const loaded = new Promise<void>((resolve, reject) => {
      lease = decoders.lease(data, { message: (m) => m.type === 'progress' && resolve(), failed: reject });
    });
    lease.post({ type: 'begin', lease: lease.id, bias: [] });
    // 30 s of speech: several seconds of decoding on any machine (0.25 s per second of speech here).
    for (let s = 0; s < 30 * 16_000; s += 320) {
      const frame = pcm.slice(s % (pcm.length - 320), (s % (pcm.length - 320)) + 320);
      lease.post({ type: 'audio', pcm: frame }, [frame.buffer]);
    }
    await loaded;
    // Read against what it frees, not against the start: in CI, under load, a loaded decoder read
    // as 16-17 MB above the start where it reads 99 MB alone (other memory of the process freed
    // meanwhile); its own free does not depend on the rest of the process.
    const loadedMb = inUseMb();
    const released = performance.now();
    lease.release(); // the call ended: its queued audio is no one's
    for (let waited = 0; waited < 4_000 && (decoders.size > 0 || trims.length === 0); waited += 50) await new Promise((r) => setTimeout(r, 50));
    assert.equal(decoders.size, 0, 'the idle decoder was retired');
    const freed = loadedMb - inUseMb();
    assert.ok(freed > 50, `the loaded decoder's model shows in the malloc heap, and went back when retired (${freed.toFixed(0)} MB)`);
    assert.equal(trims.length, 1, 'the pool trimmed once its thread had exited');
    assert.ok(trims[0]! - released < 2_000, `retired ${(trims[0]! - released).toFixed(0)} ms after the release: the queued audio was skipped, not decoded`);
    assert.ok(inUseMb() - before < 10, `the model was freed, not left behind by a terminated thread (${(inUseMb() - before).toFixed(0)} MB still in use)`);
  } finally {
    await decoders.close();
  }
});
