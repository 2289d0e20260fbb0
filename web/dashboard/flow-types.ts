/** The shapes of a conversation flow as the dashboard's builder edits them (the server's schema: src/domain/conversation-flow.ts). */
export type Condition =
  | { type: 'keyword'; keywords: string[] }
  | { type: 'equation'; equations: Equation[]; operator: '&&' | '||' }
  | { type: 'prompt'; prompt: string }
  | { type: 'always' };
export interface Equation { left: string; operator: string; right?: string }
export interface Edge { id: string; destination_node_id: string; transition_condition: Condition }
export interface Variable { name: string; type: string; description?: string }
export interface Node {
  id: string;
  name?: string;
  type: string;
  instruction?: { type: 'static_text' | 'prompt'; text: string };
  edges?: Edge[];
  extract_variables?: Variable[];
  tool_id?: string;
  success?: boolean;
  display_position?: { x: number; y: number };
  [field: string]: unknown;
}
export interface Flow {
  start_node_id?: string;
  nodes?: Node[];
  tools?: { tool_id: string; name?: string }[];
  [field: string]: unknown;
}

