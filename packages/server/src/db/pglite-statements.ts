// Prepared statements on PGlite. PGlite's query() runs each statement in six calls into its WASM
// module (parse, describe, bind, describe, execute, sync), parsing and planning it every time:
// about 600 µs of CPU for a point SELECT, where binding and executing a statement already parsed
// takes about 120 µs (docs/operations.md, "Prepared statements on PGlite"). The statements marked
// to be prepared on PostgreSQL (db/database.ts, preparedMarker) are kept the same way here: parsed
// and described once under their name, then bound and executed in one call. Every other statement
// goes through query() as before.

import type { PGlite, Results } from "@electric-sql/pglite";

type Protocol = typeof import("@electric-sql/pglite").protocol;
type ParseHelpers = typeof import("@electric-sql/pglite").parse;
type BackendMessage = Parameters<Parameters<InstanceType<Protocol["Parser"]>["parse"]>[1]>[0];

/** What the query builder's driver asks of PGlite (kysely-pglite-dialect calls these two only). */
export type PgliteQueries = Pick<PGlite, "query" | "close">;

interface KeptStatement {
  /** The parameters' types, as PostgreSQL inferred them when the statement was parsed. */
  paramTypes: number[];
  /** The statement's row description; null for a statement that returns no rows. */
  description: BackendMessage | null;
}

/** Kept statements are constants of the code; the bound is a safeguard (all are dropped past it). */
const maxKept = 1_000;

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}

/**
 * `client`'s query(), with the statements whose text starts with `marker` kept as prepared
 * statements named by `nameOf(text)`. A statement's results, its errors (the same DatabaseError,
 * SQLSTATE and constraint included) and its effect are those query() gives; one exchange with the
 * module is one synchronous call, so nothing else runs in the middle of it.
 */
export function keepMarkedStatements(
  client: PGlite,
  lib: { protocol: Protocol; parse: ParseHelpers },
  marker: string,
  nameOf: (text: string) => string,
): PgliteQueries {
  const { serialize, Parser } = lib.protocol;
  const kept = new Map<string, KeptStatement>();

  /** One exchange: the messages given, then Sync; the first error PGlite answered is thrown. */
  function exchange(messages: Uint8Array[]): Promise<BackendMessage[]> {
    return client._runExclusiveQuery(async () => {
      const raw = await client.execProtocolRaw(concat([...messages, serialize.sync()]));
      const out: BackendMessage[] = [];
      new Parser().parse(raw, (m) => out.push(m));
      const failure = out.find((m) => m instanceof lib.protocol.messages.DatabaseError);
      if (failure !== undefined) throw failure;
      return out;
    });
  }

  async function prepare(name: string, text: string): Promise<KeptStatement> {
    if (kept.size >= maxKept) {
      await client.exec("DEALLOCATE ALL");
      kept.clear();
    }
    const messages = await exchange([
      serialize.parse({ name, text, types: [] }),
      serialize.describe({ type: "S", name }),
    ]);
    const statement = {
      paramTypes: lib.parse.parseDescribeStatementResults(messages),
      description: messages.find((m) => m.name === "rowDescription") ?? null,
    };
    kept.set(name, statement);
    return statement;
  }

  async function runKept(text: string, params: readonly unknown[]): Promise<Results> {
    const name = nameOf(text);
    const statement = kept.get(name) ?? (await prepare(name, text));
    // As query() does: each value through the serializer of the type PostgreSQL gave its parameter.
    const values = params.map((value, i) => {
      if (value === null || value === undefined) return null;
      const serializer = client.serializers[statement.paramTypes[i] ?? 0];
      return serializer === undefined ? String(value) : serializer(value);
    });
    const messages = await exchange([serialize.bind({ statement: name, values }), serialize.execute({})]);
    const described = statement.description === null ? messages : [statement.description, ...messages];
    const [result] = lib.parse.parseResults(described, client.parsers);
    return result!;
  }

  return {
    query: ((text: string, params?: unknown[], options?: Parameters<PGlite["query"]>[2]) =>
      text.startsWith(marker) && options === undefined
        ? runKept(text, params ?? [])
        : client.query(text, params, options)) as PGlite["query"],
    close: () => client.close(),
  };
}
