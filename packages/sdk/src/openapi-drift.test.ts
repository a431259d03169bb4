// The SDK's wire types against the OpenAPI document the service generates from the schemas it
// validates with (docs/openapi.json, itself checked against the routes by its own drift test): a
// field added, removed, made optional or nullable, an enumeration changed, or a type changed on
// either side fails here, naming the field. The records and bodies of types.ts derive from the
// generated wire.ts (wire.test.ts keeps that file generated); this test checks what the SDK
// writes itself on top: the narrowed bodies, the open `source` of an order, the list parameters.
//
// Records must match exactly: a partner's code trusts them. A request body may be stricter than the
// schema (a field the service takes as null or leaves optional may be required or non-null in the
// SDK, an enumeration may be narrower, and EmploymentInput is the conditional table of docs/reference.md §2.1 as a
// union), never looser: what the SDK lets a partner send, the service accepts.
//
// Read with the TypeScript compiler's checker, so inherited fields (ClientCreateRequest extends
// ClientUpdateRequest) and enumerations imported from the protocol are seen as a partner's
// compiler sees them.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import ts from "typescript";

const root = path.resolve(import.meta.dirname, "../../..");
const typesFile = path.join(import.meta.dirname, "types.ts");

interface Schema {
  type?: string | string[];
  enum?: unknown[];
  anyOf?: Schema[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
}

interface Operation {
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, { content?: Record<string, { schema: Schema }> }>;
}

const document = JSON.parse(fs.readFileSync(path.join(root, "docs/openapi.json"), "utf8")) as {
  paths: Record<string, Record<string, Operation>>;
  components: { schemas: Record<string, Schema> };
};

/** The value with every reference to a component schema replaced by the schema itself. */
function inlineRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(inlineRefs);
  if (value === null || typeof value !== "object") return value;
  const ref = (value as { $ref?: unknown }).$ref;
  if (typeof ref === "string" && ref.startsWith("#/components/schemas/")) {
    const target = document.components.schemas[ref.slice("#/components/schemas/".length)];
    assert.ok(target, `docs/openapi.json has ${ref}`);
    return inlineRefs(target);
  }
  return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, inlineRefs(v)]));
}

const openapi = { paths: inlineRefs(document.paths) as typeof document.paths };

function operation(method: string, route: string): Operation {
  const op = openapi.paths[route]?.[method];
  assert.ok(op, `docs/openapi.json has ${method.toUpperCase()} ${route}`);
  return op;
}

/** The `result` record of the operation's success response. */
function resultSchema(method: string, route: string): Schema {
  const op = operation(method, route);
  const status = Object.keys(op.responses).find((s) => s.startsWith("2"));
  const schema =
    status === undefined ? undefined : op.responses[status]?.content?.["application/json"]?.schema;
  const result = schema?.properties?.result;
  assert.ok(result, `${method.toUpperCase()} ${route} answers {result}`);
  return result;
}

function bodySchema(method: string, route: string): Schema {
  const schema = operation(method, route).requestBody?.content["application/json"]?.schema;
  assert.ok(schema, `${method.toUpperCase()} ${route} takes a JSON body`);
  return schema;
}

const program = ts.createProgram([typesFile], {
  strict: true,
  target: ts.ScriptTarget.ES2022,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  allowImportingTsExtensions: true,
  noEmit: true,
  types: [],
});
const checker = program.getTypeChecker();
const moduleSymbol = checker.getSymbolAtLocation(program.getSourceFile(typesFile)!)!;
const exported = new Map(checker.getExportsOfModule(moduleSymbol).map((s) => [s.name, s]));

function sdkType(name: string): ts.Type {
  const symbol = exported.get(name);
  assert.ok(symbol, `types.ts exports ${name}`);
  return checker.getDeclaredTypeOfSymbol(symbol);
}

/** The schema without its null alternative, and whether it had one. */
function schemaParts(schema: Schema): { nullable: boolean; variants: Schema[] } {
  if (schema.anyOf !== undefined) {
    const variants = schema.anyOf.filter((s) => s.type !== "null");
    return { nullable: variants.length < schema.anyOf.length, variants };
  }
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== "null");
    return {
      nullable: types.length < schema.type.length,
      variants: types.map((t) => ({ ...schema, type: t })),
    };
  }
  return { nullable: false, variants: [schema] };
}

function typeParts(type: ts.Type): { nullable: boolean; members: ts.Type[] } {
  const all = type.isUnion() ? type.types : [type];
  const members = all.filter((t) => !(t.flags & (ts.TypeFlags.Null | ts.TypeFlags.Undefined)));
  return { nullable: all.some((t) => t.flags & ts.TypeFlags.Null), members };
}

function kindOfType(members: ts.Type[]): string {
  if (members.every((t) => t.flags & ts.TypeFlags.StringLike)) return "string";
  if (members.some((t) => t.flags & ts.TypeFlags.String)) return "string";
  // `OrderSource | (string & {})`: an open string.
  if (members.every((t) => t.flags & ts.TypeFlags.StringLike || t.isIntersection())) return "string";
  if (members.every((t) => t.flags & ts.TypeFlags.NumberLike)) return "number";
  if (members.every((t) => t.flags & ts.TypeFlags.BooleanLike)) return "boolean";
  if (members.length === 1 && checker.isArrayType(members[0]!)) return "array";
  return "object";
}

function kindOfSchema(schema: Schema): string {
  if (schema.type === "integer" || schema.type === "number") return "number";
  if (typeof schema.type === "string") return schema.type;
  return schema.properties !== undefined ? "object" : "unknown";
}

type Mode = "record" | "request";

/** Every difference between the SDK type and the schema, as "where: what". */
function compare(type: ts.Type, schema: Schema, where: string, problems: string[], mode: Mode): void {
  const s = schemaParts(schema);
  const t = typeParts(type);
  if (t.nullable && !s.nullable) problems.push(`${where}: nullable in the SDK only`);
  if (s.nullable && !t.nullable && mode === "record") {
    problems.push(`${where}: nullable in the schema, not in the SDK`);
  }
  if (s.variants.length !== 1) {
    problems.push(`${where}: the schema has ${s.variants.length} shapes; compare them by hand`);
    return;
  }
  const variant = s.variants[0]!;
  const schemaKind = kindOfSchema(variant);
  const typeKind = kindOfType(t.members);
  if (schemaKind !== typeKind) {
    problems.push(`${where}: ${schemaKind} in the schema, ${typeKind} in the SDK`);
    return;
  }
  if (schemaKind === "string" && variant.enum !== undefined) {
    const open = t.members.some((m) => m.flags & ts.TypeFlags.String || m.isIntersection());
    const literals = t.members
      .filter((m) => m.isStringLiteral())
      .map((m) => (m as ts.StringLiteralType).value)
      .sort();
    const wanted = [...(variant.enum as string[])].sort();
    const within = literals.every((l) => wanted.includes(l));
    const same = JSON.stringify(literals) === JSON.stringify(wanted);
    // An open string (OrderSource | (string & {})) takes the schema's values and more.
    const fits = open ? within : mode === "request" ? literals.length > 0 && within : same;
    if (!fits) {
      problems.push(
        `${where}: values ${JSON.stringify(wanted)} in the schema, ${JSON.stringify(literals)} in the SDK`,
      );
    }
  }
  if (schemaKind === "array" && variant.items !== undefined) {
    const item = checker.getTypeArguments(t.members[0] as ts.TypeReference)[0]!;
    compare(item, variant.items, `${where}[]`, problems, mode);
  }
  if (schemaKind === "object" && variant.properties !== undefined) {
    if (t.members.length === 1) compareObject(t.members[0]!, variant, where, problems, mode);
    else if (mode === "request") {
      for (const member of t.members) compareObject(member, variant, where, problems, mode);
    } else problems.push(`${where}: a union in the SDK, one shape in the schema`);
  }
}

function compareObject(type: ts.Type, schema: Schema, where: string, problems: string[], mode: Mode): void {
  const props = new Map(checker.getPropertiesOfType(type).map((p) => [p.name, p]));
  const schemaProps = schema.properties ?? {};
  const required = new Set(schema.required ?? []);
  for (const name of Object.keys(schemaProps)) {
    if (!props.has(name)) problems.push(`${where}.${name}: in the schema, not in the SDK`);
  }
  for (const [name, prop] of props) {
    const field = schemaProps[name];
    if (field === undefined) {
      problems.push(`${where}.${name}: in the SDK, not in the schema`);
      continue;
    }
    const optional = (prop.flags & ts.SymbolFlags.Optional) !== 0;
    if (optional && required.has(name)) {
      problems.push(`${where}.${name}: required in the schema, optional in the SDK`);
    }
    if (!optional && !required.has(name) && mode === "record") {
      problems.push(`${where}.${name}: optional in the schema, required in the SDK`);
    }
    // typeParts ignores the `undefined` an optional property adds.
    compare(checker.getTypeOfSymbol(prop), field, `${where}.${name}`, problems, mode);
  }
}

const records: [string, Schema, Mode][] = [
  ["Asset", resultSchema("get", "/v1/public/assets/{asset_id}"), "record"],
  ["Country", resultSchema("get", "/v1/public/countries/{country_id}"), "record"],
  ["AssetPair", resultSchema("get", "/v1/partner/asset-pairs/{asset_pair_id}"), "record"],
  ["Balance", resultSchema("get", "/v1/partner/balances/{asset_id}"), "record"],
  ["Order", resultSchema("get", "/v1/partner/orders/{order_id}"), "record"],
  ["Quote", resultSchema("post", "/v1/partner/quotes"), "record"],
  ["Client", resultSchema("get", "/v1/partner/clients/{partner_client_id}/"), "record"],
  [
    "ClientDocument",
    resultSchema("get", "/v1/partner/clients/{partner_client_id}/documents/{document_id}"),
    "record",
  ],
  ["FundingRequest", bodySchema("post", "/v1/partner/deposits"), "request"],
  ["FundingRequest", bodySchema("post", "/v1/partner/withdrawals"), "request"],
  ["QuoteRequest", bodySchema("post", "/v1/partner/quotes"), "request"],
  ["ExecuteRequest", bodySchema("post", "/v1/partner/quotes/execute"), "request"],
  ["ClientCreateRequest", bodySchema("post", "/v1/partner/clients"), "request"],
  ["ClientUpdateRequest", bodySchema("put", "/v1/partner/clients/{partner_client_id}/"), "request"],
];

test("the SDK's records and request bodies match docs/openapi.json field for field", () => {
  const problems: string[] = [];
  for (const [name, schema, mode] of records) compare(sdkType(name), schema, name, problems, mode);
  assert.deepEqual(problems, []);
});

test("the SDK's list parameters are the query parameters the service takes", () => {
  const lists: [string, string][] = [
    ["OrderListParams", "/v1/partner/orders"],
    ["ClientListParams", "/v1/partner/clients"],
    ["DocumentListParams", "/v1/partner/clients/{partner_client_id}/documents"],
  ];
  for (const [name, route] of lists) {
    const query = (operation("get", route).parameters ?? []).filter((p) => p.in === "query");
    const props = checker.getPropertiesOfType(sdkType(name));
    assert.deepEqual(
      props.map((p) => p.name).sort(),
      query.map((p) => p.name).sort(),
      `${name} and the query of GET ${route}`,
    );
    for (const p of props) {
      const required = query.find((q) => q.name === p.name)?.required === true;
      assert.equal((p.flags & ts.SymbolFlags.Optional) === 0, required, `${name}.${p.name} required`);
    }
  }
});

test("the comparison sees a drift: a field renamed, made optional or given another value", () => {
  const order = resultSchema("get", "/v1/partner/orders/{order_id}");
  const renamed = structuredClone(order);
  renamed.properties!.order_number = renamed.properties!.order_no!;
  delete renamed.properties!.order_no;
  renamed.required = renamed.required!.map((r) => (r === "order_no" ? "order_number" : r));
  const loosened = structuredClone(order);
  loosened.required = loosened.required!.filter((r) => r !== "fee");
  const moreStatuses = structuredClone(order);
  moreStatuses.properties!.status!.enum = [...(moreStatuses.properties!.status!.enum ?? []), "settled"];
  const notNull = structuredClone(order);
  notNull.properties!.price = { type: "string" };
  for (const [schema, expected] of [
    [
      renamed,
      ["Order.order_number: in the schema, not in the SDK", "Order.order_no: in the SDK, not in the schema"],
    ],
    [loosened, ["Order.fee: optional in the schema, required in the SDK"]],
    [moreStatuses, [/^Order\.status: values .*"settled".* in the schema/]],
    [notNull, ["Order.price: nullable in the SDK only"]],
  ] as const) {
    const problems: string[] = [];
    compare(sdkType("Order"), schema, "Order", problems, "record");
    assert.equal(problems.length, expected.length, problems.join("\n"));
    expected.forEach((e, i) => {
      if (typeof e === "string") assert.equal(problems[i], e);
      else assert.match(problems[i]!, e);
    });
  }
});
