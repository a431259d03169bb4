// Prepared statements on PGlite (docs/decisions.md, "Prepared statements on PGlite"). PGlite's
// `query()` sends every statement unnamed, so PostgreSQL parses, analyses and plans it at every
// execution, in six exchanges with the WebAssembly module (Parse, Describe, Bind, Describe,
// Execute, Sync), each parsed back by JavaScript. A statement marked with `preparedMarker` is
// prepared here once under its name, as pg prepares it on PostgreSQL (database.ts), and then only
// bound and executed, in one exchange. Everything else goes through `query()` unchanged.
//
// What the answer is made of is PGlite's own: its protocol serialiser and parser, its parameter
// serialisers and type parsers, and its `parseResults`, so a row reads the same whichever way the
// statement went. The one exchange holds PGlite's query lock, as `query()` does.

import type { PGlite, Results } from "@electric-sql/pglite";

type Pglite = typeof import("@electric-sql/pglite");

/** What a Kysely PGlite dialect asks of its client. */
export interface PgliteQueryClient {
  query<T>(text: string, params?: unknown[]): Promise<Results<T>>;
  close(): Promise<void>;
}

interface Prepared {
  readonly name: string;
  /** The type of each parameter, as PostgreSQL inferred it when the statement was prepared. */
  readonly parameterTypes: readonly number[];
}

/** A statement whose plan PostgreSQL threw away: outside a transaction, prepared again once. */
const replanStates = new Set([
  "0A000", // cached plan must not change result type (a migration changed a table it reads)
  "26000", // the prepared statement no longer exists
]);

/** How many texts are kept prepared; texts past it run unprepared (marked texts are constants). */
const keptTexts = 1_000;

/**
 * A client for the Kysely PGlite dialect that runs marked statements prepared. `marker` is the
 * text that starts a marked statement; `nameOf` its name (as on PostgreSQL).
 */
export function preparingClient(
  client: PGlite,
  pglite: Pick<Pglite, "protocol" | "parse">,
  marker: string,
  nameOf: (text: string) => string,
): PgliteQueryClient {
  const { serialize } = pglite.protocol;
  const prepared = new Map<string, Prepared>();
  const runMessages = (name: string, values: (string | null)[]) =>
    concat([
      serialize.bind({ statement: name, values }),
      serialize.describe({ type: "P" }),
      serialize.execute({}),
      serialize.sync(),
    ]);

  async function prepare(text: string): Promise<Prepared> {
    const name = nameOf(text);
    const messages = await client.execProtocolStream(
      concat([
        serialize.close({ type: "S", name }),
        serialize.parse({ name, text }),
        serialize.describe({ type: "S", name }),
        serialize.sync(),
      ]),
      { syncToFs: false },
    );
    const statement = { name, parameterTypes: pglite.parse.parseDescribeStatementResults(messages) };
    prepared.set(text, statement);
    return statement;
  }

  function serialise(statement: Prepared, params: unknown[]): (string | null)[] {
    return params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const serializer = client.serializers[statement.parameterTypes[i] ?? 0];
      return serializer === undefined ? String(param) : (serializer(param) as string);
    });
  }

  async function run<T>(text: string, params: unknown[]): Promise<Results<T>> {
    return client.runExclusive(async () => {
      if (client.closed) throw new Error("PGlite is closed");
      let statement = prepared.get(text) ?? (await prepare(text));
      let messages: Awaited<ReturnType<PGlite["execProtocolStream"]>>;
      try {
        messages = await client.execProtocolStream(
          runMessages(statement.name, serialise(statement, params)),
          {
            syncToFs: false,
          },
        );
      } catch (err) {
        // Inside a transaction the error has aborted it: nothing more can run there.
        if (!replanStates.has((err as { code?: unknown }).code as string) || client.isInTransaction())
          throw err;
        prepared.delete(text);
        statement = await prepare(text);
        messages = await client.execProtocolStream(
          runMessages(statement.name, serialise(statement, params)),
          {
            syncToFs: false,
          },
        );
      }
      // As query() does after every statement outside a PGlite transaction (the dialect's are
      // plain BEGIN and COMMIT statements, which PGlite does not track).
      await client.syncToFs();
      return pglite.parse.parseResults(messages, client.parsers)[0] as Results<T>;
    });
  }

  return {
    query<T>(text: string, params: unknown[] = []): Promise<Results<T>> {
      if (text.startsWith(marker) && (prepared.has(text) || prepared.size < keptTexts)) {
        return run<T>(text, params);
      }
      return client.query<T>(text, params);
    },
    close: () => client.close(),
  };
}

function concat(parts: Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const p of parts) {
    out.set(p, offset);
    offset += p.length;
  }
  return out;
}
