// Prepared statements on PGlite (docs/decisions.md, "Prepared statements on PGlite"). PGlite's
// `query()` sends every statement unnamed, so PostgreSQL parses, analyses and plans it at every
// execution, in six exchanges with the WebAssembly module (Parse, Describe, Bind, Describe,
// Execute, Sync), each parsed back by JavaScript. A statement marked with `preparedMarker` is
// prepared here once under its name, as pg prepares it on PostgreSQL (database.ts), and then only
// bound and executed, in one exchange. Everything else goes through `query()` unchanged.
//
// The messages are PGlite's own (its protocol serialiser, and its parser, which also hands out
// notifications), and so are the values: each parameter goes through PGlite's serialiser for the
// type PostgreSQL gave it, each column through PGlite's parser for its type, as `query()` does.
// Only the rows are assembled here, from the columns described once when the statement was
// prepared: PGlite's `parseResults` copies its whole table of parsers at every call (hundreds of
// types), which cost more than the rest of the answer. The one exchange holds PGlite's query lock,
// as `query()` does.

import type { PGlite, Results } from "@electric-sql/pglite";

type Pglite = typeof import("@electric-sql/pglite");
type Message = Awaited<ReturnType<PGlite["execProtocolStream"]>>[number];
type Parse = (value: string, typeId: number) => unknown;

/** What a Kysely PGlite dialect asks of its client. */
export interface PgliteQueryClient {
  query<T>(text: string, params?: unknown[]): Promise<Results<T>>;
  close(): Promise<void>;
}

interface Column {
  readonly name: string;
  readonly dataTypeID: number;
  /** PGlite's parser for the column's type; none: the text as it came. */
  readonly parse: Parse | undefined;
}

interface Prepared {
  readonly name: string;
  /** The type of each parameter, as PostgreSQL inferred it when the statement was prepared. */
  readonly parameterTypes: readonly number[];
  /** The columns of its rows, in order; empty for a statement that returns none. */
  readonly columns: readonly Column[];
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

  const exchange = (parts: Uint8Array[]) =>
    client.execProtocolStream(Buffer.concat(parts), { syncToFs: false });

  async function prepare(text: string): Promise<Prepared> {
    const name = nameOf(text);
    const messages = await exchange([
      serialize.close({ type: "S", name }),
      serialize.parse({ name, text }),
      serialize.describe({ type: "S", name }),
      serialize.sync(),
    ]);
    const description = messages.find((m) => m.name === "rowDescription") as
      | { fields: { name: string; dataTypeID: number }[] }
      | undefined;
    const statement: Prepared = {
      name,
      parameterTypes: pglite.parse.parseDescribeStatementResults(messages),
      columns: (description?.fields ?? []).map((f) => ({
        name: f.name,
        dataTypeID: f.dataTypeID,
        parse: client.parsers[f.dataTypeID] as Parse | undefined,
      })),
    };
    prepared.set(text, statement);
    return statement;
  }

  function execute(statement: Prepared, params: unknown[]): Promise<Message[]> {
    const values = params.map((param, i) => {
      if (param === null || param === undefined) return null;
      const serializer = client.serializers[statement.parameterTypes[i] ?? 0];
      return serializer === undefined ? String(param) : (serializer(param) as string);
    });
    return exchange([
      serialize.bind({ statement: statement.name, values }),
      serialize.execute({}),
      serialize.sync(),
    ]);
  }

  async function run<T>(text: string, params: unknown[]): Promise<Results<T>> {
    return client.runExclusive(async () => {
      if (client.closed) throw new Error("PGlite is closed");
      let statement = prepared.get(text) ?? (await prepare(text));
      let messages: Message[];
      try {
        messages = await execute(statement, params);
      } catch (err) {
        // Inside a transaction the error has aborted it: nothing more can run there.
        if (!replanStates.has((err as { code?: unknown }).code as string) || client.isInTransaction())
          throw err;
        prepared.delete(text);
        statement = await prepare(text);
        messages = await execute(statement, params);
      }
      // As query() does after every statement outside a PGlite transaction (the dialect's are
      // plain BEGIN and COMMIT statements, which PGlite does not track).
      await client.syncToFs();
      return results<T>(statement, messages);
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

/** The answer as `query()` gives it: rows as objects by column name, fields, affected rows. */
function results<T>(statement: Prepared, messages: Message[]): Results<T> {
  const { columns } = statement;
  const rows: Record<string, unknown>[] = [];
  let affectedRows = 0;
  for (const message of messages) {
    if (message.name === "dataRow") {
      const values = (message as unknown as { fields: (string | null)[] }).fields;
      const row: Record<string, unknown> = {};
      for (let i = 0; i < columns.length; i++) {
        const column = columns[i]!;
        const value = values[i] ?? null;
        row[column.name] =
          value === null || column.parse === undefined ? value : column.parse(value, column.dataTypeID);
      }
      rows.push(row);
    } else if (message.name === "commandComplete") {
      affectedRows += affected((message as unknown as { text: string }).text);
    }
  }
  return {
    rows: rows as T[],
    fields: columns.map((c) => ({ name: c.name, dataTypeID: c.dataTypeID })),
    affectedRows,
  };
}

/** The rows a command tag says were written, as PGlite counts them. */
function affected(tag: string): number {
  const words = tag.split(" ");
  switch (words[0]) {
    case "INSERT":
      return Number.parseInt(words[2] ?? "0", 10);
    case "UPDATE":
    case "DELETE":
    case "COPY":
    case "MERGE":
      return Number.parseInt(words[1] ?? "0", 10);
    default:
      return 0;
  }
}
