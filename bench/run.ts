/**
 * `npm run bench [-- part ...]`: runs the benchmarks (api, webhooks, voice, tools, recognition, browser, sip, sip-outbound, twilio, agent-tests, knowledge, knowledge-vectors, knowledge-recall, knowledge-documents, webrtc, streamed, embedded-scale, denoise, voicemail, sip-codec, telephone-band, telephone-mean, decoder-cost, closed-check, mllr, browser-playout, first-utterance, webrtc-signal, webrtc-server-share; all by default) and
 * prints their tables, ready to paste into BENCHMARKS.md. Each part measures against a baseline
 * run by the same script on the same machine, because these shared machines are noisy.
 */
import { runApiBench } from './api.ts';
import { runAgentTestsBench } from './agent-tests.ts';
import { runBrowserBench, runBrowserPlayoutBench } from './browser.ts';
import { runRecognitionBench } from './recognition.ts';
import { runVoiceBench } from './voice.ts';
import { runWebhookBench } from './webhooks.ts';
import { runToolsBench } from './tools.ts';
import { runSipBench } from './sip.ts';
import { runSipOutboundBench } from './sip-outbound.ts';
import { runKnowledgeBench } from './knowledge.ts';
import { runKnowledgeRecallBench } from './knowledge-recall.ts';
import { runKnowledgeVectorsBench } from './knowledge-vectors.ts';
import { runKnowledgeDocumentsBench } from './knowledge-documents.ts';
import { runWebRtcBench } from './webrtc.ts';
import { runWebRtcSignalBench } from './webrtc-signal.ts';
import { runWebRtcServerShareBench } from './webrtc-server-share.ts';
import { runTwilioBench } from './twilio.ts';
import { runStreamedBench } from './streamed.ts';
import { runEmbeddedScaleBench } from './embedded-scale.ts';
import { runDenoiseBench } from './denoise.ts';
import { runVoicemailBench } from './voicemail.ts';
import { runSipCodecBench } from './sip-codec.ts';
import { runTelephoneBandBench } from './telephone-band.ts';
import { runTelephoneMeanBench } from './telephone-mean.ts';
import { runDecoderCostBench } from './decoder-cost.ts';
import { runClosedCheckBench } from './closed-check.ts';
import { runMllrBench } from './mllr.ts';
import { runFirstUtteranceBench } from './first-utterance.ts';

const log = (line: string) => process.stderr.write(`${line}\n`);

const parts: Record<string, () => Promise<string>> = {
  api: () => runApiBench({ durationS: 10, connections: 50, rounds: 5, stores: ['sqlite', 'postgres'] }, log),
  webhooks: () => runWebhookBench({ log }),
  voice: () => runVoiceBench({ log }),
  tools: () => runToolsBench({ log }),
  recognition: () => runRecognitionBench({ log }),
  browser: () => runBrowserBench({ log }),
  'browser-playout': () => runBrowserPlayoutBench({ log }),
  sip: () => runSipBench({ log }),
  'sip-outbound': () => runSipOutboundBench({ log }),
  'agent-tests': () => runAgentTestsBench({ log }),
  knowledge: () => runKnowledgeBench({ log }),
  'knowledge-vectors': () => runKnowledgeVectorsBench({ log }),
  'knowledge-recall': () => runKnowledgeRecallBench({ log }),
  'knowledge-documents': () => runKnowledgeDocumentsBench({ log }),
  webrtc: () => runWebRtcBench({ log }),
  'webrtc-signal': () => runWebRtcSignalBench(log),
  'webrtc-server-share': () => runWebRtcServerShareBench({ log }),
  twilio: () => runTwilioBench({ log }),
  streamed: () => runStreamedBench({ log }),
  'embedded-scale': () => runEmbeddedScaleBench({ log, ...(process.env['CALLS'] ? { calls: Number(process.env['CALLS']) } : {}) }),
  denoise: () => runDenoiseBench({ log }),
  voicemail: () => runVoicemailBench({ log }),
  'sip-codec': () => runSipCodecBench({ log }),
  'telephone-band': () => runTelephoneBandBench({ log, ...(process.env['PER_GROUP'] ? { perGroup: Number(process.env['PER_GROUP']) } : {}) }),
  'telephone-mean': () => runTelephoneMeanBench({ log, ...(process.env['PER_GROUP'] ? { perGroup: Number(process.env['PER_GROUP']) } : {}) }),
  'decoder-cost': () => runDecoderCostBench({ log }),
  'closed-check': () => runClosedCheckBench({ log }),
  mllr: () => runMllrBench({ log }),
  'first-utterance': () => runFirstUtteranceBench({ log }),
};

const wanted = process.argv.slice(2);
for (const name of wanted) {
  if (!parts[name]) {
    process.stderr.write(`unknown part ${name}; parts: ${Object.keys(parts).join(', ')}\n`);
    process.exit(2);
  }
}
for (const name of wanted.length > 0 ? wanted : Object.keys(parts)) {
  process.stdout.write(`\n## ${name}\n\n${await parts[name]!()}\n`);
}
