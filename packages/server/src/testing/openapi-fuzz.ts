// Fuzzing from the OpenAPI document (docs/openapi.json). Everything a request is made of comes from
// the document: each operation's path and query parameters and request body schema are translated
// into fast-check arbitraries (a small JSON Schema → fast-check translator for the keywords the
// document uses), then broken in every generic way (wrong types, missing and extra fields, boundary
// and hostile strings and numbers, broken JSON and multipart bodies, percent-encoded junk, duplicate
// query parameters). Nothing here knows an endpoint: values that must exist on the server (clients,
// orders, documents, …) come from the caller, by parameter or property name. Responses are judged
// against the same document: a documented status and code, the error shape, 2xx bodies valid
// against their schema, and no library text.

import fs from "node:fs";
import http from "node:http";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import fc from "fast-check";

// ajv-formats ships CommonJS with a default export object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

// --- The document ---------------------------------------------------------------------------

/** The JSON Schema keywords the document uses (and a few neighbours), loosely typed. */
export interface JsonSchema {
  $ref?: string;
  type?: string | string[];
  nullable?: boolean;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: boolean | JsonSchema;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  exclusiveMaximum?: number;
  items?: JsonSchema;
  minItems?: number;
  maxItems?: number;
  oneOf?: JsonSchema[];
  anyOf?: JsonSchema[];
  allOf?: JsonSchema[];
  description?: string;
  contentMediaType?: string;
}

export interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema: JsonSchema;
}

export interface MediaType {
  schema?: JsonSchema;
}

export interface Operation {
  operationId: string;
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, MediaType> };
  responses: Record<string, { description: string; content?: Record<string, MediaType> }>;
  security?: Record<string, string[]>[];
}

export interface OpenApiDocument {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, JsonSchema> };
}

export type HttpMethod = "GET" | "POST" | "PUT" | "DELETE" | "PATCH";

export interface DocumentedOperation {
  id: string;
  method: HttpMethod;
  /** The path template, e.g. `/v1/partner/orders/{order_id}`. */
  path: string;
  /** Whether the operation requires the partner signature (a non-empty security requirement). */
  signed: boolean;
  operation: Operation;
}

export function loadOpenApiDocument(file: string): OpenApiDocument {
  return JSON.parse(fs.readFileSync(file, "utf8")) as OpenApiDocument;
}

const methods: readonly HttpMethod[] = ["GET", "POST", "PUT", "DELETE", "PATCH"];

/** Every operation of the document, in document order. */
export function documentedOperations(doc: OpenApiDocument): DocumentedOperation[] {
  const out: DocumentedOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of methods) {
      const operation = item[method.toLowerCase()];
      if (operation === undefined) continue;
      const signed = (operation.security ?? []).some((r) => Object.keys(r).length > 0);
      out.push({ id: operation.operationId, method, path, signed, operation });
    }
  }
  return out;
}

function jsonPointer(root: unknown, pointer: string): unknown {
  let at = root;
  for (const raw of pointer.split("/").slice(1)) {
    const key = raw.replace(/~1/g, "/").replace(/~0/g, "~");
    if (at === null || typeof at !== "object" || !(key in at))
      throw new Error(`no ${pointer} in the document`);
    at = (at as Record<string, unknown>)[key];
  }
  return at;
}

/** The schema a `$ref` (to this document) points at, followed until it is not a reference. */
export function resolveSchema(schema: JsonSchema, doc: OpenApiDocument): JsonSchema {
  let s = schema;
  for (let hops = 0; s.$ref !== undefined; hops++) {
    if (!s.$ref.startsWith("#/") || hops > 16) throw new Error(`unsupported $ref ${s.$ref}`);
    s = jsonPointer(doc, s.$ref.slice(1)) as JsonSchema;
  }
  return s;
}

/** allOf as one schema: properties merged key by key, required lists joined. */
function mergeAllOf(schemas: readonly JsonSchema[], doc: OpenApiDocument): JsonSchema {
  const out: JsonSchema = {};
  for (const part of schemas.map((p) => resolveSchema(p, doc))) {
    const merged = part.allOf === undefined ? part : mergeAllOf(part.allOf, doc);
    const properties = { ...out.properties };
    for (const [k, v] of Object.entries(merged.properties ?? {})) properties[k] = { ...properties[k], ...v };
    Object.assign(out, merged, {
      properties,
      required: [...(out.required ?? []), ...(merged.required ?? [])],
    });
  }
  delete out.allOf;
  return out;
}

function plainSchema(schema: JsonSchema, doc: OpenApiDocument): JsonSchema {
  const s = resolveSchema(schema, doc);
  return s.allOf === undefined ? s : mergeAllOf([s], doc);
}

/** The JSON types a schema allows ("integer" for whole numbers); empty when it says nothing. */
function allowedTypes(schema: JsonSchema, doc: OpenApiDocument): Set<string> {
  const s = plainSchema(schema, doc);
  const out = new Set<string>();
  for (const alt of s.anyOf ?? s.oneOf ?? []) for (const t of allowedTypes(alt, doc)) out.add(t);
  for (const t of Array.isArray(s.type) ? s.type : s.type === undefined ? [] : [s.type]) out.add(t);
  if (s.nullable === true) out.add("null");
  for (const v of s.enum ?? []) out.add(jsonType(v));
  return out;
}

// --- JSON text with raw tokens and values resolved when sent -----------------------------------

/** JSON text written as is: numbers JSON.stringify cannot write (1e309, -0, 30 digits), deep nests. */
export class RawJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** A value only known when the request is sent (a single-use token, for instance), by name. */
export class Live {
  readonly name: string;
  constructor(name: string) {
    this.name = name;
  }
}

/** Replaces each Live in `value` by what `resolve` gives for it and the object holding it. */
export function resolveLive(
  value: unknown,
  resolve: (live: Live, holder: Record<string, unknown> | null) => unknown,
  holder: Record<string, unknown> | null = null,
): unknown {
  if (value instanceof Live) return resolve(value, holder);
  if (Array.isArray(value)) return value.map((v) => resolveLive(v, resolve, null));
  if (value !== null && typeof value === "object" && !(value instanceof RawJson)) {
    const object = value as Record<string, unknown>;
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(object)) {
      Object.defineProperty(out, k, {
        value: resolveLive(v, resolve, object),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return out;
  }
  return value;
}

/** JSON text of a value that may hold RawJson tokens; keys written as they are (`__proto__` too). */
export function jsonText(value: unknown): string {
  if (value instanceof RawJson) return value.text;
  if (value instanceof Live) throw new Error(`unresolved live value ${value.name}`);
  if (Array.isArray(value)) return `[${value.map((v) => jsonText(v)).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>).filter(([, v]) => v !== undefined);
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${jsonText(v)}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

function jsonType(value: unknown): string {
  if (value instanceof RawJson) {
    try {
      return jsonType(JSON.parse(value.text));
    } catch {
      return "invalid";
    }
  }
  if (value === null) return "null";
  if (Array.isArray(value)) return "array";
  if (typeof value === "number") return Number.isInteger(value) ? "integer" : "number";
  return typeof value;
}

// --- Strings ---------------------------------------------------------------------------------

const asciiUnit = fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c));
/** Any code point but NUL and the surrogates: valid text, most of it outside ASCII. */
const codePointUnit = fc
  .integer({ min: 1, max: 0x10ffff })
  .filter((c) => c < 0xd800 || c > 0xdfff)
  .map((c) => String.fromCodePoint(c));
const textUnit = fc.oneof({ weight: 4, arbitrary: asciiUnit }, { weight: 1, arbitrary: codePointUnit });

/** Length as JSON Schema counts it: code points. */
export function codePoints(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/** Numbers written as text, where a text field meets an integer column or parser. */
const numericTexts = [
  "0",
  "-0",
  "1",
  "-1",
  "007",
  "1.0",
  "1e3",
  "1E+3",
  "0x10",
  "+1",
  " 1",
  "1 ",
  "2147483647",
  "2147483648",
  "-2147483649",
  "4294967296",
  "9007199254740993",
  "9223372036854775807",
  "9223372036854775808",
  "99999999999999999999999999999999999999",
  "1e309",
  "-1e309",
  "1e-400",
  "NaN",
  "Infinity",
  "١٢٣",
  "１２３",
  "1_000",
];

/**
 * Strings meant to hurt: empty, NUL, unpaired surrogates, bidirectional and zero-width controls,
 * SQL and JSON metacharacters, template and path syntax, long runs of one and four bytes, numbers
 * as text. None of them contains the library markers the checks look for.
 */
export const hostileStrings: readonly string[] = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "\ud800",
  "x\udc00",
  "\ud83d",
  "\udfff\ud800",
  "\u202emoc.elpmaxe",
  "\u0645\u0631\u062d\u0628\u0627\u200f",
  "\u200b",
  "\u200d\u200c\ufeff",
  "\u2066abc\u2069",
  "\u2028\u2029",
  "\u0085",
  "\r\n",
  "\t",
  "\u0007\u001b[31m",
  "' OR '1'='1",
  "'; DROP TABLE clients; --",
  '"; SELECT pg_sleep(5); --',
  "1; SELECT 1",
  "$1",
  "E'\\x00'",
  "%",
  "_",
  "\\",
  '"',
  "'",
  "`",
  "\\u0000",
  '{"a":1}',
  "[]",
  "{}",
  "null",
  "true",
  "$" + "{7*7}",
  "{{7*7}}",
  "<script>alert(1)</script>",
  "../../etc/passwd",
  "..",
  ".",
  "/",
  "?",
  "#",
  "&",
  "=",
  "+",
  "%2F",
  "%00",
  "CON",
  "İı",
  "ß",
  "ﬁ",
  "ＡＢＣ",
  "𝟙𝟚𝟛",
  "e\u0301",
  "a".repeat(256),
  "é".repeat(256),
  "\u{1F600}".repeat(256),
  "x".repeat(4096),
  ...numericTexts,
];

// --- Schema → valid values ---------------------------------------------------------------------

export interface TranslateOptions {
  doc: OpenApiDocument;
  /**
   * Values to mix in (3 to 1) with what the schema allows, for a property or parameter name or a
   * schema: values that exist on the server (ids, references), or text the schema cannot describe
   * (a decimal string, a phone number).
   */
  hint?: (name: string | undefined, schema: JsonSchema) => fc.Arbitrary<unknown> | undefined;
}

/** Bounds for strings and arrays the document leaves unbounded. */
const unboundedLengthMax = 300;
const unboundedItemsMax = 5;

function textArbitrary(min: number, max: number): fc.Arbitrary<string> {
  const fits = (s: string) => codePoints(s) >= min && codePoints(s) <= max;
  return fc.oneof(
    {
      weight: 8,
      arbitrary: fc.string({ unit: textUnit, minLength: min, maxLength: Math.min(max, min + 40) }),
    },
    { weight: 1, arbitrary: fc.string({ unit: textUnit, minLength: max, maxLength: max }) },
    { weight: 1, arbitrary: fc.string({ unit: textUnit, minLength: min, maxLength: min }) },
    { weight: 1, arbitrary: fc.constantFrom(...numericTexts, "x".repeat(min)).filter(fits) },
  );
}

const dateRange = { min: new Date(Date.UTC(1900, 0, 1)), max: new Date(Date.UTC(2100, 11, 31)) };
const isoDate = fc.date({ ...dateRange, noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10));
/**
 * Date-times that RFC 3339 writes but that are at or past the edge of what a service can hold: year
 * 0000 (PostgreSQL has no year 0), a leap second (no Date holds it), offsets that carry an instant
 * into year 0000 or 10000 (JavaScript writes year 10000 as +010000). Offered among valid values, so
 * that a request otherwise valid carries them to the code behind the schema.
 */
const rfc3339Extremes = [
  "0000-01-01T00:00:00Z",
  "0001-01-01T00:00:00Z",
  "0001-01-01T00:00:00+00:01",
  "9999-12-31T23:59:59Z",
  "9999-12-31T23:59:59-00:01",
  "2026-06-30T23:59:60Z",
];
const isoDateTime = fc.oneof(
  { weight: 19, arbitrary: fc.date({ ...dateRange, noInvalidDate: true }).map((d) => d.toISOString()) },
  { weight: 1, arbitrary: fc.constantFrom(...rfc3339Extremes) },
);

function stringArbitrary(s: JsonSchema): fc.Arbitrary<string> {
  const min = s.minLength ?? 0;
  const max = s.maxLength ?? Math.max(min, unboundedLengthMax);
  const fits = (v: string) => codePoints(v) >= min && codePoints(v) <= max;
  if (s.pattern !== undefined) {
    return fc.stringMatching(new RegExp(s.pattern, "u"), { maxLength: max }).filter(fits);
  }
  switch (s.format) {
    case "date":
      return isoDate;
    case "date-time":
      return isoDateTime;
    case "email":
      return fc.emailAddress().filter(fits);
    case "uuid":
      return fc.uuid();
    default:
      return textArbitrary(min, max);
  }
}

/**
 * Datetimes between `min` and `max`, in the forms a caller may send: with Z, an offset, or none; a
 * date alone; microseconds. One in twenty is one of the RFC 3339 extremes instead.
 */
export function datetimeTexts(min: Date, max: Date): fc.Arbitrary<string> {
  const within = fc
    .tuple(
      fc.date({ min, max, noInvalidDate: true }),
      fc.constantFrom(
        (iso: string) => iso,
        (iso: string) => iso.slice(0, 10),
        (iso: string) => iso.slice(0, 19),
        (iso: string) => `${iso.slice(0, 19)}+04:00`,
        (iso: string) => `${iso.slice(0, 10)} ${iso.slice(11, 16)}`,
        (iso: string) => `${iso.slice(0, 23)}456Z`,
      ),
    )
    .map(([d, form]) => form(d.toISOString()));
  return fc.oneof(
    { weight: 19, arbitrary: within },
    { weight: 1, arbitrary: fc.constantFrom(...rfc3339Extremes) },
  );
}

/** Decimal strings: mostly valid amounts of every size and notation, and the tricky ones. */
export const decimalTexts: fc.Arbitrary<string> = fc.oneof(
  {
    weight: 6,
    arbitrary: fc
      .tuple(fc.nat({ max: 5000 }), fc.nat({ max: 99_999_999 }), fc.integer({ min: 0, max: 8 }))
      .map(([i, f, places]) =>
        places === 0 ? String(i) : `${i}.${String(f).padStart(8, "0").slice(0, places)}`,
      ),
  },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.integer({ min: 1, max: 999 }), fc.integer({ min: -8, max: 6 }))
      .map(([m, e]) => `${m}e${e}`),
  },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      "0.0001",
      "0.001",
      "0.01",
      "0.00000001",
      "1",
      "10",
      "1000000000000000000",
      "1000000000000000000.00000001",
      "999999999999999999.99999999",
      "0",
      "-0",
      "-1",
      "0.000000001",
      "1.000000001",
      "1.100000000000",
      "1e-9",
      "1E-8",
      "1e+3",
      "+1",
      ".5",
      "5.",
      "00.1",
      "1e30",
      "1e31",
      "1e309",
      "1e-400",
      "1e2147483648",
      "1e-2147483648",
      " 1",
      "1 ",
      "1,5",
      "١",
      "0x10",
      "Infinity",
      "NaN",
      "1e",
      "e1",
      "-",
      "",
      "1".repeat(128),
      `0.${"0".repeat(125)}1`,
    ),
  },
);

function integerArbitrary(s: JsonSchema): fc.Arbitrary<number> {
  const min = s.minimum ?? (s.exclusiveMinimum === undefined ? -(2 ** 31) : s.exclusiveMinimum + 1);
  const max = s.maximum ?? (s.exclusiveMaximum === undefined ? 2 ** 31 - 1 : s.exclusiveMaximum - 1);
  return fc.oneof(
    { weight: 4, arbitrary: fc.integer({ min, max }) },
    { weight: 1, arbitrary: fc.constantFrom(min, max) },
  );
}

/** Arbitrary values valid against `schema`, with the caller's hints mixed in for `name`. */
export function schemaArbitrary(
  schema: JsonSchema,
  options: TranslateOptions,
  name?: string,
  depth = 0,
): fc.Arbitrary<unknown> {
  if (depth > 12) throw new Error("schema nested deeper than 12 levels");
  const s = plainSchema(schema, options.doc);
  const own = ownArbitrary(s, options, depth);
  const hinted = options.hint?.(name, s);
  return hinted === undefined
    ? own
    : fc.oneof({ weight: 3, arbitrary: hinted }, { weight: 1, arbitrary: own });
}

function ownArbitrary(s: JsonSchema, options: TranslateOptions, depth: number): fc.Arbitrary<unknown> {
  const alternatives = s.oneOf ?? s.anyOf;
  if (alternatives !== undefined) {
    return fc.oneof(...alternatives.map((a) => schemaArbitrary(a, options, undefined, depth + 1)));
  }
  if ("const" in s) return fc.constant(s.const);
  if (s.enum !== undefined) return fc.constantFrom(...s.enum);
  const types = Array.isArray(s.type) ? [...s.type] : s.type === undefined ? [] : [s.type];
  if (s.nullable === true) types.push("null");
  if (types.length === 0) return fc.jsonValue({ maxDepth: 2 });
  return fc.oneof(...types.map((t) => typedArbitrary(t, s, options, depth)));
}

function typedArbitrary(
  type: string,
  s: JsonSchema,
  options: TranslateOptions,
  depth: number,
): fc.Arbitrary<unknown> {
  switch (type) {
    case "null":
      return fc.constant(null);
    case "boolean":
      return fc.boolean();
    case "integer":
      return integerArbitrary(s);
    case "number":
      return fc.double({
        min: s.minimum ?? -1e12,
        max: s.maximum ?? 1e12,
        noNaN: true,
        noDefaultInfinity: true,
      });
    case "string":
      return stringArbitrary(s);
    case "array": {
      const item = schemaArbitrary(s.items ?? {}, options, undefined, depth + 1);
      const min = s.minItems ?? 0;
      const max = s.maxItems ?? Math.max(min, unboundedItemsMax);
      return fc.oneof(
        { weight: 4, arbitrary: fc.array(item, { minLength: min, maxLength: Math.min(max, min + 4) }) },
        { weight: 1, arbitrary: fc.array(item, { minLength: max, maxLength: max }) },
      );
    }
    case "object": {
      const properties = s.properties ?? {};
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, p] of Object.entries(properties)) model[k] = schemaArbitrary(p, options, k, depth + 1);
      for (const k of s.required ?? []) model[k] ??= fc.jsonValue({ maxDepth: 1 });
      return fc.record(model, { requiredKeys: (s.required ?? []).filter((k) => k in model) });
    }
    default:
      throw new Error(`unsupported schema type ${type}`);
  }
}

// --- Schema → invalid values -------------------------------------------------------------------

export interface Mutant<T = unknown> {
  /** What was broken, e.g. `body.amount: wrong type (number)`. */
  label: string;
  value: T;
}

const deepArray = (n: number) => new RawJson("[".repeat(n) + "]".repeat(n));
const deepObject = (n: number) => new RawJson('{"a":'.repeat(n) + "1" + "}".repeat(n));

/** One value of every JSON type, and the numbers JSON.stringify cannot write. */
const valuesOfEveryType: readonly unknown[] = [
  null,
  true,
  false,
  0,
  -1,
  1.5,
  2 ** 53,
  new RawJson("-0"),
  new RawJson("1e309"),
  new RawJson("-1e309"),
  new RawJson("1E400"),
  new RawJson("1e-400"),
  new RawJson("123456789012345678901234567890"),
  new RawJson("0.1e1"),
  new RawJson("1.0"),
  "",
  "x",
  "1",
  [],
  [null],
  [{}],
  ["x", 1],
  {},
  { "": null },
  new RawJson('{"__proto__":{"polluted":1}}'),
  deepArray(40),
  deepObject(40),
];

function fitsTypes(value: unknown, types: Set<string>): boolean {
  const t = jsonType(value);
  return types.has(t) || (t === "integer" && types.has("number"));
}

/**
 * Datetimes ISO 8601 and JSON Schema's date-time allow, at the edges of what PostgreSQL and
 * JavaScript take: offsets past PostgreSQL's ±15:59, instants in years 99 and 10000 once moved to
 * UTC, a leap second. Offered to every field whose format or pattern takes them; a 5xx is a find.
 */
const edgeDatetimes = [
  "2026-01-02T03:04:05-23:59",
  "2026-01-02T03:04:05+16:00",
  "9999-12-31T23:59:59-23:59",
  "0100-01-01T00:00:00+23:59",
  ...rfc3339Extremes,
];

const invalidDates = [
  "2026-02-30",
  "2026-13-01",
  "2026-00-10",
  "0000-01-01",
  "9999-12-31",
  "2026-1-1",
  "20260101",
  "2026-01-01T00:00:00Z",
  "2026-01-01\n",
  "-2026-01-01",
  "+002026-01-01",
  "２０２６-01-01",
];
const invalidEmails = [
  "a@",
  "@b.c",
  "a@b",
  "a b@c.de",
  "a@b.c\n",
  "a@@b.cd",
  `${"a".repeat(65)}@example.com`,
  `a@${"b".repeat(64)}.com`,
  `${"a".repeat(60)}@${"b".repeat(60)}.${"c".repeat(60)}.${"d".repeat(60)}.${"e".repeat(60)}.com`,
  "\u202eexample@x.com",
];

/** Values `schema` refuses (or that sit on its edge), each with what makes it so. */
export function invalidArbitrary(schema: JsonSchema, doc: OpenApiDocument): fc.Arbitrary<Mutant> {
  const s = plainSchema(schema, doc);
  const types = allowedTypes(s, doc);
  const choices: fc.Arbitrary<Mutant>[] = [];
  const wrong = valuesOfEveryType.filter((v) => types.size > 0 && !fitsTypes(v, types));
  if (wrong.length > 0) {
    choices.push(
      fc.constantFrom(...wrong).map((value) => ({ label: `wrong type (${jsonType(value)})`, value })),
    );
  }
  const stringy = [s, ...(s.anyOf ?? s.oneOf ?? [])]
    .map((x) => plainSchema(x, doc))
    .filter((x) => {
      const t = x.type;
      return t === "string" || (Array.isArray(t) && t.includes("string"));
    });
  for (const str of stringy) {
    choices.push(fc.constantFrom(...hostileStrings).map((value) => ({ label: "hostile string", value })));
    if (str.maxLength !== undefined) {
      const n = str.maxLength + 1;
      choices.push(
        fc.constantFrom("a", "é", "\u{1F600}").map((c) => ({ label: `${n} characters`, value: c.repeat(n) })),
      );
    }
    if (str.minLength !== undefined && str.minLength > 0) {
      choices.push(fc.constant({ label: "shorter than minLength", value: "a".repeat(str.minLength - 1) }));
    }
    if (str.pattern !== undefined) {
      const matching = fc.stringMatching(new RegExp(str.pattern, "u"), { maxLength: 64 });
      choices.push(
        fc
          .tuple(matching, fc.constantFrom("\n", " ", "\u0000", "x", "é", "%", "\u200b"), fc.boolean())
          .map(([m, extra, before]) => ({
            label: "pattern mismatch",
            value: before ? extra + m : m + extra,
          })),
        matching.map((m) => ({ label: "pattern mismatch (case)", value: m.toUpperCase() })),
      );
    }
    if (str.format === "date" || str.format === "date-time") {
      choices.push(fc.constantFrom(...invalidDates).map((value) => ({ label: "invalid date", value })));
    }
    const edges = edgeDatetimes.filter(
      (v) =>
        str.format === "date-time" || (str.pattern !== undefined && new RegExp(str.pattern, "u").test(v)),
    );
    if (edges.length > 0) {
      choices.push(fc.constantFrom(...edges).map((value) => ({ label: "edge datetime", value })));
    }
    if (str.format === "email") {
      choices.push(fc.constantFrom(...invalidEmails).map((value) => ({ label: "invalid e-mail", value })));
    }
  }
  const enumerated =
    s.enum ?? [s, ...(s.anyOf ?? s.oneOf ?? [])].flatMap((x) => plainSchema(x, doc).enum ?? []);
  const enumStrings = enumerated.filter((v): v is string => typeof v === "string");
  if (enumStrings.length > 0) {
    choices.push(
      fc
        .tuple(
          fc.constantFrom(...enumStrings),
          fc.constantFrom(
            (v: string) => v.toUpperCase(),
            (v: string) => ` ${v}`,
            (v: string) => `${v}\u0000`,
            (v: string) => `${v}\n`,
            (v: string) => v.slice(0, -1),
            (v: string) => `${v},${v}`,
            (v: string) => v.replace(/_/g, "-"),
          ),
        )
        .map(([v, f]) => ({ label: "not in enum", value: f(v) }))
        .filter((m) => !enumStrings.includes(m.value)),
    );
  }
  if (types.has("integer") || types.has("number")) {
    const edges: unknown[] = [1.5, 2 ** 53 + 2, new RawJson("1e309"), new RawJson("-0"), new RawJson("1e2")];
    if (s.minimum !== undefined) edges.push(s.minimum - 1);
    if (s.maximum !== undefined) edges.push(s.maximum + 1);
    choices.push(fc.constantFrom(...edges).map((value) => ({ label: "number out of bounds", value })));
  }
  if (types.has("array")) {
    const item = s.items ?? {};
    const max = s.maxItems ?? unboundedItemsMax * 20;
    if ((s.minItems ?? 0) > 0) choices.push(fc.constant({ label: "too few items", value: [] }));
    choices.push(
      fc
        .array(schemaArbitrary(item, { doc }), { minLength: max + 1, maxLength: max + 1 })
        .map((value) => ({ label: `${max + 1} items`, value })),
      invalidArbitrary(item, doc).map((m) => ({ label: `item: ${m.label}`, value: [m.value] })),
    );
  }
  if (choices.length === 0) {
    return fc.constantFrom(...valuesOfEveryType).map((value) => ({ label: "any value", value }));
  }
  return fc.oneof(...choices);
}

/** Property names that should never do anything but be ignored or refused. */
const extraKeys = [
  "__proto__",
  "constructor",
  "prototype",
  "toString",
  "hasOwnProperty",
  "",
  " ",
  "a".repeat(300),
  "x-extra",
  "id",
  "partner_id",
  "status",
  "balance",
];

/**
 * A valid `value` of `schema` broken in one place: the whole replaced by an invalid value, a
 * property removed, set to an invalid value, broken deeper down, or joined by an extra property.
 */
export function mutateValue(
  value: unknown,
  schema: JsonSchema,
  doc: OpenApiDocument,
  where = "body",
): fc.Arbitrary<Mutant> {
  const s = plainSchema(schema, doc);
  const choices: fc.Arbitrary<Mutant>[] = [
    invalidArbitrary(s, doc).map((m) => ({ label: `${where}: ${m.label}`, value: m.value })),
  ];
  const objectSchema = [s, ...(s.anyOf ?? s.oneOf ?? [])]
    .map((x) => plainSchema(x, doc))
    .find((x) => x.properties !== undefined);
  if (
    objectSchema?.properties !== undefined &&
    value !== null &&
    typeof value === "object" &&
    !Array.isArray(value)
  ) {
    const object = value as Record<string, unknown>;
    const properties = objectSchema.properties;
    const keys = Object.keys(properties);
    choices.push(
      fc.constantFrom(...keys).chain((k) =>
        fc.oneof(
          fc.constant({ label: `${where}.${k}: missing`, value: without(object, k) }),
          mutateValue(object[k], properties[k]!, doc, `${where}.${k}`).map((m) => ({
            label: m.label,
            value: withKey(object, k, m.value),
          })),
        ),
      ),
      fc.tuple(fc.constantFrom(...extraKeys), fc.constantFrom(...valuesOfEveryType)).map(([k, v]) => ({
        label: `${where}: extra property ${JSON.stringify(k.slice(0, 20))}`,
        value: withKey(object, k, v),
      })),
    );
  }
  if (Array.isArray(value) && value.length > 0 && s.items !== undefined) {
    const items = s.items;
    choices.push(
      fc.nat({ max: value.length - 1 }).chain((i) =>
        mutateValue(value[i], items, doc, `${where}[${i}]`).map((m) => ({
          label: m.label,
          value: value.map((v, j) => (j === i ? m.value : v)),
        })),
      ),
    );
  }
  return fc.oneof(...choices);
}

function without(object: Record<string, unknown>, key: string): Record<string, unknown> {
  const out = { ...object };
  delete out[key];
  return out;
}

/** A copy with `key` set as an own property (even `__proto__`). */
function withKey(object: Record<string, unknown>, key: string, value: unknown): Record<string, unknown> {
  const out = { ...object };
  Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  return out;
}

// --- Requests --------------------------------------------------------------------------------

export type DraftBody =
  | { kind: "none" }
  /** JSON, written when sent (Live values resolved then); `edit` turns the text into other bytes. */
  | { kind: "json"; value: unknown; edit?: (text: string) => Buffer }
  | { kind: "bytes"; bytes: Buffer };

export interface RequestDraft {
  /** "valid", or what was broken. */
  label: string;
  valid: boolean;
  method: HttpMethod;
  /** Path and query exactly as sent. */
  target: string;
  body: DraftBody;
  /** The Content-Type header: the body's own when undefined, none when null. */
  contentType?: string | null;
}

export interface RequestOptions extends TranslateOptions {
  /** Targets harvested from responses (download links, say), by operation id: valid as given. */
  targets?: (operationId: string) => readonly string[];
  /** File contents for binary fields of multipart bodies, valid and not. */
  files?: fc.Arbitrary<Mutant<Buffer>>;
  /**
   * Bodies that were accepted before, by operation id: valid bodies are also made from them,
   * each property kept or generated anew, so that more of them get past the rules a schema
   * cannot state (and reach the database).
   */
  examples?: (operationId: string) => readonly Record<string, unknown>[];
}

/** Request schemas as Ajv sees them, to keep a varied example valid. */
const requestAjv = new Ajv2020({ strict: false, allowUnionTypes: true });
addFormats(requestAjv);
const compiledRequestSchemas = new WeakMap<JsonSchema, ValidateFunction>();

function validAgainst(schema: JsonSchema, value: unknown): boolean {
  let v = compiledRequestSchemas.get(schema);
  if (v === undefined) {
    v = requestAjv.compile(schema as object);
    compiledRequestSchemas.set(schema, v);
  }
  return v(value);
}

/** The same text made new, in the same shape: an e-mail gets a prefix, digits new digits. */
function varied(text: string, token: string, digits: string): string {
  if (text.includes("@")) return `${token}.${text}`;
  if (/^\+[0-9]{6,}$/.test(text)) return text.slice(0, -digits.length) + digits;
  return `${text}-${token}`;
}

/**
 * Valid bodies made from accepted ones: each property kept or generated anew from the schema; or
 * some or all string properties varied (where the variation still fits its schema), so that fields that
 * must be unique are, and the body gets past the rules a schema cannot state, into the database.
 */
function fromExamples(
  examples: readonly Record<string, unknown>[],
  schema: JsonSchema,
  options: TranslateOptions,
): fc.Arbitrary<unknown> {
  const s = plainSchema(schema, options.doc);
  const properties = s.properties ?? {};
  const blended = fc.constantFrom(...examples).chain((example) => {
    const model: Record<string, fc.Arbitrary<unknown>> = {};
    for (const [k, p] of Object.entries(properties)) {
      const fresh = schemaArbitrary(p, options, k);
      model[k] =
        k in example
          ? fc.oneof({ weight: 3, arbitrary: fc.constant(example[k]) }, { weight: 1, arbitrary: fresh })
          : fresh;
    }
    const requiredKeys = Object.keys(model).filter((k) => k in example || (s.required ?? []).includes(k));
    return fc.record(model, { requiredKeys });
  });
  const keys = Object.keys(properties);
  const renewed = fc
    .tuple(
      fc.constantFrom(...examples),
      fc.stringMatching(/^[a-z0-9]{8}$/),
      fc.integer({ min: 0, max: 9999 }),
      fc.oneof(
        fc.constant(keys),
        fc.uniqueArray(fc.constantFrom(...keys), { minLength: 1, maxLength: keys.length }),
      ),
    )
    .map(([example, token, n, chosen]) => {
      const out: Record<string, unknown> = { ...example };
      for (const [k, v] of Object.entries(example)) {
        const p = properties[k];
        if (typeof v !== "string" || p === undefined || !chosen.includes(k)) continue;
        const candidate = varied(v, token, String(n).padStart(4, "0"));
        if (validAgainst(plainSchema(p, options.doc), candidate)) out[k] = candidate;
      }
      return out;
    });
  return fc.oneof(blended, renewed);
}

/** Whether a target's path has the shape of the template: its literal segments, one segment per parameter. */
export function matchesTemplate(template: string, target: string): boolean {
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const pattern = template
    .split(/(\{[^}]+\})/)
    .map((piece) => (piece.startsWith("{") ? "[^/]+" : piece.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("");
  return new RegExp(`^${pattern}$`).test(path);
}

/**
 * Percent-encoding of any string, one code point at a time; a lone surrogate becomes the three
 * bytes it would have in WTF-8 (invalid UTF-8, as a careless client would send it).
 */
export function percentEncode(s: string): string {
  let out = "";
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) {
      const bytes = [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)];
      out += bytes.map((b) => `%${b.toString(16).toUpperCase()}`).join("");
    } else {
      out += encodeURIComponent(ch);
    }
  }
  return out;
}

function asText(value: unknown): string {
  return typeof value === "string" ? value : value instanceof RawJson ? value.text : JSON.stringify(value);
}

/** Percent-encoded junk for a path segment, sent as is. */
const pathJunk = [
  "%",
  "%Z",
  "%ZZ",
  "%0",
  "%00",
  "%C0%AF",
  "%ED%A0%80",
  "%FF",
  "%FE%FF",
  "%E2%80%AE",
  "%E2%80%8B",
  "%2F",
  "a%2Fb",
  "%2f..%2f",
  "%2e%2e",
  "%2e",
  "..",
  ".",
  "%252F",
  "%u0041",
  "%%",
  "a%20b",
  "%0A",
  "%0D%0A",
  "%09",
  "+",
  "%2B",
  "%3F",
  "%23",
  "%26",
  ";",
  ";a=b",
  "%3B",
  "~",
  "!$'()*,",
  "a".repeat(513),
  "%41".repeat(200),
  "1".repeat(300),
];

/** Texts an integer query parameter must not take for a number. */
const looseIntegers = [
  "1e3",
  "1.0",
  "1.5",
  "0x10",
  "+1",
  " 1",
  "1 ",
  "01",
  "-0",
  "",
  "1e309",
  "99999999999999999999",
  "NaN",
  "Infinity",
  "true",
  "1,2",
  "１",
];

function pathParameters(op: DocumentedOperation): Parameter[] {
  return (op.operation.parameters ?? []).filter((p) => p.in === "path");
}

function queryParameters(op: DocumentedOperation): Parameter[] {
  return (op.operation.parameters ?? []).filter((p) => p.in === "query");
}

function fillPath(template: string, values: Record<string, string>): string {
  return template.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? "");
}

function queryText(pairs: readonly (readonly [string, string])[]): string {
  return pairs.length === 0
    ? ""
    : `?${pairs.map(([k, v]) => (v === "\u0000none" ? k : `${k}=${v}`)).join("&")}`;
}

type Pairs = [string, string][];

function validQuery(op: DocumentedOperation, options: RequestOptions): fc.Arbitrary<Pairs> {
  const params = queryParameters(op);
  if (params.length === 0) return fc.constant([]);
  const model: Record<string, fc.Arbitrary<unknown>> = {};
  for (const p of params) model[p.name] = schemaArbitrary(p.schema, options, p.name);
  return fc
    .record(model, { requiredKeys: params.filter((p) => p.required === true).map((p) => p.name) })
    .map((values) => {
      const pairs: Pairs = [];
      for (const [name, v] of Object.entries(values)) {
        for (const one of Array.isArray(v) ? v : [v])
          pairs.push([percentEncode(name), percentEncode(asText(one))]);
      }
      return pairs;
    });
}

function validPath(op: DocumentedOperation, options: RequestOptions): fc.Arbitrary<Record<string, string>> {
  const model: Record<string, fc.Arbitrary<string>> = {};
  for (const p of pathParameters(op)) {
    model[p.name] = schemaArbitrary(p.schema, options, p.name)
      .map((v) => percentEncode(asText(v)))
      // An empty segment is another route: broken paths are the mutations' business.
      .filter((v) => v !== "");
  }
  return fc.record(model);
}

function queryMutation(
  op: DocumentedOperation,
  options: RequestOptions,
  pairs: Pairs,
): fc.Arbitrary<Mutant<Pairs>> {
  const params = queryParameters(op);
  const names = params.map((p) => p.name);
  const choices: fc.Arbitrary<Mutant<Pairs>>[] = [
    fc
      .tuple(
        fc.constantFrom(...names, "x", "__proto__", "constructor", "page[size]", "a".repeat(300)),
        fc.constantFrom(...hostileStrings),
      )
      .map(([name, v]) => ({
        label: `query ${name.slice(0, 20)}: hostile value`,
        value: [...pairs.filter(([k]) => k !== name), [percentEncode(name), percentEncode(v)]],
      })),
    fc.tuple(fc.constantFrom(...names, "x"), fc.constantFrom(...pathJunk)).map(([name, junk]) => ({
      label: `query ${name}: percent-encoded junk`,
      value: [...pairs.filter(([k]) => k !== name), [name, junk]],
    })),
    fc.constantFrom(...names, "x").map((name) => ({
      label: `query ${name}: without "="`,
      value: [...pairs.filter(([k]) => k !== name), [name, "\u0000none"]],
    })),
    fc.integer({ min: 2, max: 200 }).map((n) => ({
      label: `${n} unknown query parameters`,
      value: [...pairs, ...Array.from({ length: n }, (_, i): [string, string] => [`p${i}`, String(i)])],
    })),
  ];
  for (const p of params) {
    const s = plainSchema(p.schema, options.doc);
    choices.push(
      schemaArbitrary(p.schema, options, p.name).map((v) => ({
        label: `query ${p.name}: given twice`,
        value: [
          ...pairs,
          [p.name, percentEncode(asText(Array.isArray(v) ? (v[0] ?? "") : v))],
          [p.name, "1"],
        ],
      })),
      invalidArbitrary(s, options.doc).map((m) => ({
        label: `query ${p.name}: ${m.label}`,
        value: [
          ...pairs.filter(([k]) => k !== p.name),
          ...(Array.isArray(m.value) ? m.value : [m.value]).map((v): [string, string] => [
            p.name,
            percentEncode(asText(v)),
          ]),
        ],
      })),
      fc.constantFrom("[]", "[a]", "[0]", ".x").map((suffix) => ({
        label: `query ${p.name}${suffix}`,
        value: [...pairs.filter(([k]) => k !== p.name), [`${p.name}${suffix}`, "1"]],
      })),
    );
    if (allowedTypes(s, options.doc).has("integer")) {
      choices.push(
        fc.constantFrom(...looseIntegers).map((v) => ({
          label: `query ${p.name}: loose integer ${JSON.stringify(v)}`,
          value: [...pairs.filter(([k]) => k !== p.name), [p.name, percentEncode(v)]],
        })),
      );
    }
    if (p.required === true) {
      choices.push(
        fc.constant({ label: `query ${p.name}: missing`, value: pairs.filter(([k]) => k !== p.name) }),
      );
    }
  }
  return fc.oneof(...choices);
}

function pathMutation(
  op: DocumentedOperation,
  options: RequestOptions,
  values: Record<string, string>,
): fc.Arbitrary<Mutant<Record<string, string>>> {
  const params = pathParameters(op);
  return fc.constantFrom(...params).chain((p) =>
    fc.oneof(
      fc.constantFrom(...pathJunk).map((junk) => ({
        label: `path ${p.name}: junk ${junk.slice(0, 24)}`,
        value: { ...values, [p.name]: junk },
      })),
      fc.constantFrom(...hostileStrings).map((v) => ({
        label: `path ${p.name}: hostile string`,
        value: { ...values, [p.name]: percentEncode(v) },
      })),
      invalidArbitrary(p.schema, options.doc).map((m) => ({
        label: `path ${p.name}: ${m.label}`,
        value: { ...values, [p.name]: percentEncode(asText(m.value)) },
      })),
      fc.constant({ label: `path ${p.name}: empty`, value: { ...values, [p.name]: "" } }),
      fc
        .constantFrom(
          (v: string) => v.toUpperCase(),
          (v: string) => v.toLowerCase(),
          (v: string) => `${v}%20`,
          (v: string) => `0${v}`,
          (v: string) => `${v}/`,
          (v: string) => `${v}.json`,
        )
        .map((f) => ({
          label: `path ${p.name}: altered existing value`,
          value: { ...values, [p.name]: f(values[p.name] ?? "") },
        })),
    ),
  );
}

/** Changes to a harvested target: a character, a parameter dropped, doubled or added. */
function targetMutation(target: string): fc.Arbitrary<Mutant<string>> {
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  const pieces = q === -1 ? [] : target.slice(q + 1).split("&");
  return fc.oneof(
    fc
      .tuple(fc.nat({ max: target.length - 1 }), fc.constantFrom("A", "_", "-", "%41", "0", ""))
      .map(([i, c]) => ({
        label: `target altered at ${i}`,
        value: target.slice(0, i) + c + target.slice(i + 1),
      })),
    fc.nat({ max: Math.max(pieces.length - 1, 0) }).map((i) => ({
      label: "target without a query parameter",
      value: queryLess(
        path,
        pieces.filter((_, j) => j !== i),
      ),
    })),
    fc.nat({ max: Math.max(pieces.length - 1, 0) }).map((i) => ({
      label: "target with a query parameter twice",
      value: queryLess(path, [...pieces, pieces[i] ?? "x=1"]),
    })),
    fc
      .constantFrom("expires=99999999999", "signature=", "x=%00", "expires=1e3", "expires=-1")
      .map((extra) => ({
        label: `target with ${extra} added`,
        value: queryLess(path, [...pieces, extra]),
      })),
  );
}

function queryLess(path: string, pieces: readonly string[]): string {
  return pieces.length === 0 ? path : `${path}?${pieces.join("&")}`;
}

// JSON bodies broken below the level of values: the bytes themselves.
const notJson = [
  "{",
  "}",
  "[",
  '{"a":}',
  "{'a':1}",
  "{a:1}",
  "[1,]",
  '{"a":1,}',
  "NaN",
  "undefined",
  "nul",
  "tru",
  '"\\u12"',
  '"\\x41"',
  '{"a":"\u0001"}',
  "1 2",
  "{}{}",
  "-",
  "01",
  "1.",
  ".1",
  "+1",
  "0x1",
  "Infinity",
  '"unterminated',
  '{"a"',
  " ",
  "\t\n",
  "/* c */ {}",
];
const topLevelValues = ["null", "true", "0", "-0", "1e309", '"x"', "[]", "[{}]", '"\\ud800"'];
const invalidUtf8: readonly (readonly number[])[] = [
  [0xff],
  [0xc3, 0x28],
  [0xc0, 0xaf],
  [0xed, 0xa0, 0x80],
  [0xf4, 0x90, 0x80, 0x80],
  [0xe2, 0x82],
  [0xf8, 0x88, 0x80, 0x80, 0x80],
];
const jsonContentTypes = [
  "text/plain",
  "application/x-www-form-urlencoded",
  "application/json; charset=utf-16",
  "application/json; charset=latin1",
  "APPLICATION/JSON",
  "application/json ; charset=utf-8",
  "application/jsonx",
  "application/vnd.api+json",
  "",
  "multipart/form-data; boundary=x",
  "application/json, text/html",
  'application/json; charset="utf-8"',
  "application/json; charset=utf-8; charset=latin1",
];

export interface RawEdit {
  label: string;
  edit: (text: string) => Buffer;
  contentType?: string | null;
}

/** Edits of the valid JSON text: truncated, extended, re-encoded, replaced. */
function rawJsonEdits(schema: JsonSchema, doc: OpenApiDocument, bodyBytesMax: number): fc.Arbitrary<RawEdit> {
  const s = plainSchema(schema, doc);
  const keys = Object.keys(s.properties ?? {});
  const b = (t: string) => Buffer.from(t, "utf8");
  const choices: fc.Arbitrary<RawEdit>[] = [
    fc.constant({ label: "empty body", edit: () => Buffer.alloc(0) }),
    fc.constantFrom(...notJson).map((t) => ({ label: `not JSON: ${JSON.stringify(t)}`, edit: () => b(t) })),
    fc.constantFrom(...topLevelValues).map((t) => ({ label: `top-level ${t}`, edit: () => b(t) })),
    fc
      .nat()
      .map((n) => ({ label: "truncated", edit: (t: string) => b(t.slice(0, n % Math.max(t.length, 1))) })),
    fc.constantFrom("x", "}", ",", " {}", "\u0000", "//c", "]").map((g) => ({
      label: `trailing ${JSON.stringify(g)}`,
      edit: (t: string) => b(t + g),
    })),
    fc.constant({ label: "byte order mark", edit: (t: string) => b(`\ufeff${t}`) }),
    fc.constant({ label: "UTF-16", edit: (t: string) => Buffer.from(t, "utf16le") }),
    fc.constantFrom(...invalidUtf8).map((bytes) => ({
      label: `invalid UTF-8 ${bytes.map((x) => x.toString(16)).join(" ")}`,
      edit: (t: string) => {
        const at = t.indexOf(':"');
        const cut = at === -1 ? t.length : at + 2;
        return Buffer.concat([b(t.slice(0, cut)), Buffer.from(bytes), b(t.slice(cut))]);
      },
    })),
    fc.constantFrom(33, 1000, 100_000).map((n) => ({
      label: `nested ${n} deep`,
      edit: () => b("[".repeat(n) + "]".repeat(n)),
    })),
    fc.constantFrom(33, 1000).map((n) => ({
      label: `objects nested ${n} deep`,
      edit: () => b(deepObject(n).text),
    })),
    fc.constantFrom(...jsonContentTypes).map((contentType) => ({
      label: `content type ${JSON.stringify(contentType)}`,
      edit: b,
      contentType,
    })),
    fc.constant({ label: "no content type", edit: b, contentType: null }),
    fc.constant({
      label: "one byte over the body limit",
      edit: (t: string) => b(t.padEnd(bodyBytesMax + 1, " ")),
    }),
    fc.constant({
      label: "a string just under the body limit",
      edit: () => b(JSON.stringify({ x: "a".repeat(bodyBytesMax - 64) })),
    }),
  ];
  if (keys.length > 0) {
    choices.push(
      fc
        .tuple(fc.constantFrom(...keys), fc.constantFrom(...valuesOfEveryType), fc.boolean())
        .map(([k, v, first]) => ({
          label: `duplicate key ${k} (${first ? "bad value first" : "bad value last"})`,
          edit: (t: string) => {
            const bad = `${JSON.stringify(k)}:${jsonText(v)}`;
            if (!t.startsWith("{") || t === "{}") return b(`{${bad}}`);
            return b(first ? `{${bad},${t.slice(1)}` : `${t.slice(0, -1)},${bad}}`);
          },
        })),
    );
  }
  return fc.oneof(...choices);
}

// --- Multipart -------------------------------------------------------------------------------

export interface Part {
  name: string;
  filename?: string;
  contentType?: string;
  /** Header lines added as they are. */
  headers?: string[];
  data: Buffer;
}

/** A multipart/form-data body, byte for byte. */
export function multipartBytes(parts: readonly Part[], boundary: string): Buffer {
  const chunks: Buffer[] = [];
  for (const p of parts) {
    const disposition =
      p.filename === undefined
        ? `form-data; name="${p.name}"`
        : `form-data; name="${p.name}"; filename="${p.filename}"`;
    const lines = [`Content-Disposition: ${disposition}`];
    if (p.contentType !== undefined) lines.push(`Content-Type: ${p.contentType}`);
    lines.push(...(p.headers ?? []));
    chunks.push(
      Buffer.from(`--${boundary}\r\n${lines.join("\r\n")}\r\n\r\n`, "utf8"),
      p.data,
      Buffer.from("\r\n"),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return Buffer.concat(chunks);
}

function isBinary(schema: JsonSchema, doc: OpenApiDocument): boolean {
  const s = plainSchema(schema, doc);
  return s.format === "binary" || s.contentMediaType !== undefined;
}

const boundary = "----fuzz-boundary-q7Zp3xW9";

const hostileFilenames = [
  "../../etc/passwd",
  "..\\..\\boot.ini",
  "a\u0000.pdf",
  'a".pdf',
  "a\r\nX-Injected: 1",
  "",
  "x".repeat(300),
  "\u202efdp.exe",
  "имя.pdf",
  "%00.pdf",
];

/** Valid multipart bodies from the form schema, and broken ones. */
function multipartDrafts(
  op: DocumentedOperation,
  schema: JsonSchema,
  options: RequestOptions,
): {
  valid: fc.Arbitrary<Mutant<Buffer>>;
  broken: fc.Arbitrary<Mutant<{ bytes: Buffer; contentType?: string | null }>>;
} {
  const s = plainSchema(schema, options.doc);
  const properties = s.properties ?? {};
  const required = new Set(s.required ?? []);
  const files: fc.Arbitrary<Mutant<Buffer>> =
    options.files ??
    fc.uint8Array({ maxLength: 256 }).map((u) => ({ label: "bytes", value: Buffer.from(u) }));
  const model: Record<string, fc.Arbitrary<Part | null>> = {};
  for (const [name, p] of Object.entries(properties)) {
    const part: fc.Arbitrary<Part> = isBinary(p, options.doc)
      ? files.map((f) => ({
          name,
          filename: `${name}.bin`,
          contentType: "application/octet-stream",
          data: f.value,
        }))
      : schemaArbitrary(p, options, name).map((v) => ({ name, data: Buffer.from(asText(v), "utf8") }));
    model[name] = required.has(name) ? part : fc.option(part, { nil: null });
  }
  const validParts = fc.record(model).map((r) => Object.values(r).filter((p): p is Part => p !== null));
  const valid = validParts.map((parts) => ({ label: "valid", value: multipartBytes(parts, boundary) }));
  const names = Object.keys(properties);
  const fileNames = names.filter((n) => isBinary(properties[n]!, options.doc));
  const textNames = names.filter((n) => !fileNames.includes(n));
  const ct = `multipart/form-data; boundary=${boundary}`;
  const withParts = (label: string, f: (parts: Part[]) => Part[]) =>
    validParts.map((parts) => ({
      label,
      value: { bytes: multipartBytes(f(parts), boundary), contentType: ct },
    }));
  const broken: fc.Arbitrary<Mutant<{ bytes: Buffer; contentType?: string | null }>>[] = [
    fc
      .constantFrom(...names)
      .chain((n) => withParts(`part ${n} missing`, (parts) => parts.filter((p) => p.name !== n))),
    fc
      .constantFrom(...names)
      .chain((n) =>
        withParts(`part ${n} twice`, (parts) => [...parts, ...parts.filter((p) => p.name === n)]),
      ),
    withParts("every file part as a text field", (parts) =>
      parts.map((p) => (fileNames.includes(p.name) ? { name: p.name, data: p.data } : p)),
    ),
    withParts("every text part as a file", (parts) =>
      parts.map((p) =>
        textNames.includes(p.name) ? { ...p, filename: "x.txt", contentType: "text/plain" } : p,
      ),
    ),
    fc.integer({ min: 3, max: 12 }).chain((n) =>
      withParts(`${n} extra file parts`, (parts) => [
        ...parts,
        ...Array.from({ length: n }, (_, i) => ({
          name: `f${i}`,
          filename: "f.pdf",
          data: Buffer.from("%PDF-1.7"),
        })),
      ]),
    ),
    fc
      .integer({ min: 10, max: 40 })
      .chain((n) =>
        withParts(`${n} extra text fields`, (parts) => [
          ...parts,
          ...Array.from({ length: n }, (_, i) => ({ name: `t${i}`, data: Buffer.from("x") })),
        ]),
      ),
    fc
      .constantFrom(...hostileFilenames)
      .chain((filename) =>
        withParts(`file name ${JSON.stringify(filename.slice(0, 20))}`, (parts) =>
          parts.map((p) => (p.filename === undefined ? p : { ...p, filename })),
        ),
      ),
    fc
      .constantFrom("image/png", "application/pdf", "text/html", "", "x/y; a=\u0000", "image/svg+xml")
      .chain((type) =>
        withParts(`part content type ${JSON.stringify(type)}`, (parts) =>
          parts.map((p) => (p.filename === undefined ? p : { ...p, contentType: type })),
        ),
      ),
    fc
      .constantFrom(...textNames)
      .chain((n) =>
        fc
          .constantFrom(...hostileStrings, "x".repeat(2000))
          .chain((v) =>
            withParts(`part ${n}: hostile text`, (parts) => [
              ...parts.filter((p) => p.name !== n),
              { name: n, data: Buffer.from(v, "utf8") },
            ]),
          ),
      ),
    fc
      .constantFrom(...textNames)
      .chain((n) =>
        fc
          .constantFrom(...invalidUtf8)
          .chain((bytes) =>
            withParts(`part ${n}: invalid UTF-8`, (parts) => [
              ...parts.filter((p) => p.name !== n),
              { name: n, data: Buffer.from(bytes) },
            ]),
          ),
      ),
    fc
      .integer({ min: 9, max: 40 })
      .chain((n) =>
        withParts(`${n} header lines in a part`, (parts) =>
          parts.map((p, i) =>
            i === 0 ? { ...p, headers: Array.from({ length: n }, (_, j) => `X-H${j}: v`) } : p,
          ),
        ),
      ),
    withParts("a part header line of 20000 bytes", (parts) =>
      parts.map((p, i) => (i === 0 ? { ...p, headers: [`X-Long: ${"v".repeat(20_000)}`] } : p)),
    ),
    withParts("field names with quotes and NUL", (parts) =>
      parts.map((p) => ({ ...p, name: `${p.name}"\u0000` })),
    ),
    validParts.chain((parts) =>
      fc
        .constantFrom<[string, (b: Buffer) => Buffer, string | null]>(
          ["no closing boundary", (x) => x.subarray(0, x.length - boundary.length - 6), ct],
          ["truncated in the middle", (x) => x.subarray(0, Math.floor(x.length / 2)), ct],
          ["LF line ends", (x) => Buffer.from(x.toString("latin1").replace(/\r\n/g, "\n"), "latin1"), ct],
          ["boundary in the header differs", (x) => x, "multipart/form-data; boundary=other"],
          ["no boundary parameter", (x) => x, "multipart/form-data"],
          ["quoted boundary", (x) => x, `multipart/form-data; boundary="${boundary}"`],
          ["boundary of 200 characters", (x) => x, `multipart/form-data; boundary=${"b".repeat(200)}`],
          ["empty body", () => Buffer.alloc(0), ct],
          [
            "preamble and epilogue",
            (x) => Buffer.concat([Buffer.from("junk\r\n"), x, Buffer.from("junk")]),
            ct,
          ],
          ["multipart/mixed", (x) => x, `multipart/mixed; boundary=${boundary}`],
          ["sent as JSON", () => Buffer.from('{"type":"government_id"}'), "application/json"],
          ["sent as application/octet-stream", (x) => x, "application/octet-stream"],
          ["no content type", (x) => x, null],
          ["garbage", () => Buffer.from("--\r\n\r\n--", "latin1"), ct],
          [
            "part without Content-Disposition",
            () => Buffer.from(`--${boundary}\r\nX: y\r\n\r\nz\r\n--${boundary}--\r\n`),
            ct,
          ],
        )
        .map(([label, f, contentType]) => ({
          label,
          value: { bytes: f(multipartBytes(parts, boundary)), contentType },
        })),
    ),
  ];
  void op;
  return { valid, broken: fc.oneof(...broken) };
}

// --- One operation's requests --------------------------------------------------------------------

/** How many of each kind of request: valid ones, and broken ones of each part of a request. */
export interface RequestMix {
  valid: number;
  path: number;
  query: number;
  body: number;
  raw: number;
}

export const defaultMix: RequestMix = { valid: 8, path: 2, query: 2, body: 5, raw: 3 };

/**
 * Requests for `op`: valid ones from its parameters and body schema (with the caller's hints and
 * harvested targets), and broken ones, in the proportions of `mix`.
 */
export function requestArbitrary(
  op: DocumentedOperation,
  options: RequestOptions,
  bodyBytesMax: number,
  mix: RequestMix = defaultMix,
): fc.Arbitrary<RequestDraft> {
  const content = op.operation.requestBody?.content ?? {};
  const jsonSchema = content["application/json"]?.schema;
  const formSchema = content["multipart/form-data"]?.schema;
  const harvested = options.targets?.(op.id) ?? [];

  const target: fc.Arbitrary<{ path: Record<string, string>; query: Pairs }> = fc.record({
    path: validPath(op, options),
    query: validQuery(op, options),
  });
  const make = (
    label: string,
    valid: boolean,
    t: string,
    body: DraftBody,
    contentType?: string | null,
  ): RequestDraft => ({
    label,
    valid,
    method: op.method,
    target: t,
    body,
    ...(contentType === undefined ? {} : { contentType }),
  });
  const url = (p: Record<string, string>, q: Pairs) => fillPath(op.path, p) + queryText(q);

  const examples = options.examples?.(op.id) ?? [];
  const json =
    jsonSchema === undefined
      ? undefined
      : examples.length === 0
        ? schemaArbitrary(jsonSchema, options)
        : fc.oneof(
            { weight: 1, arbitrary: schemaArbitrary(jsonSchema, options) },
            { weight: 3, arbitrary: fromExamples(examples, jsonSchema, options) },
          );
  const form = formSchema === undefined ? undefined : multipartDrafts(op, formSchema, options);
  const formType = `multipart/form-data; boundary=${boundary}`;
  const validBody: fc.Arbitrary<{ body: DraftBody; contentType?: string }> =
    json !== undefined
      ? json.map((value) => ({ body: { kind: "json", value } }))
      : form !== undefined
        ? form.valid.map((m) => ({ body: { kind: "bytes", bytes: m.value }, contentType: formType }))
        : fc.constant({ body: { kind: "none" } });

  const validRequest = fc
    .tuple(target, validBody)
    .map(([t, b]) => make("valid", true, url(t.path, t.query), b.body, b.contentType));
  const choices: fc.WeightedArbitrary<RequestDraft>[] = [];
  if (harvested.length > 0) {
    choices.push({
      weight: mix.valid,
      arbitrary: fc.oneof(
        validRequest,
        fc.constantFrom(...harvested).map((t) => make("valid (harvested target)", true, t, { kind: "none" })),
      ),
    });
    choices.push({
      weight: mix.path,
      arbitrary: fc
        .constantFrom(...harvested)
        .chain((t) => targetMutation(t))
        .map((m) => make(m.label, false, m.value, { kind: "none" })),
    });
  } else {
    choices.push({ weight: mix.valid, arbitrary: validRequest });
  }
  if (pathParameters(op).length > 0) {
    choices.push({
      weight: mix.path,
      arbitrary: fc
        .tuple(target, validBody)
        .chain(([t, b]) =>
          pathMutation(op, options, t.path).map((m) =>
            make(m.label, false, url(m.value, t.query), b.body, b.contentType),
          ),
        ),
    });
  }
  choices.push({
    weight: mix.query,
    arbitrary: fc
      .tuple(target, validBody)
      .chain(([t, b]) =>
        queryMutation(op, options, t.query).map((m) =>
          make(m.label, false, url(t.path, m.value), b.body, b.contentType),
        ),
      ),
  });
  if (jsonSchema !== undefined && json !== undefined) {
    choices.push(
      {
        weight: mix.body,
        arbitrary: fc
          .tuple(target, json)
          .chain(([t, v]) =>
            mutateValue(v, jsonSchema, options.doc).map((m) =>
              make(m.label, false, url(t.path, t.query), { kind: "json", value: m.value }),
            ),
          ),
      },
      {
        weight: mix.raw,
        arbitrary: fc
          .tuple(target, json, rawJsonEdits(jsonSchema, options.doc, bodyBytesMax))
          .map(([t, v, e]) =>
            make(
              `raw body: ${e.label}`,
              false,
              url(t.path, t.query),
              { kind: "json", value: v, edit: e.edit },
              e.contentType,
            ),
          ),
      },
    );
  } else if (form !== undefined) {
    choices.push({
      weight: mix.body + mix.raw,
      arbitrary: fc
        .tuple(target, form.broken)
        .map(([t, m]) =>
          make(
            `multipart: ${m.label}`,
            false,
            url(t.path, t.query),
            { kind: "bytes", bytes: m.value.bytes },
            m.value.contentType,
          ),
        ),
    });
  } else {
    // No body documented: one sent anyway must change nothing.
    choices.push({
      weight: 1,
      arbitrary: fc
        .tuple(target, fc.constantFrom('{"a":1}', "x", "[]", "\u0000"))
        .map(([t, text]) =>
          make(
            "a body where none is documented",
            false,
            url(t.path, t.query),
            { kind: "bytes", bytes: Buffer.from(text) },
            "application/json",
          ),
        ),
    });
  }
  return fc.oneof(...choices);
}

// --- Sending ---------------------------------------------------------------------------------

export interface SentRequest {
  method: string;
  target: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface RawResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** The exact bytes and headers of a draft, Live values resolved. */
export function materialise(
  draft: RequestDraft,
  resolve: (live: Live, holder: Record<string, unknown> | null) => unknown,
): { body: Buffer; contentType: string | null } {
  const b = draft.body;
  if (b.kind === "none") return { body: Buffer.alloc(0), contentType: draft.contentType ?? null };
  if (b.kind === "bytes") return { body: b.bytes, contentType: draft.contentType ?? null };
  const text = jsonText(resolveLive(b.value, resolve));
  const body = b.edit === undefined ? Buffer.from(text, "utf8") : b.edit(text);
  return { body, contentType: draft.contentType === undefined ? "application/json" : draft.contentType };
}

/** HTTP/1.1 over keep-alive sockets to one listener, sending targets and bodies byte for byte. */
export class RawHttpClient {
  readonly #agent: http.Agent;
  readonly #host: string;
  readonly #port: number;

  constructor(host: string, port: number, sockets: number) {
    this.#host = host;
    this.#port = port;
    this.#agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  }

  send(request: SentRequest, timeoutMs: number): Promise<RawResponse> {
    return new Promise((resolve, reject) => {
      const req = http.request(
        {
          host: this.#host,
          port: this.#port,
          method: request.method,
          path: request.target,
          headers: { ...request.headers, "content-length": String(request.body.length) },
          agent: this.#agent,
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (c: Buffer) => chunks.push(c));
          res.on("end", () => {
            clearTimeout(timer);
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) });
          });
          res.on("error", (err) => {
            clearTimeout(timer);
            reject(err);
          });
        },
      );
      const timer = setTimeout(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
      req.on("error", (err) => {
        clearTimeout(timer);
        reject(err);
      });
      req.end(request.body);
    });
  }

  close(): void {
    this.#agent.destroy();
  }
}

// --- Checks ----------------------------------------------------------------------------------

/**
 * Text that only a library writes: parser messages, Ajv's phrasing, Fastify's error codes, stack
 * frames, database errors. A partner must never read any of it.
 */
export const libraryMarkers: readonly string[] = [
  "Unexpected token",
  "Unexpected end of JSON",
  "Unexpected non-whitespace",
  "is not valid JSON",
  "in JSON at position",
  "at position",
  "Bad control character",
  "Bad escaped character",
  "Unterminated string",
  "Expected property name",
  "Expected ',' or",
  "Maximum call stack",
  "FST_",
  "must be",
  "must have",
  "must match",
  "must NOT",
  "SyntaxError",
  "TypeError",
  "RangeError",
  "ReferenceError",
  "URIError",
  "node_modules",
  "node:internal",
  "    at ",
  "duplicate key value",
  "violates",
  "invalid input syntax",
  "out of range for type",
  "syntax error at",
  "Kysely",
  "PGlite",
  "busboy",
  "Busboy",
];

/**
 * A body with its opaque random tokens (file links, signatures, quote tokens) taken out, so a
 * marker is looked for in words only. A token is a run of 16 or more base64url characters with
 * a lowercase letter in it; Fastify's codes (FST_ERR_…) are upper case and stay. Without this,
 * a random link such as `…EWFST_2Bjt…` reads as library text about once in a few thousand bodies.
 */
export function proseOf(text: string): string {
  return text.replace(/[A-Za-z0-9_-]{16,}/g, (run) => (/[a-z]/.test(run) ? "\u2026" : run));
}

export interface ExchangeCheck {
  op: DocumentedOperation;
  sent: SentRequest;
  response: RawResponse;
}

/** Judges responses against the document: status, code, error shape, 2xx schema, library text. */
export class ResponseChecker {
  readonly #ajv: Ajv2020;
  readonly #compiled = new Map<string, ValidateFunction>();

  constructor(doc: OpenApiDocument) {
    this.#ajv = new Ajv2020({ strict: false, allErrors: true, allowUnionTypes: true });
    addFormats(this.#ajv);
    this.#ajv.addFormat("binary", true);
    this.#ajv.addSchema({ ...doc, $id: "urn:counterpart:openapi" } as object);
  }

  #validator(op: DocumentedOperation, status: string, media: string): ValidateFunction {
    const pointer = [
      "paths",
      op.path,
      op.method.toLowerCase(),
      "responses",
      status,
      "content",
      media,
      "schema",
    ]
      .map((p) => p.replace(/~/g, "~0").replace(/\//g, "~1"))
      .join("/");
    let v = this.#compiled.get(pointer);
    if (v === undefined) {
      v = this.#ajv.compile({ $ref: `urn:counterpart:openapi#/${pointer}` });
      this.#compiled.set(pointer, v);
    }
    return v;
  }

  /** What is wrong with `response` to `sent` (nothing: an empty list). */
  check({ op, sent, response }: ExchangeCheck): string[] {
    const problems: string[] = [];
    const status = response.status;
    const text = response.body.toString("utf8");
    if (status >= 500) problems.push(`${status}: a server error`);
    if (op.signed && status === 401 && !hasDotSegment(sent.target)) {
      problems.push("401 for a correctly signed request");
    }
    // A target that is not of this operation's shape (an empty or an extra segment) asks for
    // no operation: 404 is the documented answer to that (docs/errors.md).
    const elsewhere = !matchesTemplate(op.path, sent.target) && status === 404;
    // A target that is not a path (origin-form, from `/`) is HTTP that no route reads: 400 Bad
    // Request, before any operation (docs/errors.md, bad_request).
    const unreadable = !sent.target.startsWith("/") && status === 400;
    const documented = op.operation.responses[String(status)];
    if (documented === undefined && !elsewhere && !unreadable)
      problems.push(`status ${status} is not documented for ${op.id}`);
    const sentText = `${sent.target}\n${sent.body.toString("utf8")}`;
    const prose = proseOf(text);
    for (const marker of libraryMarkers) {
      if (prose.includes(marker) && !sentText.includes(marker))
        problems.push(`library text in the body: ${JSON.stringify(marker)}`);
    }
    const type = String(response.headers["content-type"] ?? "");
    if (status >= 400) {
      if (!type.startsWith("application/json"))
        problems.push(`error with content type ${JSON.stringify(type)}`);
      problems.push(...errorShapeProblems(status, text));
    }
    if (documented === undefined) return problems;
    const declared = Object.keys(documented.content ?? {});
    if (declared.length === 0) {
      if (response.body.length > 0)
        problems.push(`${status} is documented without a body, got ${response.body.length} bytes`);
      return problems;
    }
    const media = declared.find((m) => type.startsWith(m));
    if (media === undefined) {
      problems.push(`content type ${JSON.stringify(type)} is not among ${declared.join(", ")}`);
      return problems;
    }
    if (media === "application/json") {
      let body: unknown;
      try {
        body = JSON.parse(text);
      } catch {
        problems.push("a body that is not JSON");
        return problems;
      }
      const validate = this.#validator(op, String(status), media);
      if (!validate(body)) {
        const errors = (validate.errors ?? [])
          .slice(0, 3)
          .map((e) => `${e.instancePath || "/"} ${e.message}`);
        problems.push(`${status} body does not match the documented schema: ${errors.join("; ")}`);
      }
    }
    return problems;
  }
}

/**
 * Whether the path has a `.` or `..` segment, raw or percent-encoded: intermediaries may resolve
 * it, so the target is not one a signature can pin, and refusing it (401) is legitimate.
 */
export function hasDotSegment(target: string): boolean {
  const q = target.indexOf("?");
  const path = q === -1 ? target : target.slice(0, q);
  return path.split("/").some((segment) => /^(?:\.|%2e){1,2}$/i.test(segment));
}

function errorShapeProblems(status: number, text: string): string[] {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return ["an error body that is not JSON"];
  }
  if (body === null || typeof body !== "object" || Array.isArray(body))
    return ["an error body that is not an object"];
  const { code, msg, msg_detail: detail } = body as Record<string, unknown>;
  const problems: string[] = [];
  const keys = Object.keys(body).sort().join(",");
  if (keys !== "code,msg,msg_detail") problems.push(`error keys ${keys}`);
  if (!Number.isInteger(code)) problems.push("error code is not an integer");
  if (typeof msg !== "string" || msg === "") problems.push("error msg is not a non-empty string");
  if (detail !== null && typeof detail !== "object")
    problems.push("msg_detail is neither null, an array nor an object");
  if (status === 422) {
    if (code !== 422) problems.push(`422 with code ${String(code)}`);
    if (!Array.isArray(detail) || detail.length === 0)
      problems.push("422 msg_detail is not a non-empty array");
    else {
      for (const e of detail as unknown[]) {
        const entry = e as Record<string, unknown> | null;
        const ok =
          entry !== null &&
          typeof entry === "object" &&
          Array.isArray(entry.loc) &&
          (entry.loc as unknown[]).every((l) => typeof l === "string" || Number.isInteger(l)) &&
          typeof entry.msg === "string" &&
          typeof entry.type === "string";
        if (!ok) problems.push(`422 msg_detail entry ${JSON.stringify(e).slice(0, 200)}`);
      }
    }
  } else if (status !== 400 && status !== 409 && code !== status) {
    problems.push(`${status} with code ${String(code)}`);
  }
  return problems;
}
