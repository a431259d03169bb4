// Route schemas compiled when first used instead of when the app starts. Fastify compiles every
// route's validators (Ajv) and response serializers (fast-json-stringify) while it gets ready; for
// this service that was about a second of CPU at every start, before the process could answer
// (docs/operations.md, "Starting"). Here each compiler hands Fastify a stand-in that compiles on
// its first call; once the process listens, `warm()` compiles whatever is still pending in the
// background, one schema per turn of the event loop, so requests keep being served meanwhile and
// a schema that would not compile is logged at start rather than met by a request.

import SerializerSelector from "@fastify/fast-json-stringify-compiler";
import type { FastifySchemaCompiler } from "fastify";

type Validator = ReturnType<FastifySchemaCompiler<unknown>>;
type SerializerFactory = ReturnType<typeof SerializerSelector>;
type Serializer = (data: unknown) => string;

/** The stand-ins of one app and the compilations they have not run yet. */
export class LazySchemas {
  readonly #pending = new Set<() => void>();

  /** Schemas whose compilation has not run yet. */
  get pending(): number {
    return this.#pending.size;
  }

  /** `compile`, deferred to the first validation; the stand-in carries the real one's `errors`. */
  validatorCompiler(compile: FastifySchemaCompiler<unknown>): FastifySchemaCompiler<unknown> {
    return (route) => {
      let real: Validator | null = null;
      const load = (): Validator => {
        if (real === null) {
          this.#pending.delete(load);
          real = compile(route);
        }
        return real;
      };
      this.#pending.add(load);
      const standIn: Validator = (data: unknown) => {
        const validate = load();
        const result = validate(data);
        standIn.errors = validate.errors ?? null;
        return result;
      };
      standIn.errors = null;
      return standIn;
    };
  }

  /** Fastify's own serializer factory (fast-json-stringify), deferred to each first response. */
  serializerFactory(): SerializerFactory {
    const build = SerializerSelector();
    return (externalSchemas, options) => {
      const compile = build(externalSchemas, options);
      return (route) => {
        let real: Serializer | null = null;
        const load = (): Serializer => {
          if (real === null) {
            this.#pending.delete(load);
            real = compile(route);
          }
          return real;
        };
        this.#pending.add(load);
        return (data: unknown) => load()(data);
      };
    };
  }

  /**
   * Compiles every pending schema, one per turn of the event loop. Resolves with the errors of
   * those that failed (each also fails its route's requests with a 500 when they come).
   */
  async warm(): Promise<unknown[]> {
    const failures: unknown[] = [];
    for (;;) {
      const next = this.#pending.values().next();
      if (next.done) return failures;
      await new Promise<void>((resolve) => setImmediate(resolve));
      if (!this.#pending.has(next.value)) continue;
      try {
        next.value();
      } catch (err) {
        this.#pending.delete(next.value);
        failures.push(err);
      }
    }
  }
}
