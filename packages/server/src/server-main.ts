// The production entry of an API process: the service as the environment configures it, nothing
// else (no command-line parsing, no operator commands). `npm run build` bundles it into
// packages/server/dist/server.js, which a supervisor starts as `node packages/server/dist/server.js`
// (docs/operations.md, "Deploying"); `node packages/server/src/server-main.ts` runs the same from the
// sources. `counterpart serve` starts the same service through the operator's command line.
//
// Exit codes: 0 after SIGTERM or SIGINT once in-flight requests are done, 2 for a configuration
// problem (one line per bad value), 1 for a start that failed for another reason (the database
// cannot be reached, a port is taken).

import { ConfigError } from "./config/config.ts";
import { FolderLockedError } from "./db/database.ts";
import { closeOnSignals, runServer } from "./main.ts";

const starting = runServer(process.env);
closeOnSignals(starting);
starting.catch((err: unknown) => {
  const lines =
    err instanceof ConfigError
      ? err.problems
      : [err instanceof Error ? err.message.replace(/\s+/g, " ") : String(err)];
  for (const line of lines) process.stderr.write(`counterpart: ${line}\n`);
  process.exit(err instanceof ConfigError || err instanceof FolderLockedError ? 2 : 1);
});
