/**
 * A deterministic corpus of bad requests over every route of the app: type confusion per field,
 * out-of-range numbers, NUL and lone surrogates, unknown and missing fields, deep nesting, big
 * arrays, malformed bodies, wrong content types, duplicated keys, and junk in query strings and
 * path parameters. Fields come from each route's own schema (and the valid base request, when
 * routes.ts has one), so a route or field added later is covered without editing this file.
 */
import type { AppRoute, JsonSchema, RouteSchemas } from './routes.ts';

/** One request of the corpus. */
export interface CorpusRequest {
  /** What the request tries, for failure messages. */
  label: string;
  method: string;
  url: string;
  payload?: string;
  headers: Record<string, string>;
}

/** What the generator knows of one route. */
export interface CorpusRoute extends AppRoute {
  schemas: RouteSchemas | undefined;
  /** A valid request: its path parameters, query and body. */
  base: { params: Record<string, string>; query: Record<string, string>; body?: unknown };
}

/** mulberry32: a small seeded generator, so every run sends the same corpus. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const nested = (depth: number, leaf: unknown): unknown => {
  let value = leaf;
  for (let i = 0; i < depth; i += 1) value = { n: value };
  return value;
};

/** JSON text put in a field as is: numbers JavaScript cannot hold exactly, nesting too deep to build. */
class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** The body as JSON text, with each `RawJson` in it written as its text. */
function serialise(value: unknown): string {
  const raws: string[] = [];
  const text = JSON.stringify(value, (_key, v: unknown) => {
    if (!(v instanceof RawJson)) return v;
    raws.push(v.text);
    return `zz-raw-json-${raws.length - 1}`;
  });
  return raws.reduce((out, raw, i) => out.replace(`"zz-raw-json-${i}"`, () => raw), text);
}

/** Values that confuse a field's type or range; each is put in every field in turn. */
export const BAD_VALUES: Array<[string, unknown]> = [
  ['null', null],
  ['true', true],
  ['0', 0],
  ['-1', -1],
  ['1.5', 1.5],
  ['1e300', 1e300],
  ['-1e300', -1e300],
  ['2^63', new RawJson('9223372036854775808')],
  ['-2^63 - 1', new RawJson('-9223372036854775809')],
  ['1e300 as written', new RawJson('1e300')],
  ['2^53+2', 9007199254740994],
  ['empty string', ''],
  ['70 KB string', 'x'.repeat(70_000)],
  ['NUL', 'a\u0000b'],
  ['lone high surrogate', 'a\ud800b'],
  ['lone low surrogate', '\udc00'],
  ['digits as text', '12'],
  ['empty array', []],
  ['array', ['x', 1, null]],
  ['empty object', {}],
  ['object', { a: { b: 'c' } }],
  ['NUL in a key', { 'a\u0000': 'b' }],
  ['100 levels deep', nested(100, 'x')],
  ['10,000 levels deep', new RawJson(`${'{"n":'.repeat(10_000)}1${'}'.repeat(10_000)}`)],
  ['10,000 arrays deep', new RawJson(`${'['.repeat(10_000)}${']'.repeat(10_000)}`)],
  ['RTL and emoji', '\u202e\u{1f642}'],
];

/** The bad values used for fields nested below the top level (a seeded sample of the rest joins them). */
const CORE_NESTED = new Set(['null', '1e300', '2^63', 'NUL', 'lone high surrogate', 'array', 'object', '-1', '10,000 levels deep']);

/** Bad texts for query parameters and path parameters (already URL-encoded). */
export const BAD_TEXTS: Array<[string, string]> = [
  ['empty', ''],
  ['0', '0'],
  ['-1', '-1'],
  ['1.5', '1.5'],
  ['1e300', '1e300'],
  ['2^63', '9223372036854775808'],
  ['20 digits', '99999999999999999999'],
  ['16 digits', '9999999999999999'],
  ['letters', 'abc'],
  ['NUL', '%00'],
  ['NUL inside', 'a%00b'],
  ['overlong NUL', '%C0%80'],
  ['surrogate bytes', '%ED%A0%80'],
  ['invalid UTF-8', '%FF%FE'],
  ['2,000 characters', 'x'.repeat(2000)],
  ['space and quote', "%20'%20OR%201=1"],
  ['emoji', '%F0%9F%99%82'],
];

/**
 * Bad path parameters. Malformed percent-encoding and ids over the router's 512 characters are
 * answered by the router before any route (finding 6 of issue 10 gives those the error body).
 */
const BAD_IDS: Array<[string, string]> = [
  ['NUL', '%00'],
  ['prefixed NUL', 'call_%00'],
  ['129 characters', 'x'.repeat(129)],
  ['300 characters', 'x'.repeat(300)],
  ['dot dot', '..'],
  ['encoded traversal', '..%2F..%2Fetc%2Fpasswd'],
  ['spaces and quotes', "%20'%20OR%201=1%20--"],
  ['well-formed, unknown', 'call_00000000000000000000000000000000'],
  ['RTL and emoji', '%E2%80%AE%F0%9F%99%82'],
];

const JSON_HEADERS = { 'content-type': 'application/json' };

/** Whole bodies no route accepts (or, for routes without a body, ignores harmlessly). */
function wholeBodies(base: unknown): Array<[string, string, Record<string, string>]> {
  const text = base === undefined ? '{}' : JSON.stringify(base);
  const firstKey = base && typeof base === 'object' && !Array.isArray(base) ? Object.keys(base)[0] : undefined;
  const cases: Array<[string, string, Record<string, string>]> = [
    ['empty body', '', JSON_HEADERS],
    ['malformed JSON', text.slice(0, Math.max(1, text.length - 1)), JSON_HEADERS],
    ['trailing garbage', `${text} x`, JSON_HEADERS],
    ['a JSON array', '[]', JSON_HEADERS],
    ['JSON null', 'null', JSON_HEADERS],
    ['a JSON string', '"text"', JSON_HEADERS],
    ['a JSON number 1e300', '1e300', JSON_HEADERS],
    ['a byte order mark', `\ufeff${text}`, JSON_HEADERS],
    ['deeply nested arrays', `${'['.repeat(100_000)}${']'.repeat(100_000)}`, JSON_HEADERS],
    ['deeply nested objects', `${'{"a":'.repeat(50_000)}1${'}'.repeat(50_000)}`, JSON_HEADERS],
    ['a big array', JSON.stringify(new Array(200_000).fill(0)), JSON_HEADERS],
    ['NUL in a top-level key', text.replace(/^\{/, '{"x\\u0000":1,'), JSON_HEADERS],
    ['a lone surrogate in a top-level key', text.replace(/^\{/, '{"\\ud800":1,'), JSON_HEADERS],
    ['__proto__', text.replace(/^\{/, '{"__proto__":{"polluted":true},'), JSON_HEADERS],
    ['text/plain', text, { 'content-type': 'text/plain' }],
    ['a form', 'a=1&b=%00', { 'content-type': 'application/x-www-form-urlencoded' }],
    ['multipart', '--x\r\nContent-Disposition: form-data; name="a"\r\n\r\n1\r\n--x--', { 'content-type': 'multipart/form-data; boundary=x' }],
    ['XML', '<a/>', { 'content-type': 'application/xml' }],
    ['UTF-16 JSON', text, { 'content-type': 'application/json; charset=utf-16' }],
    ['a made-up JSON type', text, { 'content-type': 'application/jsonx' }],
    ['over 1 MB', JSON.stringify({ blob: 'x'.repeat(1_100_000) }), JSON_HEADERS],
  ];
  // JSON.parse keeps the last of duplicated keys: the bad value comes last, so it is the one validated.
  if (firstKey !== undefined) {
    cases.push(['a duplicated key', text.replace(/\}$/, `,${JSON.stringify(firstKey)}:{"dup":[1]}}`), JSON_HEADERS]);
  }
  return cases;
}

type Path = Array<string | number>;

/** The branch of a union schema that fits `value` (or the first object branch). */
function branch(schema: JsonSchema | undefined, value: unknown): JsonSchema | undefined {
  const options = schema?.anyOf ?? schema?.oneOf;
  if (!options) return schema;
  const fits = (s: JsonSchema) => {
    const type = s.type;
    if (value === undefined) return type === 'object';
    if (value === null) return type === 'null';
    if (Array.isArray(value)) return type === 'array';
    if (typeof value === 'object') {
      const tag = (value as Record<string, unknown>).type;
      return type === 'object' && (tag === undefined || s.properties?.type?.const === tag || s.properties?.type?.enum?.includes(tag));
    }
    return type === typeof value || (type === 'integer' && typeof value === 'number');
  };
  return (options as JsonSchema[]).find(fits) ?? (options as JsonSchema[]).find((s) => s.type === 'object');
}

/** A field of a body: where it is, its schema there (if known) and its value in the base (if any). */
interface Field {
  path: Path;
  schema: JsonSchema | undefined;
  value: unknown;
}

/** Every field of `value` and of its schema (properties the value lacks included), depth-first. */
function fields(schema: JsonSchema | undefined, value: unknown, path: Path = [], out: Field[] = []): Field[] {
  if (path.length > 6) return out;
  const s = branch(schema, value);
  const isObject = value !== null && typeof value === 'object' && !Array.isArray(value);
  if (Array.isArray(value)) {
    if (value.length > 0) {
      out.push({ path: [...path, 0], schema: branch(s?.items, value[0]), value: value[0] });
      fields(s?.items, value[0], [...path, 0], out);
    }
    return out;
  }
  if (isObject || (value === undefined && s?.type === 'object')) {
    const keys = new Set([...Object.keys(s?.properties ?? {}), ...Object.keys(isObject ? value : {})]);
    for (const key of keys) {
      const child = isObject ? (value as Record<string, unknown>)[key] : undefined;
      out.push({ path: [...path, key], schema: branch(s?.properties?.[key], child), value: child });
      fields(s?.properties?.[key], child, [...path, key], out);
    }
  }
  return out;
}

/**
 * Bad values made from the field's valid value and its schema: the valid text with a NUL or a
 * lone surrogate in it (which may still match the field's pattern), one past each bound.
 */
function derivedValues(field: Field): Array<[string, unknown]> {
  const out: Array<[string, unknown]> = [];
  const s = field.schema;
  if (typeof field.value === 'string') {
    const middle = Math.ceil(field.value.length / 2);
    out.push(['the valid value with a NUL inside', `${field.value.slice(0, middle)}\u0000${field.value.slice(middle)}`]);
    out.push(['the valid value with a NUL at the end', `${field.value}\u0000`]);
    out.push(['the valid value with a lone surrogate inside', `${field.value.slice(0, middle)}\ud800${field.value.slice(middle)}`]);
  }
  if (typeof s?.maxLength === 'number') out.push([`${s.maxLength + 1} characters`, 'x'.repeat(s.maxLength + 1)]);
  if (typeof s?.maximum === 'number') out.push([`maximum + 1`, s.maximum + 1]);
  if (typeof s?.minimum === 'number') out.push([`minimum - 1`, s.minimum - 1]);
  if (typeof s?.maxItems === 'number' && s.maxItems < 10_000) out.push([`${s.maxItems + 1} items`, new Array(s.maxItems + 1).fill(field.value && Array.isArray(field.value) ? field.value[0] : 'x')]);
  if (typeof s?.maxProperties === 'number') out.push([`${s.maxProperties + 1} properties`, Object.fromEntries(Array.from({ length: s.maxProperties + 1 }, (_, i) => [`k${i}`, 'v']))]);
  return out;
}

/** A copy of `base` with `value` at `path` (objects made along the way), or with the field removed. */
function withValue(base: unknown, path: Path, value: unknown, remove = false): unknown {
  const root = structuredClone(base ?? {}) as Record<string | number, unknown>;
  let node: Record<string | number, unknown> = root;
  for (const key of path.slice(0, -1)) {
    const next = node[key];
    if (next === null || typeof next !== 'object') node[key] = {};
    node = node[key] as Record<string | number, unknown>;
  }
  const last = path[path.length - 1] as string | number;
  if (remove) delete node[last];
  else node[last] = value;
  return root;
}

/** A minimal body for a route with no valid base in the table: its required fields, typed. */
function synthesise(schema: JsonSchema | undefined): unknown {
  const s = branch(schema, undefined) ?? schema;
  if (!s) return undefined;
  if (s.const !== undefined) return s.const;
  if (Array.isArray(s.enum)) return s.enum[0];
  switch (s.type) {
    case 'object':
      return Object.fromEntries((s.required ?? []).map((key: string) => [key, synthesise(s.properties?.[key])]));
    case 'array':
      return s.minItems ? [synthesise(s.items)] : [];
    case 'integer':
    case 'number':
      return s.minimum ?? 1;
    case 'boolean':
      return true;
    default:
      return 'x'.repeat(Math.max(1, s.minLength ?? 1));
  }
}

function fillUrl(template: string, params: Record<string, string>): string {
  return template.replace(/:(\w+)|\*/g, (whole, name: string | undefined) => params[name ?? '*'] ?? whole);
}

function withQuery(url: string, query: Record<string, string>): string {
  const text = Object.entries(query).map(([k, v]) => `${encodeURIComponent(k)}=${v}`).join('&');
  return text ? `${url}?${text}` : url;
}

const encodeQuery = (query: Record<string, string>) =>
  Object.fromEntries(Object.entries(query).map(([k, v]) => [k, encodeURIComponent(v)]));

const describePath = (path: Path) => path.map(String).join('/');

/**
 * The corpus for `routes`. Top-level fields get every bad value; nested fields get the core ones
 * and a seeded sample of the others, which keeps the corpus near a few thousand requests.
 */
export function generateCorpus(routes: CorpusRoute[], seed: number): CorpusRequest[] {
  const random = seededRandom(seed);
  const out: CorpusRequest[] = [];
  for (const route of routes) {
    const hasBody = route.method === 'POST' || route.method === 'PATCH' || route.method === 'PUT';
    const body = route.base.body ?? (route.schemas?.body ? synthesise(route.schemas.body) : undefined);
    // A DELETE with a valid id succeeds whatever else it carries: its cases name an unknown id.
    const params = route.method === 'DELETE' ? { ...route.base.params, ...unknownIds(route.base.params) } : route.base.params;
    const url = fillUrl(route.url, params);
    const query = encodeQuery(route.base.query);
    const target = withQuery(url, query);
    const label = `${route.method} ${route.url}`;
    const send = (what: string, payload: string | undefined, headers: Record<string, string> = payload === undefined ? {} : JSON_HEADERS, to = target) =>
      out.push({ label: `${label}: ${what}`, method: route.method, url: to, payload, headers });

    // Body: every field (from the schema and the base) set to each bad value, removed, or joined by an unknown sibling.
    if (hasBody) {
      for (const field of fields(route.schemas?.body, body)) {
        const path = field.path;
        const values = path.length === 1 ? BAD_VALUES : BAD_VALUES.filter(([name]) => CORE_NESTED.has(name) || random() < 0.15);
        for (const [name, value] of [...values, ...derivedValues(field)]) send(`body/${describePath(path)} = ${name}`, serialise(withValue(body, path, value)));
        send(`body/${describePath(path)} removed`, JSON.stringify(withValue(body, path, undefined, true)));
        if (path.length > 1) send(`unknown field beside body/${describePath(path)}`, JSON.stringify(withValue(body, [...path.slice(0, -1), 'zz_unknown'], 1)));
      }
      send('unknown top-level field', JSON.stringify(withValue(body, ['zz_unknown'], 'x')));
    }
    // Whole bodies: malformed, wrong types, wrong content types, nesting, size. Sent to every
    // route: those without a body must ignore or refuse them, never fail.
    for (const [name, payload, headers] of wholeBodies(body)) {
      if (hasBody || random() < 0.3) send(`body ${name}`, payload, headers);
    }

    // Query: each declared parameter set to each bad text, repeated, and parameters nobody declared.
    for (const name of Object.keys(route.schemas?.query ?? {})) {
      for (const [what, text] of BAD_TEXTS) send(`query ${name} = ${what}`, hasBody ? JSON.stringify(body) : undefined, undefined, withQuery(url, { ...query, [name]: text }));
      send(`query ${name} twice`, hasBody ? JSON.stringify(body) : undefined, undefined, `${target}${target.includes('?') ? '&' : '?'}${name}=1`);
    }
    for (const [what, junk] of [['unknown parameter', 'zz=1'], ['NUL in an unknown parameter', 'zz=%00'], ['NUL in a parameter name', '%00=1'], ['surrogate bytes in a parameter', 'zz=%ED%A0%80']]) {
      send(`query ${what}`, hasBody ? JSON.stringify(body) : undefined, undefined, `${target}${target.includes('?') ? '&' : '?'}${junk}`);
    }

    // Path parameters: each set to each bad id.
    for (const name of Object.keys(route.base.params).filter((p) => route.url.includes(`:${p}`))) {
      for (const [what, id] of BAD_IDS) {
        send(`path ${name} = ${what}`, hasBody ? JSON.stringify(body) : undefined, undefined, withQuery(fillUrl(route.url, { ...params, [name]: id }), query));
      }
    }
  }
  return out;
}

/** Well-formed ids that name nothing, for the route's path parameters. */
function unknownIds(params: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(params).map(([name, value]) => [name, value.replace(/_[0-9a-f]+$/, '_00000000000000000000000000000000')]));
}
