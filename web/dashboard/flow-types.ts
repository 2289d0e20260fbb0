/** The shapes of a conversation flow as the dashboard's builder edits them (the server's schema: src/domain/conversation-flow.ts). */
export type Condition =
  | { type: 'keyword'; keywords: string[] }
  | { type: 'equation'; equations: Equation[]; operator: '&&' | '||' }
  | { type: 'prompt'; prompt: string }
  | { type: 'always' };
export interface Equation { left: string; operator: string; right?: string }
export interface Edge { id: string; destination_node_id: string; transition_condition: Condition }
export interface Variable { name: string; type: string; description?: string; min_digits?: number; max_digits?: number }
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
  /** transfer_call: where the call goes. */
  transfer_destination?: { type: 'predefined'; number: string; [field: string]: unknown };
  transfer_option?: { type: 'cold_transfer'; [field: string]: unknown };
  /** press_digit: the keys sent. */
  digits?: string;
  /** transfer_call and press_digit: the edge taken when the node's action fails. */
  edge?: Edge;
  [field: string]: unknown;
}
export interface Flow {
  /** What the dashboard calls the flow (ours; absent until set). */
  name?: string;
  start_node_id?: string;
  nodes?: Node[];
  tools?: { tool_id: string; name?: string }[];
  [field: string]: unknown;
}


/** The server's TRANSFER_DESTINATION_PATTERN (src/domain/custom-function.ts): an E.164 number or a SIP URI. */
export const TRANSFER_NUMBER_PATTERN = '^(\\+[1-9][0-9]{1,14}|sips?:[^\\s<>"]{3,250})$';
/** The server's NODE_DIGITS_PATTERN (src/domain/conversation-flow.ts): keys 0-9, * and #, `,` a pause. */
export const NODE_DIGITS_PATTERN = '^[0-9*#,]{1,32}$';
