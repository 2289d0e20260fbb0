/**
 * The languages OpenAI's transcription and speech endpoints document (the Whisper list, "Supported
 * languages" of the speech-to-text guide; the text-to-speech guide says its voices follow it), as
 * ISO-639-1 primary subtags: any regional tag of these ('pt-BR') is taken, and the transcription
 * request carries the primary subtag, which is what its `language` field expects.
 */
export const OPENAI_AUDIO_LANGUAGES: readonly string[] = [
  'af', 'ar', 'az', 'be', 'bg', 'bs', 'ca', 'cs', 'cy', 'da', 'de', 'el', 'en', 'es', 'et', 'fa', 'fi', 'fr', 'gl',
  'he', 'hi', 'hr', 'hu', 'hy', 'id', 'is', 'it', 'ja', 'kk', 'kn', 'ko', 'lt', 'lv', 'mi', 'mk', 'mr', 'ms', 'ne',
  'nl', 'no', 'pl', 'pt', 'ro', 'ru', 'sk', 'sl', 'sr', 'sv', 'sw', 'ta', 'th', 'tl', 'tr', 'uk', 'ur', 'vi', 'zh',
];
