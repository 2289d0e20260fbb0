/**
 * Agent tests (issue 28): a test case is a simulated call against an agent version (a scripted or
 * LLM-played caller, mocked functions) and the assertions its record must meet; a test run plays
 * some of an agent's cases and keeps each one's result. These are the wire shapes (TypeBox), the
 * types derived from them, and the rules the schemas cannot say (a regular expression's safety).
 * docs/testing-agents.md is the reference.
 */
import { Type, type Static } from '@sinclair/typebox';
import { FunctionName } from './custom-function.ts';
import { Name, ResourceId, Strict, StringMap, Text } from './schema-kit.ts';

/** Most turns a script may have. */
export const MAX_SCRIPT_TURNS = 100;
/** Most assertions a case may have. */
export const MAX_ASSERTIONS = 50;
/** Longest `wait_ms` of one script turn (virtual time in text mode), ms. */
export const MAX_WAIT_MS = 600_000;
/** Longest `delay_ms` of a mocked function, ms. */
export const MAX_MOCK_DELAY_MS = 120_000;
/** Longest regular expression of a `transcript_matches` assertion, characters. */
export const MAX_PATTERN_LENGTH = 500;
/** Most cases a run may name. */
export const MAX_RUN_CASES = 500;
/** Most turns an LLM-played caller (persona) takes before the simulation hangs up. */
export const MAX_PERSONA_TURNS = 12;

const Role = Type.Union([Type.Literal('agent'), Type.Literal('user')]);

/** One turn of a scripted caller. */
export const ScriptTurn = Type.Union([
  Strict({ say: Text(4096) }, { description: 'The caller says this (a user turn).' }),
  Strict({ dtmf: Type.String({ minLength: 1, maxLength: 32, pattern: '^[0-9*#A-Da-d]+$' }) }, { description: 'The caller presses these keys.' }),
  Strict({ wait_ms: Type.Integer({ minimum: 0, maximum: MAX_WAIT_MS }) }, { description: 'The caller says nothing for this long.' }),
  Strict(
    {
      interrupt: Text(4096),
      after_words: Type.Optional(Type.Integer({ minimum: 0, maximum: 1000, description: 'Words of the reply heard before the caller speaks over it; default 2.' })),
    },
    { description: "The caller speaks over the agent's reply to the previous turn." },
  ),
]);
export type ScriptTurn = Static<typeof ScriptTurn>;

/** Who calls: a script of turns, or a persona with a goal played by the configured LLM. */
export const Caller = Type.Union([
  Strict({ script: Type.Array(ScriptTurn, { maxItems: MAX_SCRIPT_TURNS }) }),
  Strict({
    persona: Text(4096),
    goal: Text(4096),
    max_turns: Type.Optional(Type.Integer({ minimum: 1, maximum: MAX_PERSONA_TURNS })),
  }),
]);
export type Caller = Static<typeof Caller>;

/** What a mocked function answers instead of its backend. */
export const ToolMock = Strict({
  /** The answer's body (JSON); default `{}`. */
  response: Type.Optional(Type.Unknown()),
  /** The HTTP status it answers; default 200 (outside 2xx the call fails as `http_<status>`). */
  status: Type.Optional(Type.Integer({ minimum: 100, maximum: 599 })),
  /** How long it takes, ms (virtual in text mode: counted in the latency, not waited). */
  delay_ms: Type.Optional(Type.Integer({ minimum: 0, maximum: MAX_MOCK_DELAY_MS })),
});
export type ToolMock = Static<typeof ToolMock>;

const Ms = Type.Integer({ minimum: 0, maximum: 3_600_000 });

/** Every assertion kind, as `{"type": ..., ...}`. */
export const Assertion = Type.Union([
  Strict({ type: Type.Literal('node_reached'), node_id: Name(128) }),
  Strict({ type: Type.Literal('node_path'), node_ids: Type.Array(Name(128), { minItems: 1, maxItems: 100 }) }),
  Strict({ type: Type.Literal('tool_called'), name: FunctionName, args: Type.Optional(Type.Object({}, { additionalProperties: true })) }),
  Strict({ type: Type.Literal('tool_not_called'), name: FunctionName }),
  Strict({ type: Type.Literal('variable_equals'), name: Name(128), value: Text(8192) }),
  Strict({ type: Type.Literal('transcript_contains'), role: Type.Optional(Role), text: Type.String({ minLength: 1, maxLength: 4096 }) }),
  Strict({ type: Type.Literal('transcript_matches'), role: Type.Optional(Role), pattern: Type.String({ minLength: 1, maxLength: MAX_PATTERN_LENGTH }), flags: Type.Optional(Type.String({ pattern: '^[imsu]{0,4}$' })) }),
  Strict({ type: Type.Literal('call_successful'), value: Type.Boolean() }),
  Strict({ type: Type.Literal('disconnection_reason'), value: Name(64) }),
  Strict({ type: Type.Literal('max_turns'), value: Type.Integer({ minimum: 0, maximum: 10_000 }) }),
  Strict({ type: Type.Literal('latency_e2e_p90_below_ms'), value: Ms }),
  Strict({ type: Type.Literal('llm_judge'), criterion: Type.String({ minLength: 1, maxLength: 4096 }) }),
]);
export type Assertion = Static<typeof Assertion>;
export type AssertionType = Assertion['type'];

/** How the caller's side is carried: words straight to the engine, or speech through the pipeline. */
export const TestMode = Type.Union([Type.Literal('text'), Type.Literal('audio')]);
export type TestMode = Static<typeof TestMode>;

/**
 * The speech providers an audio-mode case runs on, by their STT_PROVIDER / TTS_PROVIDER names;
 * a role not named runs on the embedded engine (pocketsphinx, flite).
 */
export const CaseProviders = Strict(
  { stt: Type.Optional(Name(64)), tts: Type.Optional(Name(64)) },
  { description: 'Audio mode: the recogniser and synthesiser to run on, by provider name (default the embedded ones).' },
);
export type CaseProviders = Static<typeof CaseProviders>;

const caseFields = {
  name: Type.Optional(Name(256)),
  agent_id: ResourceId,
  /** The version the case pins; absent: the version the run names (or the latest). */
  agent_version: Type.Optional(Type.Integer({ minimum: 1 })),
  mode: Type.Optional(TestMode),
  caller: Caller,
  dynamic_variables: Type.Optional(StringMap),
  metadata: Type.Optional(Type.Object({}, { additionalProperties: true, maxProperties: 50 })),
  tool_mocks: Type.Optional(Type.Record(FunctionName, ToolMock, { maxProperties: 100 })),
  /** A function the case does not mock is refused (the engine sees an error) unless this is true. */
  allow_unmocked_functions: Type.Optional(Type.Boolean()),
  /** Audio mode: the voice the caller's script is spoken with (a voice of the synthesiser; default its first). */
  caller_voice_id: Type.Optional(Name(128)),
  /** Issue 28: audio mode's speech providers (CaseProviders); absent: the embedded engines. */
  providers: Type.Optional(CaseProviders),
  assertions: Type.Array(Assertion, { maxItems: MAX_ASSERTIONS }),
};

export const TestCaseCreateBody = Strict(caseFields, { title: 'CreateTestCaseRequest' });
export type TestCaseCreate = Static<typeof TestCaseCreateBody>;

const { agent_id: _agent, ...changeable } = caseFields;
export const TestCaseUpdateBody = Type.Partial(Strict(changeable), { title: 'UpdateTestCaseRequest', minProperties: 1 });
export type TestCaseUpdate = Static<typeof TestCaseUpdateBody>;

/** A case as stored and answered (defaults filled in). */
export type TestCase = Omit<TestCaseCreate, 'mode' | 'dynamic_variables' | 'metadata' | 'tool_mocks' | 'assertions' | 'name'> & {
  test_case_id: string;
  name: string;
  mode: TestMode;
  dynamic_variables: Record<string, string>;
  metadata: Record<string, unknown>;
  tool_mocks: Record<string, ToolMock>;
  assertions: Assertion[];
  created_at: number;
  last_modification_timestamp: number;
};

/** One assertion's outcome: what was expected, what happened; `skipped` (llm_judge without an LLM) is never a pass. */
export interface AssertionResult {
  type: AssertionType;
  passed: boolean;
  skipped?: boolean;
  expected: unknown;
  actual: unknown;
  /** Why it was skipped, or what went wrong judging it. */
  detail?: string;
}

/** A function call the simulated call made (mocked or not). */
export interface SimulatedToolCall {
  name: string;
  arguments: Record<string, unknown>;
  /** What it answered (the mock's response, or the backend's). */
  result: string;
  mocked: boolean;
  ok: boolean;
}

/** One line of the simulated call's transcript. */
export interface SimulatedUtterance {
  role: 'agent' | 'user';
  content: string;
  cut_off?: boolean;
  /** A user turn that was keys pressed, not words. */
  dtmf?: boolean;
}

/** The result of one case in a run. */
export interface TestCaseResult {
  test_case_id: string;
  name: string;
  mode: TestMode;
  agent_version: number;
  passed: boolean;
  /** The case could not be played (its agent version is missing, an engine it needs is not configured...). */
  error: string | null;
  assertions: AssertionResult[];
  transcript: SimulatedUtterance[];
  node_path: string[];
  tool_calls: SimulatedToolCall[];
  variables: Record<string, string>;
  disconnection_reason: string;
  call_successful: boolean;
  /** The simulated call's leads and tickets: kept here, never in the account's lists. */
  leads: unknown[];
  tickets: unknown[];
  /** End-to-end latency of the agent's replies, ms (text mode: the engine's time plus mocked delays). */
  latency: { e2e_p50_ms: number | null; e2e_p90_ms: number | null; values_ms: number[] };
  /** How long the case took to play, ms (wall time). */
  duration_ms: number;
  /** Audio mode: the call's length on its own clock (what it would have taken in real time), ms. */
  simulated_ms?: number;
  /**
   * Audio mode: the clock the call ran on: 'virtual' (embedded engines: time moves as fast as they
   * keep up) or 'real_time' (a recogniser bound to the wall clock, such as a hosted streaming one).
   */
  clock?: 'virtual' | 'real_time';
  /** Audio mode: the recogniser and synthesiser the call ran on. */
  providers?: { stt: string; tts: string };
}

export const TEST_RUN_STATUSES = ['running', 'complete'] as const;
export type TestRunStatus = (typeof TEST_RUN_STATUSES)[number];

export const TestRunCreateBody = Strict(
  {
    agent_id: ResourceId,
    agent_version: Type.Optional(Type.Integer({ minimum: 1 })),
    test_case_ids: Type.Optional(Type.Array(ResourceId, { minItems: 1, maxItems: MAX_RUN_CASES, uniqueItems: true })),
  },
  { title: 'CreateTestRunRequest' },
);
export type TestRunCreate = Static<typeof TestRunCreateBody>;

/** A run as answered: its status, counts and each case's result (in the order of its cases). */
export interface TestRun {
  test_run_id: string;
  agent_id: string;
  /** The version run (null: each case's own, or the latest at the time). */
  agent_version: number | null;
  status: TestRunStatus;
  test_case_ids: string[];
  passed: number;
  failed: number;
  results: TestCaseResult[];
  created_at: number;
  finished_at: number | null;
}

/**
 * Why a `transcript_matches` pattern is refused, or null: it must compile, and, since it runs on
 * the server, it may not have the shapes that backtrack exponentially (a quantified group that
 * contains a quantifier, as in `(a+)+`) or backreferences.
 */
export function patternProblem(pattern: string, flags = ''): string | null {
  try {
    new RegExp(pattern, flags);
  } catch (error) {
    return `is not a valid regular expression (${error instanceof Error ? error.message : 'invalid'})`;
  }
  if (/\\[1-9k]/.test(pattern)) return 'may not use backreferences';
  // A group holding a quantifier, itself quantified: (x+)*, (x*)+, (x{2,})+ ...
  if (/\((?:[^()]|\\.)*[+*}](?:[^()]|\\.)*\)\s*[+*{]/.test(pattern)) return 'may not quantify a group that holds a quantifier (it could run for very long)';
  return null;
}
