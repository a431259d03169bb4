// Request validation: two Ajv instances (bodies are never coerced, so a JSON number is never taken
// for a decimal string; query and path values arrive as text and are coerced), and the mapping of
// Ajv's errors onto the FastAPI/Pydantic 422 shape the contract uses: {loc, msg, type}.

import type { FieldError } from "@counterpart/protocol";
import { Ajv, type ErrorObject, type Options } from "ajv";
import addFormatsModule from "ajv-formats";
import type { FastifySchemaCompiler } from "fastify";

// ajv-formats ships CommonJS with a default export object.
const addFormats = addFormatsModule as unknown as (ajv: Ajv, formats?: string[]) => Ajv;

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
  addFormats(ajv, ["date", "date-time", "email", "uuid"]);
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
}

const integerText = /^-?[0-9]+$/;

const isInteger = (s: JsonSchema | undefined): boolean =>
  s !== undefined &&
  (s.type === "integer" ||
    (Array.isArray(s.type) && s.type.includes("integer")) ||
    (s.anyOf ?? []).some(isInteger));

/** The top-level properties of a query, path or header schema that take integers (or lists of them). */
function integerProperties(schema: JsonSchema): { name: string; list: boolean }[] {
  const out: { name: string; list: boolean }[] = [];
  for (const [name, prop] of Object.entries(schema.properties ?? {})) {
    if (isInteger(prop)) out.push({ name, list: false });
    else if (isInteger(prop.items)) out.push({ name, list: true });
  }
  return out;
}

/** An Ajv-shaped type error for every text value of an integer property that is not plain digits. */
function looseIntegers(integers: { name: string; list: boolean }[], data: unknown): ErrorObject[] {
  if (data === null || typeof data !== "object") return [];
  const errors: ErrorObject[] = [];
  for (const { name, list } of integers) {
    const value = (data as Record<string, unknown>)[name];
    const values = Array.isArray(value) ? value : [value];
    values.forEach((v, i) => {
      if (typeof v !== "string" || integerText.test(v)) return;
      const pointer = `/${name.replace(/~/g, "~0").replace(/\//g, "~1")}`;
      errors.push({
        keyword: "type",
        instancePath: list && Array.isArray(value) ? `${pointer}/${i}` : pointer,
        schemaPath: `#/properties/${name}/type`,
        params: { type: "integer" },
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

function typeError(expected: string, inText: boolean): { type: string; msg: string } {
  switch (expected) {
    case "string":
      return { type: "string_type", msg: "Input should be a valid string" };
    case "integer":
      return inText
        ? {
            type: "int_parsing",
            msg: "Input should be a valid integer, unable to parse string as an integer",
          }
        : { type: "int_type", msg: "Input should be a valid integer" };
    case "number":
      return { type: "float_type", msg: "Input should be a valid number" };
    case "boolean":
      return inText
        ? { type: "bool_parsing", msg: "Input should be a valid boolean, unable to interpret input" }
        : { type: "bool_type", msg: "Input should be a valid boolean" };
    case "array":
      return { type: "list_type", msg: "Input should be a valid list" };
    case "object":
      return {
        type: "model_attributes_type",
        msg: "Input should be a valid dictionary or object to extract fields from",
      };
    case "null":
      return { type: "none_required", msg: "Input should be None" };
    default:
      return { type: "value_error", msg: `Input should be of type ${expected}` };
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
      const expected = String(params.type).split(",")[0] ?? "";
      return {
        loc,
        ...typeError(
          expected === "null" ? (String(params.type).split(",")[1] ?? "") : expected,
          part !== "body",
        ),
      };
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
      return { loc, msg: `Input should be ${quoted([params.allowedValue])}`, type: "literal_error" };
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

export function toFieldErrors(errors: readonly ErrorObject[], part: string): FieldError[] {
  const out: FieldError[] = [];
  const seen = new Set<string>();
  for (const e of errors) {
    if (wrapperKeywords.has(e.keyword)) continue;
    const fe = fieldError(e, part);
    const key = JSON.stringify([fe.loc, fe.type]);
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(fe);
  }
  return out;
}
