import { FRAME_MS } from './frames.ts';

/** Speech needed to interrupt the agent, ms, for a sensitivity in 0..1 (Infinity at 0). */
export function bargeInThresholdMs(sensitivity: number): number {
  const s = Math.min(1, Math.max(0, sensitivity));
  if (s === 0) return Number.POSITIVE_INFINITY;
  return Math.round((60 + (1 - s) * 440) / FRAME_MS) * FRAME_MS;
}
