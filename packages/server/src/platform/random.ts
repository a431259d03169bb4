// Randomness as a port, so ids and tokens can be made reproducible in tests.

import crypto from "node:crypto";

export interface Random {
  bytes(count: number): Buffer;
  uuid(): string;
}

export const systemRandom: Random = {
  bytes: (count) => crypto.randomBytes(count),
  uuid: () => crypto.randomUUID(),
};
