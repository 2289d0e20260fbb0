import { useEffect } from 'preact/hooks';

/** How long a page waits for a finished call's final status (analysis and recording written), ms. */
export const FINISH_WAIT_MS = 20_000;
/** How often it reads the call meanwhile, ms. */
const POLL_MS = 500;

/**
 * After a call ends (`ended`), reads it every 500 ms until its status is final (`ended` or
 * `error`: the analysis and recording are written as the call closes) or FINISH_WAIT_MS have
 * passed, handing each read to `onCall`; a failed read goes to `onError` and stops. Stops on
 * unmount or when the call changes. Shared by the demo page and the dashboard's test call.
 */
export function useFinishedCall<T extends { call_status: string }>(
  callId: string | null,
  ended: boolean,
  read: (callId: string) => Promise<T>,
  onCall: (call: T) => void,
  onError: (error: unknown) => void,
): void {
  useEffect(() => {
    if (!ended || !callId) return;
    let stopped = false;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const started = Date.now();
    const poll = async () => {
      try {
        const call = await read(callId);
        if (stopped) return;
        onCall(call);
        if (call.call_status === 'ended' || call.call_status === 'error' || Date.now() - started > FINISH_WAIT_MS) return;
      } catch (e) {
        if (!stopped) onError(e);
        return;
      }
      timer = setTimeout(() => void poll(), POLL_MS);
    };
    void poll();
    return () => {
      stopped = true;
      clearTimeout(timer);
    };
  }, [ended, callId]);
}
