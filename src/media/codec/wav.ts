// WAV helpers live with the providers (which need them below media); re-exported here for the media layer.
export { encodeWav, decodeWav, wavHeader, interleaveStereo, toMono, silenceSpan, type PcmAudio } from '../../providers/audio/wav.ts';
