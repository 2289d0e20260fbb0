/**
 * Test call: talk to an agent from the dashboard with the browser SDK. The call is created with
 * the signed-in key (create-web-call, metadata `source: switchboard-dashboard`) and joined with
 * its single-use token; the live transcript, who is speaking and the flow's node show as the call
 * goes, then the finished call (read until its status is final) with a link to its page.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { WebCallClient, type WebCallError } from '../../packages/web-sdk/src/index.ts';
import type { TranscriptEntry } from '../../src/protocol/media.messages.ts';
import { TranscriptView, formatDuration } from '../shared/call-views.tsx';
import { useFinishedCall } from '../shared/finished-call.ts';
import type { Api } from './api.ts';
import type { Call } from './calls.tsx';
import { Badge, ErrorBox, messageOf } from './ui.tsx';

type Phase = 'idle' | 'starting' | 'in_call' | 'ending' | 'ended';

/** How long the finished call is read for a final status after the socket closed, in ms. */

/** `focus === 'test'` (route `#/agents/{id}/test`, the list's Test call button) scrolls the card into view. */
export function TestCall({ api, agentId, focus }: { api: Api; agentId: string; focus?: string }) {
  const [phase, setPhase] = useState<Phase>('idle');
  const [callId, setCallId] = useState<string | null>(null);
  const [transcript, setTranscript] = useState<TranscriptEntry[]>([]);
  const [nodes, setNodes] = useState<string[]>([]);
  const [agentTalking, setAgentTalking] = useState(false);
  const [muted, setMuted] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [endedReason, setEndedReason] = useState<string | null>(null);
  const [finished, setFinished] = useState<Call | null>(null);
  const clientRef = useRef<WebCallClient | null>(null);

  const cardRef = useRef<HTMLElement | null>(null);

  // Leaving the page hangs up.
  useEffect(() => () => void clientRef.current?.stopCall(), []);
  useEffect(() => {
    if (focus === 'test') cardRef.current?.scrollIntoView({ block: 'start' });
  }, [focus]);

  const start = async () => {
    setError(null);
    setEndedReason(null);
    setFinished(null);
    setTranscript([]);
    setNodes([]);
    setMuted(false);
    setPhase('starting');
    const client = new WebCallClient();
    clientRef.current = client;
    client.on('agent_start_talking', () => setAgentTalking(true));
    client.on('agent_stop_talking', () => setAgentTalking(false));
    client.on('update', ({ transcript: live }) => setTranscript(live));
    client.on('node_transition', ({ from, to }) => setNodes((path) => (path.length === 0 && from ? [from, to] : [...path, to])));
    client.on('error', (e: WebCallError) => setError(`${e.message} (${e.code})`));
    client.on('call_ended', ({ disconnection_reason }) => {
      setAgentTalking(false);
      setEndedReason(disconnection_reason);
      setPhase('ended');
    });
    try {
      const created = await api.post<{ call_id: string; access_token: string }>('/v2/create-web-call', {
        agent_id: agentId,
        metadata: { source: 'switchboard-dashboard' },
      });
      setCallId(created.call_id);
      await client.startCall({ accessToken: created.access_token });
      setPhase((p) => (p === 'starting' ? 'in_call' : p));
    } catch (e) {
      // The SDK's own failures arrive through its error event as well.
      if (!(e instanceof Error && e.name === 'WebCallError')) setError(messageOf(e));
      setPhase((p) => (p === 'ended' ? p : 'idle'));
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

  // After the end: the call object, until analysis and recording are written (status final).
  useFinishedCall<Call>(
    callId,
    phase === 'ended',
    (id) => api.get<Call>(`/v2/get-call/${encodeURIComponent(id)}`),
    setFinished,
    (e) => setError(`Could not read the finished call: ${messageOf(e)}`),
  );

  const busy = phase === 'starting' || phase === 'in_call' || phase === 'ending';
  return (
    <section class="card" id="test-call" data-phase={phase} ref={cardRef}>
      <div class="row">
        <h2>Test call</h2>
        <span class="spacer" />
        {!busy && <button id="test-call-start" onClick={() => void start()}>{phase === 'ended' ? 'Call again' : 'Start test call'}</button>}
        {busy && <button id="test-call-hangup" class="danger" disabled={phase !== 'in_call'} onClick={() => void hangUp()}>Hang up</button>}
        {phase === 'in_call' && <button id="test-call-mute" class="secondary" onClick={toggleMute}>{muted ? 'Unmute' : 'Mute'}</button>}
      </div>
      <p class="muted" id="test-call-status">
        {phase === 'idle' && 'Talk to this agent (its latest version) from here. The browser asks for the microphone.'}
        {phase === 'starting' && 'Connecting…'}
        {phase === 'in_call' && <>In call <a href={`#/calls/${callId}`}><code>{callId}</code></a></>}
        {phase === 'ending' && 'Hanging up…'}
        {phase === 'ended' && <>Call ended: <span id="test-call-reason">{endedReason}</span></>}
      </p>
      <ErrorBox error={error} id="test-call-error" />
      {phase !== 'idle' && (
        <div class="live">
          <div>
            <h3>{phase === 'ended' && finished?.transcript_object ? 'Transcript' : 'Live transcript'}</h3>
            <TranscriptView items={phase === 'ended' && finished?.transcript_object ? finished.transcript_object : transcript} id="test-call-transcript" />
          </div>
          <div>
            <h3>State</h3>
            <div class="speaking" id="test-call-speaking" data-agent={String(agentTalking)}>
              <span class={agentTalking ? 'on' : ''}>Agent speaking</span>
            </div>
            <h3>Flow nodes</h3>
            {nodes.length === 0 ? (
              <p class="muted" id="test-call-nodes">{phase === 'ended' ? 'No node transitions.' : 'No node transition yet.'}</p>
            ) : (
              <ol class="node-path" id="test-call-nodes">{nodes.map((n, i) => <li key={i}><code>{n}</code></li>)}</ol>
            )}
          </div>
        </div>
      )}
      {phase === 'ended' && callId && (
        <div id="test-call-finished" data-status={finished?.call_status ?? ''}>
          <h3>Finished call</h3>
          {!finished && <p class="muted">Loading the finished call…</p>}
          {finished && (
            <p>
              <Badge value={finished.call_status} /> {finished.disconnection_reason ?? ''} · {formatDuration(finished.duration_ms)} ·{' '}
              <a id="test-call-link" href={`#/calls/${callId}`}>Open the call page (recording, latency, analysis)</a>
            </p>
          )}
        </div>
      )}
    </section>
  );
}
