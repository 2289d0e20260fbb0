/** A conversation flow or service LLM: a mutable response-engine definition. */
export interface EngineTable {
  id: string;
  account_id: string;
  /** The definition as JSON (without id and timestamps). */
  config: string;
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
  /** Agent fields as JSON. */
  config: string;
  /** The response engine's definition at the time this version was made, as JSON. */
  engine_snapshot: string;
  created_at: number;
}

export interface AgentTables {
  conversation_flows: EngineTable;
  service_llms: EngineTable;
  agents: AgentTable;
  agent_versions: AgentVersionTable;
}
