#!/usr/bin/env node

// `counterpart`: the operator's command line. serve, migrate and keygen act locally; every other
// operator command goes through the admin API of the running service.

import { ignoreClosedOutput } from "./common/stdio.ts";
import { run } from "./operator/cli.ts";

ignoreClosedOutput();

process.exitCode = await run(process.argv.slice(2));
