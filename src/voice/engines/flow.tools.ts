/** A flow's create_lead and create_ticket nodes: the lead or ticket built from the call's variables. */
import type { ChatMessage } from '../../providers/llm.ts';
import { renderTemplate, variable } from './variables.ts';
import type { FlowNode, FlowTools } from './types.ts';

/**
 * Creates the lead or ticket of a create_lead / create_ticket node. A failure does not end the
 * conversation: it is reported to `onToolError` and the flow continues.
 */
export async function runToolNode(
  node: FlowNode,
  o: { tools: FlowTools | undefined; vars: Record<string, string>; history: readonly ChatMessage[]; onToolError: ((nodeId: string, error: unknown) => void) | undefined },
): Promise<void> {
  const vars = o.vars;
  try {
    if (node.type === 'create_lead') {
      const t = node.lead ?? {};
      const fields = {
        name: renderTemplate(t.name ?? '{{name}}', vars),
        phone: renderTemplate(t.phone ?? '{{phone}}', vars),
        ...(t.email !== undefined || variable(vars, 'email') ? { email: renderTemplate(t.email ?? '{{email}}', vars) } : {}),
        ...(t.notes !== undefined ? { notes: renderTemplate(t.notes, vars) } : {}),
      };
      await o.tools?.createLead(fields);
    } else {
      const t = node.ticket ?? {};
      const fields = {
        subject: renderTemplate(t.subject ?? node.name ?? 'Support request', vars),
        description: renderTemplate(t.description ?? lastUserText(o.history), vars),
        ...(t.priority !== undefined ? { priority: renderTemplate(t.priority, vars) } : {}),
      };
      await o.tools?.createTicket(fields);
    }
  } catch (e) {
    // A failed lead must not end the conversation; the flow continues and the failure is reported.
    o.onToolError?.(node.id, e);
  }
}

function lastUserText(history: readonly ChatMessage[]): string {
  for (let i = history.length - 1; i >= 0; i--) {
    const m = history[i];
    if (m?.role === 'user') return m.content;
  }
  return '';
}
