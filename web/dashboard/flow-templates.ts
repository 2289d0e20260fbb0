/** Flows to start from in the builder: an empty canvas and three small working lines. */
import type { Flow } from './flow-types.ts';

export interface FlowTemplate {
  key: string;
  title: string;
  flow: () => Flow;
}

const said = (text: string) => ({ type: 'static_text' as const, text });
const at = (x: number, y: number) => ({ x, y });

export const FLOW_TEMPLATES: FlowTemplate[] = [
  { key: 'empty', title: 'Empty canvas', flow: () => ({ start_node_id: '', nodes: [] }) },
  {
    key: 'receptionist',
    title: 'Receptionist that books',
    flow: () => ({
      start_node_id: 'greet',
      start_speaker: 'agent',
      default_dynamic_variables: { company: 'Acme' },
      nodes: [
        {
          id: 'greet', type: 'conversation', instruction: said('Hello, thanks for calling {{company}}. Would you like to book an appointment?'), display_position: at(220, 20),
          edges: [
            { id: 'e_book', destination_node_id: 'when', transition_condition: { type: 'keyword', keywords: ['appointment', 'book', 'yes'] } },
            { id: 'e_else', destination_node_id: 'bye', transition_condition: { type: 'always' } },
          ],
        },
        {
          id: 'when', type: 'conversation', instruction: said('Which day suits you?'), display_position: at(20, 160),
          extract_variables: [{ name: 'day', type: 'text', description: 'The day the caller wants' }],
          edges: [{ id: 'e_day', destination_node_id: 'booked', transition_condition: { type: 'equation', equations: [{ left: 'day', operator: 'exists' }], operator: '&&' } }],
        },
        { id: 'booked', type: 'end', success: true, instruction: said('You are booked for {{day}}. Goodbye.'), display_position: at(20, 300) },
        { id: 'bye', type: 'end', instruction: said('No problem. Goodbye.'), display_position: at(420, 160) },
      ],
    }),
  },
  {
    key: 'order-status',
    title: 'Order status with a function',
    flow: () => ({
      start_node_id: 'ask',
      start_speaker: 'agent',
      tools: [
        {
          tool_id: 'orders', type: 'custom', name: 'lookup_order', description: 'Looks up an order by its number.', url: 'https://orders.example.com/status',
          parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] },
          response_variables: { order_status: 'order.status' },
        },
      ],
      nodes: [
        {
          id: 'ask', type: 'conversation', instruction: said('What is your order number?'), display_position: at(20, 20),
          extract_variables: [{ name: 'order_id', type: 'digits' }],
          edges: [{ id: 'e_lookup', destination_node_id: 'lookup', transition_condition: { type: 'equation', equations: [{ left: 'order_id', operator: 'exists' }], operator: '&&' } }],
        },
        {
          id: 'lookup', type: 'function', tool_id: 'orders', args: { order_id: '{{order_id}}' }, speak_during_execution: true, instruction: said('One moment while I look that up.'), display_position: at(20, 160),
          edges: [
            { id: 'e_found', destination_node_id: 'told', transition_condition: { type: 'equation', equations: [{ left: 'tool_call_status', operator: '==', right: 'success' }], operator: '&&' } },
            { id: 'e_failed', destination_node_id: 'sorry', transition_condition: { type: 'always' } },
          ],
        },
        { id: 'told', type: 'end', success: true, instruction: said('Your order has {{order_status}}. Goodbye.'), display_position: at(20, 300) },
        { id: 'sorry', type: 'end', success: false, instruction: said('Sorry, I could not look it up. Please call again later.'), display_position: at(260, 300) },
      ],
    }),
  },
  {
    key: 'lead-capture',
    title: 'Lead capture',
    flow: () => ({
      start_node_id: 'name',
      start_speaker: 'agent',
      nodes: [
        {
          id: 'name', type: 'conversation', instruction: said('Thanks for your interest. May I have your name?'), display_position: at(20, 20),
          extract_variables: [{ name: 'name', type: 'name' }],
          edges: [{ id: 'e_phone', destination_node_id: 'phone', transition_condition: { type: 'equation', equations: [{ left: 'name', operator: 'exists' }], operator: '&&' } }],
        },
        {
          id: 'phone', type: 'conversation', instruction: said('And the best number to reach you, {{name}}?'), display_position: at(20, 160),
          extract_variables: [{ name: 'phone', type: 'digits' }],
          edges: [{ id: 'e_save', destination_node_id: 'save', transition_condition: { type: 'equation', equations: [{ left: 'phone', operator: 'exists' }], operator: '&&' } }],
        },
        {
          id: 'save', type: 'create_lead', lead: { name: '{{name}}', phone: '{{phone}}' }, instruction: said('Thank you.'), display_position: at(20, 300),
          edges: [{ id: 'e_done', destination_node_id: 'done', transition_condition: { type: 'always' } }],
        },
        { id: 'done', type: 'end', success: true, instruction: said('Someone will call you back soon. Goodbye.'), display_position: at(20, 440) },
      ],
    }),
  },
];
