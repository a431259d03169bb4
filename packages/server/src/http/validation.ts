// Request validation: two Ajv instances (bodies are never coerced, so a JSON number is never taken
// for a decimal string; query and path values arrive as text and are coerced), and the mapping of
// Ajv's errors onto the FastAPI/Pydantic 422 shape the contract uses: {loc, msg, type}.

import type { FieldError } from "@counterpart/protocol";
import { Ajv, type ErrorObject, type Options } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";

// ajv-formats ships CommonJS with a default export object.
const addFormats = addFormatsModule as unknown as ((ajv: Ajv, formats?: string[]) => Ajv) & {
  get: (format: "date-time") => { validate: (text: string) => boolean };
};

// The earliest and latest instants a date-time field may name (UTC years 1 to 9999).
const firstInstant = Date.parse("0001-01-01T00:00:00Z");
const lastInstant = Date.parse("9999-12-31T23:59:59.999Z");
const rfc3339 = addFormats.get("date-time").validate;

/**
 * JSON Schema's date-time (RFC 3339, an offset required), narrowed to what the service can hold:
 * an instant JavaScript represents (RFC 3339 takes a leap second, 23:59:60, which no Date holds:
 * a 500 on an admin price until 30 November), in UTC years 1 to 9999 (PostgreSQL has no year 0, and
 * JavaScript writes year 10000 as +010000, which PostgreSQL refuses). Anything else is the field's
 * usual 422, "Input should be a valid datetime".
 */
export function isInstant(text: string): boolean {
  if (!rfc3339(text)) return false;
  const ms = Date.parse(text);
  return ms >= firstInstant && ms <= lastInstant;
}

// verbose: errors carry their parentSchema, where a rule's own 422 `type` and `msg` (x-error) live.
const common: Options = {
  allErrors: true,
  strict: false,
  useDefaults: true,
  removeAdditional: false,
  verbose: true,
};
const bodyAjv = new Ajv({ ...common, coerceTypes: false });
const textAjv = new Ajv({ ...common, coerceTypes: "array" });
for (const ajv of [bodyAjv, textAjv]) {
  addFormats(ajv, ["date", "email", "uuid"]);
  ajv.addFormat("date-time", { type: "string", validate: isInstant });
  // Pydantic-style keywords that carry the 422 `type` and `msg` of a custom rule.
  ajv.addKeyword({ keyword: "x-error", schemaType: "object" });
}

export const validatorCompiler: FastifySchemaCompiler<unknown> = ({ schema, httpPart }) => {
  if (httpPart === "body")
    return bodyAjv.compile(schema as object) as ReturnType<FastifySchemaCompiler<unknown>>;
  const validate = textAjv.compile(schema as object);
  const integers = integerProperties(schema as JsonSchema);
  if (integers.length === 0) return validate as ReturnType<FastifySchemaCompiler<unknown>>;
  // Ajv coerces text to an integer with Number(): "1e3", "0x10", " 16", "+5", "1.0" would all pass.
  // Only decimal digits, with a minus sign for the schema's minimum to refuse, are an integer here;
  // the value is checked as text before Ajv coerces it.
  const strict = (data: unknown): boolean => {
    const refused = looseIntegers(integers, data);
    const ok = validate(data);
    if (refused.length === 0) {
      strict.errors = validate.errors ?? null;
      return ok;
    }
    const others = (validate.errors ?? []).filter(
      (e) => !refused.some((r) => r.instancePath === e.instancePath),
    );
    strict.errors = [...refused, ...others];
    return false;
  };
  strict.errors = null as ErrorObject[] | null;
  return strict as unknown as ReturnType<FastifySchemaCompiler<unknown>>;
};

interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  minimum?: number;
  maximum?: number;
}

const integerText = /^-?[0-9]+$/;

const isInteger = (s: JsonSchema | undefined): boolean =>
  s !== undefined &&
  (s.type === "integer" ||
    (Array.isArray(s.type) && s.type.includes("integer")) ||
    (s.anyOf ?? []).some(isInteger));

interface IntegerProperty {
  name: string;
  list: boolean;
  /** The schema's own bounds, within what a JavaScript number holds exactly. */
  minimum: number;
  maximum: number;
}

/** The integer schema itself: the property's, its items', or an integer alternative of anyOf. */
function integerSchema(s: JsonSchema | undefined): JsonSchema | undefined {
  if (s === undefined) return undefined;
  if (s.type === "integer" || (Array.isArray(s.type) && s.type.includes("integer"))) return s;
  return (s.anyOf ?? []).map(integerSchema).find((i) => i !== undefined);
}

/** The top-level properties of a query, path or header schema that take integers (or lists of them). */
function integerProperties(schema: JsonSchema): IntegerProperty[] {
  const out: IntegerProperty[] = [];
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    const list = !isInteger(prop) && isInteger(prop.items);
    const own = integerSchema(list ? prop.items : prop);
    if (own === undefined) continue;
    out.push({
      name,
      list,
      minimum: Math.max(own.minimum ?? Number.MIN_SAFE_INTEGER, Number.MIN_SAFE_INTEGER),
      maximum: Math.min(own.maximum ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER),
    });
  }
  return out;
}

/**
 * An Ajv-shaped error for every text value of an integer property that is not plain digits (type),
 * or whose digits no JavaScript number holds exactly (maximum or minimum: Ajv would read
 * "99999999999999999999" as 1e20, an integer to it, and the database would then be asked for the
 * bigint "1e+20", a 500 until 30 November).
 */
function looseIntegers(integers: IntegerProperty[], data: unknown): ErrorObject[] {
  if (data === null || typeof data !== "object") return [];
  const errors: ErrorObject[] = [];
  for (const { name, list, minimum, maximum } of integers) {
    const value = (data as Record<string, unknown>)[name];
    const values = Array.isArray(value) ? value : [value];
    values.forEach((v, i) => {
      if (typeof v !== "string") return;
      const pointer = `/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      const instancePath = list && Array.isArray(value) ? `${pointer}/${i}` : pointer;
      if (!integerText.test(v)) {
        errors.push({
          keyword: "type",
          instancePath,
          schemaPath: `#/properties/${name}/type`,
          params: { type: "integer" },
        });
        return;
      }
      const n = Number(v);
      if (Number.isSafeInteger(n)) return;
      const over = n > 0;
      errors.push({
        keyword: over ? "maximum" : "minimum",
        instancePath,
        schemaPath: `#/properties/${name}/${over ? "maximum" : "minimum"}`,
        params: over ? { comparison: "<=", limit: maximum } : { comparison: ">=", limit: minimum },
      });
    });
  }
  return errors;
}

const partLoc: Record<string, string> = {
  body: "body",
  querystring: "query",
  params: "path",
  headers: "header",
};

function quoted(values: readonly unknown[]): string {
  const q = values.map((v) => `'${String(v)}'`);
  return q.length <= 1 ? (q[0] ?? "") : `${q.slice(0, -1).join(", ")} or ${q.at(-1)}`;
}

function pointerToLoc(pointer: string): (string | number)[] {
  if (pointer === "") return [];
  return pointer
    .slice(1)
    .split("/")
    .map((p) => p.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((p) => (/^(0|[1-9][0-9]*)$/.test(p) ? Number(p) : p));
}

/**
 * The 422 of a value of the wrong type. `nullable`: the field also takes null, and the message names
 * it beside the type, as the reference does ("integer or null"). Only a JSON body can carry a null;
 * a query or path value is text, so there the message stays the type's own.
 */
function typeError(expected: string, inText: boolean, nullable = false): { type: string; msg: string } {
  const orNull = nullable && !inText ? " or null" : "";
  switch (expected) {
    case "string":
      return { type: "string_type", msg: `Input should be a valid string${orNull}` };
    case "integer":
      return inText
        ? {
            type: "int_parsing",
            msg: "Input should be a valid integer, unable to parse string as an integer",
          }
        : { type: "int_type", msg: `Input should be a valid integer${orNull}` };
    case "number":
      return { type: "float_type", msg: `Input should be a valid number${orNull}` };
    case "boolean":
      return inText
        ? { type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" }
        : { type: "bool_type", msg: `Input should be a valid boolean${orNull}` };
    case "array":
      return { type: "list_type", msg: `Input should be a valid list${orNull}` };
    case "object":
      return {
        type: "model_attributes_type",
        msg: `Input should be a valid dictionary or object to extract fields from${orNull ? ", or null" : ""}`,
      };
    case "null":
      return { type: "none_required", msg: "Input should be None" };
    default:
      return { type: "value_error", msg: `Input should be of type ${expected}${orNull}` };
  }
}

/** One Ajv error as Pydantic would have reported it. */
function fieldError(e: ErrorObject, part: string): FieldError {
  const loc: (string | number)[] = [partLoc[part] ?? part, ...pointerToLoc(e.instancePath)];
  const custom = (e.parentSchema as { "x-error"?: { type: string; msg: string } } | undefined)?.["x-error"];
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case "required":
      return { loc: [...loc, String(params.missingProperty)], msg: "Field required", type: "missing" };
    case "additionalProperties":
      return {
        loc: [...loc, String(params.additionalProperty)],
        msg: "Extra inputs are not permitted",
        type: "extra_forbidden",
      };
    case "type": {
      // A type list (["integer", "null"]) or a union collapsed by collapseUnions names null among
      // the accepted types: the message says so, and names the other type.
      const types = String(params.type).split(",");
      const expected = types.find((t) => t !== "null") ?? "null";
      return { loc, ...typeError(expected, part !== "body", types.includes("null")) };
    }
    case "maxLength":
      return {
        loc,
        msg: `String should have at most ${params.limit} character${params.limit === 1 ? "" : "s"}`,
        type: "string_too_long",
      };
    case "minLength":
      return {
        loc,
        msg: `String should have at least ${params.limit} character${params.limit === 1 ? "" : "s"}`,
        type: "string_too_short",
      };
    case "minItems":
      return {
        loc,
        msg: `List should have at least ${params.limit} item${params.limit === 1 ? "" : "s"}`,
        type: "too_short",
      };
    case "maxItems":
      return {
        loc,
        msg: `List should have at most ${params.limit} item${params.limit === 1 ? "" : "s"}`,
        type: "too_long",
      };
    case "enum":
      return { loc, msg: `Input should be ${quoted(params.allowedValues as unknown[])}`, type: "enum" };
    case "const":
      // allowedValues: every literal of a union, gathered by collapseUnions.
      return {
        loc,
        msg: `Input should be ${quoted((params.allowedValues as unknown[] | undefined) ?? [params.allowedValue])}`,
        type: "literal_error",
      };
    case "minimum":
      return {
        loc,
        msg: `Input should be greater than or equal to ${params.limit}`,
        type: "greater_than_equal",
      };
    case "maximum":
      return { loc, msg: `Input should be less than or equal to ${params.limit}`, type: "less_than_equal" };
    case "exclusiveMinimum":
      return { loc, msg: `Input should be greater than ${params.limit}`, type: "greater_than" };
    case "exclusiveMaximum":
      return { loc, msg: `Input should be less than ${params.limit}`, type: "less_than" };
    case "pattern":
      return custom
        ? { loc, ...custom }
        : { loc, msg: `String should match pattern '${params.pattern}'`, type: "string_pattern_mismatch" };
    case "format":
      return custom ? { loc, ...custom } : formatError(loc, String(params.format));
    default:
      // Never Ajv's own message ("must be …"): a rule without a mapping above gets a fixed text.
      return custom ? { loc, ...custom } : { loc, msg: "Input is not valid here", type: "value_error" };
  }
}

function formatError(loc: (string | number)[], format: string): FieldError {
  switch (format) {
    case "date":
      return {
        loc,
        msg: "Input should be a valid date in the format YYYY-MM-DD",
        type: "date_from_datetime_parsing",
      };
    case "date-time":
      return { loc, msg: "Input should be a valid datetime", type: "datetime_from_date_parsing" };
    case "email":
      return { loc, msg: "value is not a valid email address", type: "email_parsing" };
    case "uuid":
      return { loc, msg: "Input should be a valid UUID", type: "uuid_parsing" };
    default:
      return { loc, msg: `Input should match format ${format}`, type: "value_error" };
  }
}

/** Ajv reports an `if/then` or `anyOf` failure next to its cause; only causes reach the caller. */
const wrapperKeywords = new Set(["if", "anyOf", "oneOf", "not"]);

/** What a branch of a union accepts, as far as the 422 needs to know. */
interface BranchSchema {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
}

/**
 * Ajv checks every branch of an anyOf and reports each branch's failure on its own: a union of
 * literals (TypeBox's Union of Literal) fails once per literal, and a nullable field (a union with
 * Null) adds "must be null" beside the real cause. Pydantic reports such a field once, so each
 * failed anyOf is replaced here by what it means: one literal_error naming every literal, or the
 * errors of the one branch that is not null, its type error naming null as accepted too. A union of
 * several other shapes keeps its branches' errors, as Pydantic reports one per member.
 * Ajv reports the anyOf after its branches, so an inner union is collapsed before an outer one.
 */
function collapseUnions(errors: readonly ErrorObject[]): ErrorObject[] {
  const out: ErrorObject[] = [];
  for (const e of errors) {
    if (e.keyword !== "anyOf" || !Array.isArray(e.schema)) {
      out.push(e);
      continue;
    }
    const prefix = `${e.schemaPath}/`;
    const members = out.filter((m) => m.schemaPath.startsWith(prefix));
    const kept = out.filter((m) => !m.schemaPath.startsWith(prefix));
    const branches = e.schema as BranchSchema[];
    const isNull = (b: BranchSchema) => b.type === "null";
    const others = branches.map((b, i) => ({ b, i })).filter(({ b }) => !isNull(b));
    const nullable = others.length < branches.length;
    const branchOf = (m: ErrorObject) => Number(m.schemaPath.slice(prefix.length).split("/")[0]);
    let replacement: ErrorObject[];
    if (others.length > 0 && others.every(({ b }) => "const" in b || Array.isArray(b.enum))) {
      const allowedValues = others.flatMap(({ b }) => ("const" in b ? [b.const] : (b.enum ?? [])));
      replacement = [
        {
          keyword: "const",
          instancePath: e.instancePath,
          schemaPath: e.schemaPath,
          params: { allowedValue: allowedValues[0], allowedValues },
          parentSchema: e.parentSchema,
        },
      ];
    } else if (others.length === 1) {
      const only = others[0]?.i;
      replacement = members
        .filter((m) => branchOf(m) === only)
        .map((m) =>
          nullable && m.keyword === "type" && m.instancePath === e.instancePath
            ? { ...m, params: { type: [...String(m.params.type).split(","), "null"].join(",") } }
            : m,
        );
    } else {
      replacement = members.filter((m) => !isNull(branches[branchOf(m)] ?? {}));
    }
    out.length = 0;
    // Should the kept branch have reported nothing, Ajv's own errors stay: a 422 always names a cause.
    out.push(...kept, ...(replacement.length > 0 ? replacement : members), e);
  }
  return out;
}

export function toFieldErrors(errors: readonly ErrorObject[], part: string): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of collapseUnions(errors)) {
    if (wrapperKeywords.has(e.keyword)) continue;
    const fe = fieldError(e, part);
    const key = JSON.stringify([fe.loc, fe.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(fe);
  }
  return out;
}
