/**
 * The dashboard's agent form (web/dashboard/agent-settings.ts) against the API's agent schema: it
 * shows every setting the API takes, with the API's ranges, choices and defaults, and marks as
 * without effect exactly the fields the API accepts without effect. A field added to the schema
 * and not to the form, or a range changed on one side only, fails here.
 */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { AGENT_DEFAULTS, AgentSettings, RETELL_AGENT_FIELDS_WITHOUT_EFFECT } from '../../src/domain/agent.ts';
import { ALL_SETTINGS, type Setting, fieldOfError } from '../../web/dashboard/agent-settings.ts';

/** The schema without its null branch (Nullable) — the value's own type. */
function valueSchema(schema: TSchema): TSchema {
  const branches = schema.anyOf as TSchema[] | undefined;
  const nonNull = branches?.filter((b) => b.type !== 'null');
  return nonNull && nonNull.length === 1 ? nonNull[0]! : schema;
}

/** The schema of a setting's key (`user_dtmf_options.digit_limit` walks into the object). */
function schemaOf(key: string): TSchema {
  const [top, member] = key.split('.');
  const schema = valueSchema((AgentSettings as Record<string, TSchema>)[top!]!);
  return member ? valueSchema(schema.properties[member]) : schema;
}

/** The values of an enum-like schema: a union of literals. */
function literals(schema: TSchema): unknown[] | undefined {
  const branches = (schema.anyOf as TSchema[] | undefined) ?? undefined;
  return branches?.every((b) => 'const' in b) ? branches.map((b) => b.const) : undefined;
}

const byKey = new Map<string, Setting>(ALL_SETTINGS.map((s) => [s.key, s]));

describe('the agent form covers the agent schema', () => {
  test('every setting of the API is in the form, and nothing else', () => {
    for (const key of Object.keys(AgentSettings)) {
      const schema = valueSchema((AgentSettings as Record<string, TSchema>)[key]!);
      if (schema.type === 'object' && schema.properties && key !== 'voicemail_option') {
        for (const member of Object.keys(schema.properties)) assert.ok(byKey.has(`${key}.${member}`), `the form shows ${key}.${member}`);
      } else {
        assert.ok(byKey.has(key), `the form shows ${key}`);
      }
    }
    for (const setting of ALL_SETTINGS) assert.ok(setting.key.split('.')[0]! in AgentSettings, `${setting.key} is an agent setting`);
    assert.equal(new Set(ALL_SETTINGS.map((s) => s.key)).size, ALL_SETTINGS.length, 'no setting twice');
  });

  test("ranges, lengths and choices are the API's", () => {
    for (const setting of ALL_SETTINGS) {
      const schema = schemaOf(setting.key);
      const kind = setting.kind;
      if (kind.type === 'number') {
        assert.equal(kind.min, schema.minimum, `${setting.key} minimum`);
        assert.equal(kind.max, schema.maximum, `${setting.key} maximum`);
        assert.equal(kind.integer === true, schema.type === 'integer', `${setting.key} integer`);
      } else if (kind.type === 'text') {
        assert.equal(kind.maxLength, schema.maxLength, `${setting.key} maxLength`);
      } else if (kind.type === 'enum' || kind.type === 'checks') {
        const values = kind.type === 'checks' ? literals(schema.items) : literals(schema);
        if (values) assert.deepEqual([...kind.options].sort(), [...values].sort(), `${setting.key} choices`);
        else for (const option of kind.options) assert.match(option, new RegExp(schema.pattern), `${setting.key}: ${option}`);
      } else if (kind.type === 'list' || kind.type === 'rows') {
        assert.equal(schema.type, 'array', setting.key);
        assert.equal(kind.maxItems, schema.maxItems, `${setting.key} maxItems`);
        if (kind.type === 'list') assert.equal(kind.maxLength, schema.items.maxLength, `${setting.key} item maxLength`);
        else for (const column of kind.columns) assert.ok(column.key in schema.items.properties, `${setting.key}.${column.key}`);
      } else if (kind.type === 'bool') {
        assert.equal(schema.type, 'boolean', setting.key);
      }
    }
  });

  test("defaults are the API's, and the fields without effect are the API's", () => {
    for (const setting of ALL_SETTINGS) {
      const [top, member] = setting.key.split('.');
      if (member) continue; // user_dtmf_options' members: their defaults are documented in the schema's description
      if (top! in AGENT_DEFAULTS) assert.deepEqual(setting.default, (AGENT_DEFAULTS as Record<string, unknown>)[top!], `${setting.key} default`);
    }
    const withoutEffect = ALL_SETTINGS.filter((s) => s.noEffect).map((s) => s.key).sort();
    assert.deepEqual(withoutEffect, Object.keys(RETELL_AGENT_FIELDS_WITHOUT_EFFECT).sort());
    for (const [field, why] of Object.entries(RETELL_AGENT_FIELDS_WITHOUT_EFFECT)) {
      assert.ok(byKey.get(field)!.help.includes(why), `${field}'s help says why: ${why}`);
    }
  });

  test('an API error is placed on the field it names', () => {
    assert.equal(fieldOfError('body/end_call_after_silence_ms must be >= 10000'), 'end_call_after_silence_ms');
    assert.equal(fieldOfError('body/user_dtmf_options/digit_limit must be <= 50'), 'user_dtmf_options');
    assert.equal(fieldOfError('opt_out_sensitive_data_storage is true, which stores basic_attributes_only, but data_storage_setting is everything; send one'), 'opt_out_sensitive_data_storage');
    assert.equal(fieldOfError('The agent could not be saved.'), null);
  });
});
