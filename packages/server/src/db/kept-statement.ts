// A hot statement built with Kysely once and then only bound (docs/decisions.md, "Hot reads built
// once"). Building a query and compiling it to SQL costs more CPU than anything else the service
// does for a signed read but the signature check and the socket writes; a hot read's text only
// depends on which filters it has, never on their values. So the statement is built once per
// shape, with stand-ins for its parameters, and each run binds the values in their places.

import { type Compilable, CompiledQuery, type Kysely } from "kysely";
import { preparedMarker } from "./database.ts";
import type { Database } from "./schema.ts";

type Q = Kysely<Database>;

/** Stands for the parameter `key` while a kept statement is built; bound at each run. */
class Slot {
  readonly key: string;
  constructor(key: string) {
    this.key = key;
  }
}

/** A statement's text (marked to be prepared) and its parameters: a Slot or a constant. */
interface Built {
  readonly text: string;
  readonly parameters: readonly unknown[];
}

interface CacheNode {
  readonly next: WeakMap<object, CacheNode>;
  readonly built: Map<string, Built>;
}

function child(nodes: WeakMap<object, CacheNode>, key: object): CacheNode {
  let node = nodes.get(key);
  if (node === undefined) {
    node = { next: new WeakMap(), built: new Map() };
    nodes.set(key, node);
  }
  return node;
}

/**
 * A statement built by `build` from its parameters `P`, for a shape `S` (which optional parts it
 * has). `build` receives stand-ins, not values: it may place a parameter anywhere Kysely takes a
 * value, but neither compute with it nor branch on it (what varies the text goes in the shape).
 * A parameter that `build` reads but that is not in the statement fails the first run. A list is
 * one array parameter (`= any(${p.ids}::text[])`), never `in`, whose text depends on its length.
 *
 * The text is kept per shape and per the Kysely instance's dialect and plugins (a plugin may
 * rewrite a query, so another set compiles again); a transaction shares its database's entry.
 */
export class KeptStatement<P extends object, O, S extends string = ""> {
  readonly #build: (db: Q, p: P, shape: S) => Compilable<O>;
  readonly #roots = new WeakMap<object, CacheNode>();

  constructor(build: (db: Q, p: P, shape: S) => Compilable<O>) {
    this.#build = build;
  }

  /**
   * Runs the statement as a prepared statement (preparedMarker). Its select list must name its
   * columns: a `*` would change the prepared statement's result when a migration adds a column
   * while processes of the previous version run ("cached plan must not change result type").
   */
  async execute(db: Q, values: P, shape = "" as S): Promise<O[]> {
    const built = this.#built(db, shape);
    const named = values as Record<string, unknown>;
    const parameters = built.parameters.map((p) => (p instanceof Slot ? named[p.key] : p));
    const { rows } = await db.executeQuery<O>(CompiledQuery.raw(built.text, parameters));
    return rows;
  }

  #built(db: Q, shape: S): Built {
    const node = this.#node(db);
    let built = node.built.get(shape);
    if (built === undefined) {
      built = this.#compile(db, shape);
      node.built.set(shape, built);
    }
    return built;
  }

  #node(db: Q): CacheNode {
    const executor = db.getExecutor();
    let node = child(this.#roots, executor.adapter);
    for (const plugin of executor.plugins) node = child(node.next, plugin);
    return node;
  }

  #compile(db: Q, shape: S): Built {
    const read = new Set<string>();
    const slots = new Proxy(
      {},
      {
        get: (_target, key) => {
          if (typeof key !== "string") return undefined;
          read.add(key);
          return new Slot(key);
        },
      },
    ) as P;
    const compiled = this.#build(db, slots, shape).compile();
    const placed = new Set(compiled.parameters.flatMap((p) => (p instanceof Slot ? [p.key] : [])));
    for (const key of read) {
      if (!placed.has(key)) {
        throw new Error(`kept statement: parameter "${key}" is read by its build but not placed in it`);
      }
    }
    if (compiled.sql.includes("[object Object]")) {
      throw new Error("kept statement: a parameter was written into the text instead of bound");
    }
    return { text: `${preparedMarker}\n${compiled.sql}`, parameters: compiled.parameters };
  }
}
