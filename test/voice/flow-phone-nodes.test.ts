/**
 * Issue 24: a conversation flow's transfer_call and press_digit nodes, through the pipeline on the
 * lock-step harness. The transfer is asked for once the node's words have played; a refusal comes
 * back to the flow, which takes the node's failure edge; a call that cannot (a web call) records
 * why and takes it at once, or ends; press_digit sends its keys (a pause for each comma) and moves on.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EnergyVad, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import { FlowEngine } from '../../src/voice/engines/flow.engine.ts';
import type { FlowPhone } from '../../src/voice/engines/flow.phone.ts';
import type { ConversationFlow, ToolCallRecord } from '../../src/voice/engines/types.ts';
import { Recorder, TestClock, feed, makePipeline, silence } from './harness.ts';

const DESK = 'sip:desk@pbx.example.com';
const SORRY = { id: 'sorry', type: 'end', instruction: { type: 'static_text', text: 'The desk cannot take your call now. Goodbye.' } } as const;

function transferFlow(withFailureEdge: boolean): ConversationFlow {
  return {
    start_node_id: 'desk',
    nodes: [
      {
        id: 'desk', type: 'transfer_call', instruction: { type: 'static_text', text: 'Let me put you through.' },
        transfer_destination: { type: 'predefined', number: DESK }, transfer_option: { type: 'cold_transfer' },
        ...(withFailureEdge ? { edge: { id: 'failed', destination_node_id: 'sorry', transition_condition: { type: 'prompt', prompt: 'Transfer failed' } } } : {}),
      },
      SORRY,
    ],
  };
}

/** Runs a flow's opening on the harness with `phone` and the pipeline's `transfer`. */
async function run(flow: ConversationFlow, phone: FlowPhone | undefined, transfer?: (destination: string) => Promise<void>, realMsPerFrame = 0) {
  const clock = new TestClock();
  const tts = new FakeTts({ msPerChar: 5 });
  const engine = new FlowEngine({ flow, ...(phone ? { phone } : {}) });
  const p = makePipeline({ stt: new FakeStt([]), tts, vad: new EnergyVad(), engine, ...(transfer ? { transfer } : {}) }, clock);
  const rec = new Recorder(p, clock);
  const tools: ToolCallRecord[] = [];
  p.on('tool_call', (call) => tools.push(call.record));
  await p.start();
  await feed(p, clock, silence(3000), realMsPerFrame);
  await p.close();
  return { rec, tools, spoken: rec.transcript.map((u) => u.text), engine };
}

describe('a flow transfer_call node', () => {
  it('asks for the transfer; the carrier took it: the call ends call_transfer', async () => {
    const asked: string[] = [];
    const r = await run(transferFlow(true), { canTransfer: true }, async (destination) => void asked.push(destination));
    assert.deepEqual(asked, [DESK]);
    assert.deepEqual(r.rec.hangup, { reason: 'call_transfer', transferTo: DESK });
    assert.deepEqual(r.spoken, ['Let me put you through.']);
    assert.deepEqual(r.tools.map((t) => t.type), ['tool_call_invocation']);
    assert.equal(r.tools[0]?.type === 'tool_call_invocation' && r.tools[0].name, 'transfer_call');
  });

  it('the words play before the transfer is asked for', async () => {
    const clock = new TestClock();
    const engine = new FlowEngine({ flow: transferFlow(true), phone: { canTransfer: true } });
    let framesAtTransfer = -1;
    let frames = 0;
    const p = makePipeline({ stt: new FakeStt([]), tts: new FakeTts({ msPerChar: 5 }), vad: new EnergyVad(), engine, transfer: async () => void (framesAtTransfer = frames) }, clock);
    p.on('agent_audio', () => frames++);
    await p.start();
    await feed(p, clock, silence(2000));
    await p.close();
    // 'Let me put you through.' at 5 ms a character: about 115 ms, six frames or more.
    assert.ok(framesAtTransfer >= 5, `${framesAtTransfer} frames played before the transfer`);
  });

  it('the carrier refused: the failure is recorded and the failure edge taken', async () => {
    const r = await run(transferFlow(true), { canTransfer: true }, () => Promise.reject(new Error('the new call failed (486)')));
    assert.deepEqual(r.spoken, ['Let me put you through.', 'The desk cannot take your call now. Goodbye.']);
    assert.deepEqual(r.rec.hangup, { reason: 'agent_hangup' });
    const result = r.tools.find((t) => t.type === 'tool_call_result');
    assert.equal(result?.content, 'error: the transfer failed (the new call failed (486))');
    assert.equal(r.engine.currentNodeId, 'sorry');
  });

  it('a call that cannot be transferred (a web call) takes the failure edge at once, saying why in the record', async () => {
    let asked = false;
    const r = await run(transferFlow(true), undefined, async () => void (asked = true));
    assert.equal(asked, false, 'no transfer is asked of a call that cannot make one');
    assert.deepEqual(r.spoken, ['Let me put you through. The desk cannot take your call now. Goodbye.']);
    assert.deepEqual(r.tools.map((t) => [t.type, t.type === 'tool_call_result' ? t.content : t.name]), [
      ['tool_call_invocation', 'transfer_call'],
      ['tool_call_result', 'error: this call cannot be transferred (it is not a phone call)'],
    ]);
    assert.deepEqual(r.rec.hangup, { reason: 'agent_hangup' });
  });

  it('with no failure edge, a call that cannot be transferred ends, its ending a failure that says why', async () => {
    const r = await run(transferFlow(false), undefined);
    assert.deepEqual(r.rec.hangup, { reason: 'agent_hangup' });
    const ending = r.engine.outcome().ending;
    assert.equal(ending?.successful, false);
    assert.match(ending?.detail ?? '', /transfer_call node "desk" failed \(this call cannot be transferred/);
  });
});

describe('a flow press_digit node', () => {
  const flow = (digits: string): ConversationFlow => ({
    start_node_id: 'menu',
    nodes: [
      {
        id: 'menu', type: 'press_digit', digits,
        edges: [{ id: 'on', destination_node_id: 'wait', transition_condition: { type: 'always' } }],
        edge: { id: 'failed', destination_node_id: 'sorry', transition_condition: { type: 'prompt', prompt: 'Keys failed' } },
      },
      { id: 'wait', type: 'conversation', instruction: { type: 'static_text', text: 'Waiting for the operator.' } },
      SORRY,
    ],
  });

  it('sends its keys, a pause for each comma, then moves on to its next node', async () => {
    const sent: Array<{ keys: string; at: number }> = [];
    const started = Date.now();
    const r = await run(flow('12,#'), { canTransfer: false, keypad: async (keys) => void sent.push({ keys, at: Date.now() - started }) }, undefined, 5);
    assert.deepEqual(sent.map((s) => s.keys), ['12', '#']);
    assert.ok((sent[1]?.at ?? 0) - (sent[0]?.at ?? 0) >= 490, `the comma paused ${(sent[1]?.at ?? 0) - (sent[0]?.at ?? 0)} ms`);
    assert.deepEqual(r.spoken, ['Waiting for the operator.']);
    assert.deepEqual(r.tools.map((t) => (t.type === 'tool_call_result' ? t.content : t.arguments)), ['{"node_id":"menu","digits":"12,#"}', 'pressed 12,#']);
    assert.equal(r.engine.currentNodeId, 'wait');
  });

  it('a call that cannot send keys (a web call) records why and takes the failure edge', async () => {
    const r = await run(flow('1'), undefined);
    assert.deepEqual(r.spoken, ['The desk cannot take your call now. Goodbye.']);
    assert.equal(r.tools.find((t) => t.type === 'tool_call_result')?.content, 'error: this call cannot send keys (it is not a phone call)');
  });
});
