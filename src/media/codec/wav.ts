// WAV helpers live with the providers (which need them below media); re-exported here for the media layer.
export { encodeWav, decodeWav, wavHeader, wavLayout, interleaveStereo, toMono, silenceSpan, type PcmAudio, type WavLayout } from '../../providers/audio/wav.ts';
