import type { AgentOverride } from '../domain/agent.ts';
import type { EngineStatus } from '../providers/descriptor.ts';
import type { OpenAiEmbeddingsOptions } from '../providers/openai/embeddings.ts';
import { doctor, featureReport } from '../providers/doctor.ts';
import type { ProviderOptions, Providers } from '../providers/registry.ts';
import type { FlowTools } from '../voice/index.ts';
import { type AgentForCall, effectiveEngine, engineNeedsMissingLlm } from './engine-factory.ts';
import type { Logger } from '../lib/logger.ts';
import { storableText } from '../domain/text.ts';

/** LeadService.createLead as the flow's create_lead node uses it. */
export interface LeadCreator {
  createLead(accountId: string, fields: { name: string; phone: string; email?: string | null; notes?: string | null }, options?: { callId?: string | null }): Promise<unknown>;
}

/** TicketService.createTicket as the flow's create_ticket node uses it. */
export interface TicketCreator {
  createTicket(
    accountId: string,
    fields: { subject: string; description: string; priority?: 'low' | 'normal' | 'high' | 'urgent'; call_id?: string | null },
  ): Promise<unknown>;
}

const PRIORITIES = new Set(['low', 'normal', 'high', 'urgent']);

/** A field a flow rendered from the conversation, trimmed and storable (domain/text.ts). */
const text = (value: string) => storableText(value).trim();

/** The tools of a call's flow: leads and tickets of the call's account, linked to the call. */
export function flowToolsFor(leads: LeadCreator | undefined, tickets: TicketCreator | undefined) {
  return (call: { accountId: string; callId: string }): FlowTools => ({
    async createLead(fields) {
      if (!leads) throw new Error('leads are not available on this server');
      return leads.createLead(
        call.accountId,
        {
          name: text(fields.name) || 'Unknown',
          phone: text(fields.phone),
          ...(fields.email && text(fields.email) ? { email: text(fields.email) } : {}),
          ...(fields.notes && text(fields.notes) ? { notes: text(fields.notes) } : {}),
        },
        { callId: call.callId },
      );
    },
    async createTicket(fields) {
      if (!tickets) throw new Error('tickets are not available on this server');
      const priority = fields.priority?.trim().toLowerCase();
      return tickets.createTicket(call.accountId, {
        subject: text(fields.subject) || 'Support request',
        description: storableText(fields.description),
        ...(priority && PRIORITIES.has(priority) ? { priority: priority as 'low' } : {}),
        call_id: call.callId,
      });
    },
  });
}

/** CallService's create-web-call capability check: refuses agents that need an LLM this server lacks. */
export function engineCapabilityCheck(providers: Pick<Providers, 'llm'>) {
  return (agent: AgentForCall, override: AgentOverride | undefined): string | null =>
    engineNeedsMissingLlm(effectiveEngine(agent, override), providers.llm !== undefined);
}

/**
 * Logs each engine's availability at start-up; a missing engine the server is set to use is a
 * warning. Then whether the features that need a capability (preemptive replies: interim results)
 * can run with the configured providers, and why not.
 */
export async function logEngineAvailability(log: Logger, options: ProviderOptions, probeTimeoutMs = 0, embeddings: OpenAiEmbeddingsOptions | null = null): Promise<EngineStatus[]> {
  const report = await doctor(options, probeTimeoutMs, embeddings);
  for (const e of report) {
    const fields = { engine: e.engine, role: e.role, selected: e.selected, available: e.available, detail: e.detail };
    if (e.selected && !e.available && e.role === 'embeddings') log.warn(fields, 'embeddings endpoint unavailable: knowledge bases answer from lexical retrieval alone');
    else if (e.selected && !e.available) log.warn(fields, 'speech engine unavailable: calls that need it will end with an error');
    else log.info(fields, 'speech engine');
  }
  for (const f of featureReport(options)) log.info({ feature: f.feature, available: f.available, detail: f.detail }, 'speech feature');
  return report;
}
