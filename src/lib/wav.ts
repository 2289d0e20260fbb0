/**
 * 16-bit PCM WAV (RIFF) writing and reading, the one WAV codec: recordings (2-channel: user left,
 * agent right; services/recording-store.ts), the transcription upload and engine output
 * (providers/), and the Node media client.
 */
export interface PcmAudio {
  readonly sampleRate: number;
  readonly channels: number;
  /** Interleaved 16-bit samples. */
  readonly samples: Int16Array;
}

/** Bytes of the canonical header {@link wavHeader} writes: the samples start at this offset. */
export const WAV_HEADER_BYTES = 44;

/**
 * Builds the 44-byte header of a 16-bit PCM WAV: `sampleRate` in Hz, `channels` interleaved,
 * `dataBytes` the size of the sample data that follows.
 */
export function wavHeader(sampleRate: number, channels: number, dataBytes: number): Buffer {
  const h = Buffer.alloc(WAV_HEADER_BYTES);
  h.write('RIFF', 0, 'ascii');
  h.writeUInt32LE(36 + dataBytes, 4);
  h.write('WAVE', 8, 'ascii');
  h.write('fmt ', 12, 'ascii');
  h.writeUInt32LE(16, 16);
  h.writeUInt16LE(1, 20); // PCM
  h.writeUInt16LE(channels, 22);
  h.writeUInt32LE(sampleRate, 24);
  h.writeUInt32LE(sampleRate * channels * 2, 28);
  h.writeUInt16LE(channels * 2, 32);
  h.writeUInt16LE(16, 34);
  h.write('data', 36, 'ascii');
  h.writeUInt32LE(dataBytes, 40);
  return h;
}

/** Encodes interleaved samples as a WAV file. */
export function encodeWav(audio: PcmAudio): Buffer {
  const data = Buffer.from(audio.samples.buffer, audio.samples.byteOffset, audio.samples.byteLength);
  return Buffer.concat([wavHeader(audio.sampleRate, audio.channels, data.byteLength), data]);
}

/**
 * Interleaves two mono tracks (e.g. user and agent) into one 2-channel track; the shorter one is
 * padded with silence.
 */
export function interleaveStereo(left: Int16Array, right: Int16Array): Int16Array {
  const n = Math.max(left.length, right.length);
  const out = new Int16Array(n * 2);
  for (let i = 0; i < n; i++) {
    out[2 * i] = left[i] ?? 0;
    out[2 * i + 1] = right[i] ?? 0;
  }
  return out;
}

/** Where the samples of a 16-bit PCM WAV are. */
export interface WavLayout {
  sampleRate: number;
  channels: number;
  /** Byte offset of the first sample. */
  dataOffset: number;
  /** Bytes of sample data (to the end of the file for streamed headers). */
  dataBytes: number;
}

/**
 * Reads the chunk headers of a WAV with 16-bit PCM samples (format 1 or WAVE_FORMAT_EXTENSIBLE).
 * `head` needs only to reach the data chunk's header; `totalBytes` is the file's size, used for
 * streamed headers whose data size is 0 or 0xFFFFFFFF (data runs to the end of the file).
 */
export function wavLayout(head: Uint8Array, totalBytes = head.byteLength): WavLayout {
  const layout = wavLayoutSoFar(head, totalBytes);
  if (!layout) throw new Error(head.byteLength < 12 ? 'not a RIFF/WAVE file' : 'WAV has no data chunk');
  return layout;
}

/**
 * wavLayout for a header that is still arriving (a streamed answer): undefined until `head`
 * reaches the data chunk's header; throws as soon as what has arrived is not 16-bit PCM WAV.
 */
export function wavLayoutSoFar(head: Uint8Array, totalBytes = head.byteLength): WavLayout | undefined {
  const b = Buffer.from(head.buffer, head.byteOffset, head.byteLength);
  if (b.byteLength < 12) return undefined;
  if (b.toString('ascii', 0, 4) !== 'RIFF' || b.toString('ascii', 8, 12) !== 'WAVE') throw new Error('not a RIFF/WAVE file');
  let pos = 12;
  let sampleRate = 0;
  let channels = 0;
  while (pos + 8 <= b.byteLength) {
    const id = b.toString('ascii', pos, pos + 4);
    const size = b.readUInt32LE(pos + 4);
    const body = pos + 8;
    if (id === 'fmt ') {
      if (body + 16 > b.byteLength) return undefined;
      const format = b.readUInt16LE(body);
      channels = b.readUInt16LE(body + 2);
      sampleRate = b.readUInt32LE(body + 4);
      const bits = b.readUInt16LE(body + 14);
      if (format !== 1 && format !== 0xfffe) throw new Error(`unsupported WAV format ${format}; give 16-bit PCM`);
      if (bits !== 16) throw new Error(`unsupported WAV sample size ${bits} bits; give 16-bit PCM`);
    } else if (id === 'data') {
      if (!sampleRate) throw new Error('WAV data before fmt chunk');
      const end = size === 0 || size === 0xffffffff ? totalBytes : Math.min(totalBytes, body + size);
      return { sampleRate, channels, dataOffset: body, dataBytes: Math.max(0, end - body) & ~1 };
    }
    pos = body + size + (size % 2);
  }
  return undefined;
}

/** Parses a whole WAV file with 16-bit PCM samples (see wavLayout). */
export function decodeWav(buf: Uint8Array): PcmAudio {
  const { sampleRate, channels, dataOffset, dataBytes } = wavLayout(buf);
  const b = Buffer.from(buf.buffer, buf.byteOffset, buf.byteLength);
  const samples = new Int16Array(dataBytes / 2);
  for (let i = 0; i < samples.length; i++) samples[i] = b.readInt16LE(dataOffset + i * 2);
  return { sampleRate, channels, samples };
}

/** Averages interleaved channels down to mono. */
export function toMono(audio: PcmAudio): Int16Array {
  if (audio.channels === 1) return audio.samples;
  const n = Math.floor(audio.samples.length / audio.channels);
  const out = new Int16Array(n);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let c = 0; c < audio.channels; c++) s += audio.samples[i * audio.channels + c] ?? 0;
    out[i] = Math.round(s / audio.channels);
  }
  return out;
}

/** Zeroes the samples of [startMs, endMs) of an interleaved track in place (e.g. redacted spans). */
export function silenceSpan(audio: PcmAudio, startMs: number, endMs: number): void {
  const from = Math.max(0, Math.floor((startMs * audio.sampleRate) / 1000)) * audio.channels;
  const to = Math.min(audio.samples.length, Math.ceil((endMs * audio.sampleRate) / 1000) * audio.channels);
  if (to > from) audio.samples.fill(0, from, to);
}
