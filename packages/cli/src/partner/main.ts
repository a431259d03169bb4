#!/usr/bin/env node

// `counterpart` as a partner installs it (@counterpart/cli): the partner commands only.

import { ignoreClosedOutput } from "../common/stdio.ts";
import { runPartner } from "./cli.ts";

ignoreClosedOutput();

process.exitCode = await runPartner(process.argv.slice(2));
