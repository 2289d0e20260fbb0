import { Type, type Static } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { Name, Strict, Text } from './schema-kit.ts';
import { MAX_WEBHOOK_URL_LENGTH } from './webhook.ts';

/** Default of a function's `timeout_ms`, ms. */
export const DEFAULT_FUNCTION_TIMEOUT_MS = 10_000;
/** Longest `timeout_ms` a function may ask for, ms. */
export const MAX_FUNCTION_TIMEOUT_MS = 120_000;
/** Characters of a function's answer handed on (to the model, the record); longer answers are cut and say so. */
export const FUNCTION_RESULT_MAX_CHARS = 15_000;

/** Tool names as OpenAI-style models accept them. */
export const FunctionName = Type.String({ minLength: 1, maxLength: 64, pattern: '^[A-Za-z0-9_-]+$' });
/** Names the service LLM already gives its own tools. */
export const RESERVED_FUNCTION_NAMES = ['end_call'] as const;
const RESERVED_PREFIX = 'transition_to_';

/** A header name as HTTP allows it (a token). */
const HeaderName = Type.String({ minLength: 1, maxLength: 128, pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" });
/** Headers the service sets itself; a function's static headers cannot replace them. */
const OWN_HEADERS = new Set(['content-type', 'content-length', 'user-agent', 'host', 'x-service-signature', 'x-service-event', 'webhook-id', 'webhook-timestamp', 'webhook-signature', 'transfer-encoding', 'connection']);

/**
 * A custom function, written as Retell users write them: the service POSTs
 * `{"call", "name", "args"}` to `url`, signed like agent webhooks (docs/custom-functions.md).
 */
export const CustomFunctionFields = {
  type: Type.Literal('custom'),
  name: FunctionName,
  description: Type.Optional(Text(4096)),
  url: Type.String({ minLength: 1, maxLength: MAX_WEBHOOK_URL_LENGTH }),
  /** JSON Schema of the arguments: an object schema (compiled when the definition is saved). */
  parameters: Type.Optional(Type.Object({}, { additionalProperties: true })),
  /** Longest wait for the answer, ms; default 10 000, at most 120 000. */
  timeout_ms: Type.Optional(Type.Integer({ minimum: 100, maximum: MAX_FUNCTION_TIMEOUT_MS })),
  /** Say a short filler while the request runs (`execution_message_description`). */
  speak_during_execution: Type.Optional(Type.Boolean()),
  execution_message_description: Type.Optional(Text(1024)),
  /** Speak once the result is in (default true). */
  speak_after_execution: Type.Optional(Type.Boolean()),
  /** `{"variable": "json.path"}`: parts of the JSON answer stored as dynamic variables. */
  response_variables: Type.Optional(
    Type.Record(Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z_][A-Za-z0-9_.-]*$' }), Type.String({ minLength: 1, maxLength: 512 }), { maxProperties: 50 }),
  ),
  /** Static headers sent with every request. */
  headers: Type.Optional(Type.Record(HeaderName, Type.String({ maxLength: 4096, pattern: '^[^\\r\\n\\u0000]*$' }), { maxProperties: 20 })),
  /** POST (default), PUT or PATCH: the request always carries the signed JSON body. */
  method: Type.Optional(Type.Union([Type.Literal('POST'), Type.Literal('PUT'), Type.Literal('PATCH')])),
};
export const CustomFunction = Strict(CustomFunctionFields);
export type CustomFunction = Static<typeof CustomFunction>;

/**
 * Retell's `end_call` tool, as Retell users list it among a service LLM's tools: it names and
 * describes the tool the model hangs up with (the service LLM always has one; default name
 * `end_call`).
 */
export const EndCallTool = Strict({ type: Type.Literal('end_call'), name: FunctionName, description: Type.Optional(Text(4096)) });
export type EndCallTool = Static<typeof EndCallTool>;
/** Where a transfer goes: an E.164 number, or a SIP URI (`sip:desk@pbx.example.com`). */
export const TRANSFER_DESTINATION_PATTERN = '^(\\+[1-9][0-9]{1,14}|sips?:[^\\s<>"]{3,250})$';

/** Where a `transfer_call` tool or flow node sends the call: Retell's predefined destination. */
export const TransferDestination = Strict({
  type: Type.Literal('predefined'),
  number: Type.String({ pattern: TRANSFER_DESTINATION_PATTERN, description: 'E.164 number or SIP URI.' }),
  /** Accepted for Retell's clients: the number is always checked (E.164 or a SIP URI). */
  ignore_e164_validation: Type.Optional(Type.Boolean()),
});
/** How the call is handed over: a cold transfer only (the agent leaves the call). */
export const TransferOption = Strict({ type: Type.Literal('cold_transfer'), show_transferee_as_caller: Type.Optional(Type.Boolean()) });

/**
 * Retell's `transfer_call` tool (issue 24): the model hands a phone call to `transfer_destination`
 * and the agent leaves it (a cold transfer: REFER on SIP, `<Dial>` on Twilio). Only a
 * `predefined` destination and a `cold_transfer` are carried; a call that cannot be transferred
 * (a web call) is not offered the tool (docs/telephony.md, "Transfer").
 */
export const TransferCallTool = Strict({
  type: Type.Literal('transfer_call'),
  name: FunctionName,
  description: Type.Optional(Text(4096)),
  transfer_destination: TransferDestination,
  transfer_option: Type.Optional(TransferOption),
  /** Say `execution_message_description` before the transfer. */
  speak_during_execution: Type.Optional(Type.Boolean()),
  execution_message_description: Type.Optional(Text(1024)),
});
export type TransferCallTool = Static<typeof TransferCallTool>;
/**
 * Retell's `press_digit` tool (issue 24): the model presses keys on a phone call to navigate
 * another IVR (RFC 4733 telephone events on SIP). The model gives the keys (`digit`: 0-9, *, #,
 * A-D, up to 32); a call that cannot send them (a web call, a Twilio call) is not offered the tool.
 */
export const PressDigitTool = Strict({
  type: Type.Literal('press_digit'),
  name: FunctionName,
  description: Type.Optional(Text(4096)),
});
export type PressDigitTool = Static<typeof PressDigitTool>;
/** The keys one press_digit call may press. */
export const PRESS_DIGIT_PATTERN = '^[0-9*#A-Da-d]{1,32}$';
/** A tool of a service LLM (`general_tools`, `states[].tools`). */
export const LlmTool = Type.Union([CustomFunction, EndCallTool, TransferCallTool, PressDigitTool]);
export type LlmTool = Static<typeof LlmTool>;

/** A conversation flow's tool: a custom function with the id its `function` nodes name. */
export const FlowTool = Strict({ tool_id: Name(128), ...CustomFunctionFields });
export type FlowTool = Static<typeof FlowTool>;

const ajv = new Ajv({ strict: false, allErrors: false, validateSchema: true });

/** Why `parameters` is not a usable JSON Schema for an arguments object, or null. */
export function parametersProblem(parameters: Record<string, unknown> | undefined): string | null {
  if (parameters === undefined) return null;
  if (parameters['type'] !== undefined && parameters['type'] !== 'object') return 'must be a JSON Schema of type "object"';
  try {
    ajv.compile(parameters);
  } catch (error) {
    return `is not a valid JSON Schema: ${error instanceof Error ? error.message.slice(0, 300) : 'it does not compile'}`;
  } finally {
    // Ajv keeps every schema it compiled (and refuses a second one with the same `$id`): it is only checked here.
    ajv.removeSchema(parameters);
  }
  return null;
}

/**
 * Checks a list of functions beyond their schema (URLs are checked by the service): unique names,
 * names free of the service LLM's own tools, compilable parameters, headers the service does not
 * set itself. `where` names the list in messages (`general_tools`). Null when all is well.
 */
export function checkFunctions(functions: ReadonlyArray<CustomFunction | EndCallTool | TransferCallTool | PressDigitTool>, where: string, taken: ReadonlySet<string> = new Set()): string | null {
  const names = new Set(taken);
  for (const [i, f] of functions.entries()) {
    const at = `${where}[${i}]`;
    if (names.has(f.name)) return `${at}: duplicate function name "${f.name}"`;
    names.add(f.name);
    if (f.name.startsWith(RESERVED_PREFIX)) return `${at}: the name "${f.name}" is reserved for the service's own tools`;
    if (f.type !== 'custom') continue;
    if ((RESERVED_FUNCTION_NAMES as readonly string[]).includes(f.name)) {
      return `${at}: the name "${f.name}" is reserved for the service's own tools`;
    }
    const problem = parametersProblem(f.parameters);
    if (problem) return `${at}.parameters ${problem}`;
    for (const header of Object.keys(f.headers ?? {})) {
      if (OWN_HEADERS.has(header.toLowerCase())) return `${at}.headers: "${header}" is set by the service and cannot be given`;
    }
  }
  return null;
}
