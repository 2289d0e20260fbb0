/**
 * The /demo page: pick one of the operator's agents, call it from the browser, watch the live
 * transcript and who is speaking, hang up, then see the finished call. The server creates the
 * call with the operator's key (/demo/api/calls); the page only ever holds the call's token.
 */
import { render } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { WebCallClient, type WebCallError } from '../../packages/web-sdk/src/index.ts';
import type { CallView } from '../../src/services/call.view.ts';
import type { TranscriptEntry } from '../../src/protocol/media.messages.ts';
import { AnalysisView, LatencyTable, TranscriptView, formatDuration } from '../shared/call-views.tsx';
import { useFinishedCall } from '../shared/finished-call.ts';

interface Agent {
  agent_id: string;
  agent_name: string | null;
  version: number;
}

/** What the demo's server side answers for a finished call: a part of the API's call object. */
type FinishedCall = Pick<CallView, 'call_id' | 'call_status' | 'disconnection_reason' | 'duration_ms' | 'transcript_object' | 'latency' | 'call_analysis' | 'recording_url'>;

type Phase = 'idle' | 'starting' | 'in_call' | 'ending' | 'ended';

async function api<T>(method: 'GET' | 'POST', url: string, body?: unknown): Promise<T> {
  const response = await fetch(url, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = await response.json().catch(() => null);
  if (!response.ok) throw new Error(json?.message ?? `The server answered ${response.status}.`);
  return json as T;
}

/** Microphone level above which the user counts as speaking (RMS, 0 to 1). */
const USER_SPEAKING_LEVEL = 0.02;

function Demo() {
  const [agents, setAgents] = useState<Agent[] | null>(null);
  const [agentId, setAgentId] = useState('');
  const [phase, setPhase] = useState<Phase>('idle');
  const [callId, setCallId] = useState<string | null>(null);
  const [transcript, setTranscript] = useState<TranscriptEntry[]>([]);
  const [agentTalking, setAgentTalking] = useState(false);
  const [userTalking, setUserTalking] = useState(false);
  const [muted, setMuted] = useState(false);
  const [played, setPlayed] = useState({ samples: 0, rate: 0 });
  const [error, setError] = useState<string | null>(null);
  const [ended, setEnded] = useState<string | null>(null);
  const [finished, setFinished] = useState<FinishedCall | null>(null);
  const clientRef = useRef<WebCallClient | null>(null);

  useEffect(() => {
    api<{ agents: Agent[] }>('GET', '/demo/api/agents')
      .then(({ agents }) => {
        setAgents(agents);
        if (agents[0]) setAgentId(agents[0].agent_id);
      })
      .catch((e: Error) => setError(`Could not list the agents: ${e.message}`));
  }, []);

  // Levels and counters: the SDK's stats, sampled ten times a second while in a call.
  useEffect(() => {
    if (phase !== 'in_call') return;
    const timer = setInterval(() => {
      const stats = clientRef.current?.stats;
      if (!stats) return;
      setPlayed({ samples: stats.playedSamples, rate: stats.outputSampleRate });
      setUserTalking(!clientRef.current?.isMuted && stats.inputLevel > USER_SPEAKING_LEVEL);
    }, 100);
    return () => clearInterval(timer);
  }, [phase]);

  const start = async () => {
    setError(null);
    setEnded(null);
    setFinished(null);
    setTranscript([]);
    setPhase('starting');
    const client = new WebCallClient();
    clientRef.current = client;
    client.on('agent_start_talking', () => setAgentTalking(true));
    client.on('agent_stop_talking', () => setAgentTalking(false));
    client.on('update', ({ transcript }) => setTranscript(transcript));
    client.on('error', (e: WebCallError) => setError(e.message));
    client.on('call_ended', ({ disconnection_reason }) => {
      const stats = client.stats;
      setPlayed({ samples: stats.playedSamples, rate: stats.outputSampleRate });
      setAgentTalking(false);
      setUserTalking(false);
      setEnded(disconnection_reason);
      setPhase('ended');
    });
    try {
      const created = await api<{ call_id: string; access_token: string }>('POST', '/demo/api/calls', { agent_id: agentId });
      setCallId(created.call_id);
      await client.startCall({ accessToken: created.access_token });
      setPhase('in_call');
    } catch (e) {
      // The SDK's failures were shown through its error event already.
      if (!(e instanceof Error && e.name === 'WebCallError')) setError((e as Error).message);
      setPhase('idle');
    }
  };

  const hangUp = async () => {
    setPhase('ending');
    await clientRef.current?.stopCall();
  };

  const toggleMute = () => {
    const client = clientRef.current;
    if (!client) return;
    if (client.isMuted) client.unmute();
    else client.mute();
    setMuted(client.isMuted);
  };

  // After the end: the finished call (analysis and recording are written as the call closes).
  useFinishedCall<FinishedCall>(
    callId,
    phase === 'ended',
    (id) => api<FinishedCall>('GET', `/demo/api/calls/${encodeURIComponent(id)}`),
    setFinished,
    (e) => setError(`Could not load the finished call: ${(e as Error).message}`),
  );

  const inCall = phase === 'in_call' || phase === 'starting' || phase === 'ending';
  return (
    <main class="narrow">
      <h1>Switchboard demo</h1>
      <div class="card">
        <div class="row">
          <label for="agent">Agent</label>
          <select id="agent" value={agentId} disabled={inCall || !agents?.length} onChange={(e) => setAgentId((e.target as HTMLSelectElement).value)}>
            {(agents ?? []).map((a) => (
              <option key={a.agent_id} value={a.agent_id}>{a.agent_name ?? a.agent_id} (v{a.version})</option>
            ))}
          </select>
          {!inCall && <button id="start" disabled={!agentId} onClick={() => void start()}>Start call</button>}
          {inCall && <button id="hangup" class="danger" disabled={phase !== 'in_call'} onClick={() => void hangUp()}>Hang up</button>}
          {phase === 'in_call' && <button id="mute" class="secondary" onClick={toggleMute}>{muted ? 'Unmute' : 'Mute'}</button>}
        </div>
        {agents && agents.length === 0 && <p class="muted">The operator's account has no agents yet: create one with the API, then reload.</p>}
        <p id="status" data-phase={phase}>
          {phase === 'idle' && 'Pick an agent and start a call. Your browser will ask for the microphone.'}
          {phase === 'starting' && 'Connecting…'}
          {phase === 'in_call' && <>In call <code>{callId}</code></>}
          {phase === 'ending' && 'Hanging up…'}
          {phase === 'ended' && <>Call ended: <span id="ended-reason">{ended}</span></>}
        </p>
        {(phase === 'in_call' || phase === 'ending') && (
          <div class="speaking" id="speaking" data-agent={String(agentTalking)} data-user={String(userTalking)}>
            <span class={agentTalking ? 'on' : ''}>Agent speaking</span>
            <span class={userTalking ? 'on' : ''}>{muted ? 'Muted' : 'You are speaking'}</span>
          </div>
        )}
        <p class="muted" id="played" data-samples={played.samples} data-rate={played.rate}>
          Agent audio played: {played.rate ? (played.samples / played.rate).toFixed(1) : '0.0'} s
        </p>
        {error && <div class="error" role="alert" id="error">{error}</div>}
      </div>

      {phase !== 'ended' && (
        <div class="card">
          <h2>Live transcript</h2>
          <TranscriptView items={transcript} id="live-transcript" />
        </div>
      )}

      {phase === 'ended' && (
        <div class="card" id="finished" data-status={finished?.call_status ?? ''}>
          <h2>Finished call</h2>
          {!finished && <p class="muted">Loading…</p>}
          {finished && (
            <>
              <p>
                Status <span class={`badge ${finished.call_status}`} id="finished-status">{finished.call_status}</span>{' '}
                {finished.disconnection_reason} · {formatDuration(finished.duration_ms)}
              </p>
              <h3>Recording</h3>
              {finished.recording_url ? (
                <audio id="recording" controls preload="metadata" src={finished.recording_url} />
              ) : (
                <p class="muted">No recording (yet, or the agent's storage setting keeps none).</p>
              )}
              <h3>Transcript</h3>
              <TranscriptView items={finished.transcript_object} id="final-transcript" />
              <h3>Latency</h3>
              <LatencyTable latency={finished.latency} />
              <h3>Analysis</h3>
              <AnalysisView analysis={finished.call_analysis} />
            </>
          )}
        </div>
      )}
    </main>
  );
}

render(<Demo />, document.getElementById('app')!);
