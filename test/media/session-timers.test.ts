// A call session's own timers on a manual scheduler: the audio watchdog, the agent's
// end_call_after_silence_ms and max_call_duration_ms end the call with their reasons, with no
// real waiting and no test-only overrides of the agent's settings.
import assert from 'node:assert/strict';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, it } from 'node:test';
import { AGENT_DEFAULTS, type AgentConfig } from '../../src/domain/agent.ts';
import type { Call } from '../../src/domain/call.ts';
import { createSilentLogger } from '../../src/lib/logger.ts';
import { ManualScheduler } from '../../src/lib/scheduler.ts';
import { FileRecordingStore } from '../../src/services/file-recording-store.ts';
import { CallSession, DEFAULT_SESSION_TIMINGS } from '../../src/media/call-session.ts';
import type { AgentForCall } from '../../src/media/engine-factory.ts';
import { EnergyVad, FakeStt, FakeTts } from '../../src/providers/fake/fake.providers.ts';
import type { CallOutcome } from '../../src/services/call-lifecycle.ts';
import { bytesToSamples } from '../../src/voice/frames.ts';
import { recordingWebCallEndpoint } from './helpers.ts';

const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sb-session-timers-'));
after(() => fs.rmSync(dataDir, { recursive: true, force: true }));

/** 1 s of silence at 16 kHz, as a muted client sends it. */
const SECOND_OF_SILENCE = new Uint8Array(32_000);

function call(): Call {
  return {
    call_id: 'call_timers', account_id: 'acct_1', call_type: 'web_call', agent_id: 'agent_1', agent_version: 1, agent_name: null,
    call_status: 'ongoing', data_storage_setting: 'everything', created_at: 0, start_timestamp: 0, end_timestamp: null, duration_ms: null,
    disconnection_reason: null, metadata: {}, agent_override: null, service_llm_dynamic_variables: {}, override_dynamic_variables: null,
    custom_attributes: null, current_node_id: null, current_state: null, transcript: null, transcript_object: null, transcript_with_tool_calls: null, recording_path: null,
    call_analysis: null, latency: null, media: null, from_number: null, to_number: null, direction: null, telephony_identifier: null, transfer_destination: null, token_id: 't', token_expires_at: 0, token_used_at: 0, updated_at: 0,
  };
}

function agent(settings: Partial<AgentConfig>): AgentForCall {
  return {
    config: { ...AGENT_DEFAULTS, response_engine: { type: 'conversation_flow', conversation_flow_id: 'cf_1' }, ...settings },
    // The user speaks first and says nothing: the agent stays silent, so only the timers act.
    engine: {
      type: 'conversation_flow',
      conversation_flow_id: 'cf_1',
      definition: { start_node_id: 'n', start_speaker: 'user', nodes: [{ id: 'n', type: 'conversation', instruction: { type: 'static_text', text: 'Hi.' } }] },
    },
  };
}

function startSession(settings: Partial<AgentConfig>) {
  const scheduler = new ManualScheduler(1_000);
  const { endpoint, events, closed } = recordingWebCallEndpoint();
  const finished: CallOutcome[] = [];
  const session = new CallSession(call(), agent(settings), endpoint, {
    calls: {
      readCall: async () => call(),
      checkpointCall: async () => true,
      finishCall: async (_id, outcome) => {
        finished.push(outcome);
        return true;
      },
    },
    providers: { llm: undefined, stt: new FakeStt(), tts: new FakeTts(), vad: new EnergyVad(), close: async () => {} },
    recordings: new FileRecordingStore(dataDir),
    log: createSilentLogger(),
    timings: DEFAULT_SESSION_TIMINGS,
    scheduler,
  });
  return { session, scheduler, events, closed, finished };
}

/** Moves time by `ms` one second at a time, the client sending a second of silence each time. */
function talkSilence(s: ReturnType<typeof startSession>, ms: number): void {
  for (let t = 0; t < ms; t += 1_000) {
    s.session.sink.audio(bytesToSamples(SECOND_OF_SILENCE));
    s.scheduler.advance(1_000);
  }
}

describe('call-session timers on a manual scheduler', () => {
  it('no audio from the client for audioTimeoutMs ends the call client_disconnected', async () => {
    const s = startSession({});
    await s.session.start();
    s.scheduler.advance(DEFAULT_SESSION_TIMINGS.audioTimeoutMs - 1_000);
    assert.equal(s.session.ended, false, 'still within the audio timeout');
    s.scheduler.advance(2_000);
    await s.session.done;
    assert.deepEqual(s.finished.map((o) => o.reason), ['client_disconnected']);
    assert.deepEqual(s.closed, [1000]);
    assert.deepEqual(s.events.at(-1), { type: 'call_ended', call_status: 'ended', disconnection_reason: 'client_disconnected' });
  });

  it("the agent's end_call_after_silence_ms ends a silent call with inactivity, not before", async () => {
    const s = startSession({ end_call_after_silence_ms: 10_000 });
    await s.session.start();
    talkSilence(s, 9_000);
    assert.equal(s.session.ended, false, 'silent for 9 s of 10');
    talkSilence(s, 2_000);
    await s.session.done;
    assert.deepEqual(s.finished.map((o) => o.reason), ['inactivity']);
  });

  it("the agent's max_call_duration_ms ends the call with max_duration_reached", async () => {
    const s = startSession({ end_call_after_silence_ms: 3_600_000, max_call_duration_ms: 60_000 });
    await s.session.start();
    talkSilence(s, 59_000);
    assert.equal(s.session.ended, false, '59 s of a 60 s cap');
    talkSilence(s, 2_000);
    await s.session.done;
    assert.deepEqual(s.finished.map((o) => o.reason), ['max_duration_reached']);
    assert.equal(s.scheduler.pending, 0, 'every timer of the session is cleared at its end');
  });
});
