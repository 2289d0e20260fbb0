import type { AgentConfig, EngineSnapshot } from '../../domain/agent.ts';
import type { ConversationFlowDefinition } from '../../domain/conversation-flow.ts';
import type { ServiceLlmDefinition } from '../../domain/service-llm.ts';
import type { JsonText } from '../json-column.ts';

/** A conversation flow or service LLM: a mutable response-engine definition. */
export interface EngineTable<Definition> {
  id: string;
  account_id: string;
  /** The definition (without id and timestamps). */
  config: JsonText<Definition>;
  created_at: number;
  updated_at: number;
}

export interface AgentTable {
  id: string;
  account_id: string;
  latest_version: number;
  created_at: number;
  updated_at: number;
}

/** An immutable agent version; `engine_snapshot` pins the engine definition it was made with. */
export interface AgentVersionTable {
  agent_id: string;
  version: number;
  /** The agent's fields, every default filled in. */
  config: JsonText<AgentConfig>;
  /** The response engine's definition at the time this version was made. */
  engine_snapshot: JsonText<EngineSnapshot>;
  created_at: number;
}

/** What Retell's version operations record of a version (migration 0020_retell); at most one row per version. */
export interface AgentVersionNoteTable {
  agent_id: string;
  version: number;
  /** The version create-agent-version copied. */
  base_version: number | null;
  /** When publish-agent-version first published it (epoch ms); null: a draft. */
  published_at: number | null;
  version_title: string | null;
  version_description: string | null;
}

export interface AgentTables {
  conversation_flows: EngineTable<ConversationFlowDefinition>;
  service_llms: EngineTable<ServiceLlmDefinition>;
  agents: AgentTable;
  agent_versions: AgentVersionTable;
  agent_version_notes: AgentVersionNoteTable;
}
