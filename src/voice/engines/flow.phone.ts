/**
 * A flow's phone nodes (issue 24): transfer_call hands the call to its destination (a cold
 * transfer: the endpoint's REFER or `<Dial>`), press_digit sends its keys to the far end (an IVR).
 * On a call that cannot (a web call), or when the carrier refuses, the node says so in the call's
 * record and takes its failure `edge`; with none, the call ends (docs/voice-pipeline.md, "Conversation flows"; docs/telephony.md).
 */
import { PRESS_DIGIT_PAUSE_MS } from '../../domain/conversation-flow.ts';
import type { FlowNode, ToolCallInvocation } from './types.ts';

/** What the call offers a flow's phone nodes; absent parts are what the call cannot do (a web call). */
export interface FlowPhone {
  /** The call can be transferred: a transfer_call node asks for it (EngineHangup `call_transfer`). */
  canTransfer: boolean;
  /** Sends keys to the far end (RFC 4733 on SIP); absent: press_digit nodes fail. */
  keypad?: (digits: string) => Promise<void>;
}

/** No phone line: what a web call offers. */
export const NO_PHONE: FlowPhone = { canTransfer: false };

/** A transfer_call node's transfer, sent and not settled yet (the carrier's answer comes to `transferFailed`). */
export interface PendingTransfer {
  nodeId: string;
  toolCallId: string;
  /** Set once the carrier refused: why. */
  failure?: string;
}

/** The record of a phone node's action (transcript_with_tool_calls), named like Retell's tools. */
export function phoneInvocation(node: FlowNode, toolCallId: string): ToolCallInvocation {
  if (node.type === 'transfer_call') {
    return { type: 'tool_call_invocation', tool_call_id: toolCallId, name: 'transfer_call', arguments: JSON.stringify({ node_id: node.id, number: node.transfer_destination?.number ?? '' }) };
  }
  return { type: 'tool_call_invocation', tool_call_id: toolCallId, name: 'press_digit', arguments: JSON.stringify({ node_id: node.id, digits: node.digits ?? '' }) };
}

/** Why a web call cannot do what the node asks, for the record. */
export const CANNOT_TRANSFER = 'error: this call cannot be transferred (it is not a phone call)';
export const CANNOT_PRESS = 'error: this call cannot send keys (it is not a phone call)';

/**
 * Sends a press_digit node's digits: each run of keys at once, each `,` a pause of
 * PRESS_DIGIT_PAUSE_MS. Rejects when the call could not send them or the turn was cut off.
 */
export async function pressDigits(keypad: (digits: string) => Promise<void>, digits: string, signal: AbortSignal): Promise<void> {
  for (const [i, keys] of digits.split(',').entries()) {
    if (i > 0) await pause(PRESS_DIGIT_PAUSE_MS, signal);
    signal.throwIfAborted();
    if (keys) await keypad(keys);
  }
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      signal.removeEventListener('abort', abort);
      resolve();
    };
    const abort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', abort, { once: true });
  });
}
