import { inspect } from 'node:util';

/** An error's message and those of its causes, for the log: "LLM request failed: HTTP 500: ...", at most 600 characters. */
export function describeFailure(error: unknown): string {
  const parts: string[] = [];
  let e = error;
  for (let depth = 0; depth < 5 && e !== undefined && e !== null; depth++) {
    if (!(e instanceof Error)) {
      parts.push(typeof e === 'string' ? e : inspect(e, { depth: 1, breakLength: Infinity }));
      break;
    }
    parts.push(e.message);
    e = e.cause;
  }
  return parts.join(': ').slice(0, 600);
}

/** What the caller is told when a call fails: fixed text per reason (the details stay in the log). */
export function failureMessage(reason: string): string {
  switch (reason) {
    case 'error_asr':
      return 'Speech recognition failed; the call ends.';
    case 'error_llm':
      return 'The language model failed; the call ends.';
    case 'error_tts':
      return 'Speech synthesis failed; the call ends.';
    case 'error_llm_websocket_open':
      return "The custom LLM's server could not be reached; the call ends.";
    case 'error_llm_websocket_lost_connection':
      return "The connection to the custom LLM's server was lost; the call ends.";
    case 'error_llm_websocket_runtime':
      return "The custom LLM's server reported an error; the call ends.";
    case 'error_llm_websocket_corrupt_payload':
      return "The custom LLM's server sent a message the protocol does not allow; the call ends.";
    case 'error_client_flood':
      return 'Audio or messages arrived far faster than real time; the call ends.';
    case 'error_unknown':
      return 'The call failed on an unexpected error; the call ends.';
    default:
      return 'The call failed.';
  }
}
