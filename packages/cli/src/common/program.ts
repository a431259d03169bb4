// The program both command lines share: commander set to throw instead of printing, the options
// every command takes (declared once, on the program), and the runner that turns every failure
// into the exit codes and the one-line (or --json) report described in operator/cli.ts. The
// operator's CLI (operator/cli.ts) and the partner CLI (partner/cli.ts) differ only in the commands
// they register.

import { Command, CommanderError } from "commander";
import { CliError } from "./errors.ts";
import { type OutputOptions, printJson } from "./output.ts";

/** Commander's messages ("error: ...", sometimes a second "(Did you mean ...?)" line) as one line. */
function oneLine(message: string): string {
  return message
    .trim()
    .replace(/^error: /, "")
    .replace(/\s*\n\s*/g, " ");
}

/**
 * The global options: --json, which every command of both programs takes. Commander recognises a
 * program's options before and after the subcommand (`counterpart --json partner list` and
 * `counterpart partner list --json`), and reads them before it parses the subcommand's, so a
 * failure reported by runProgram() already knows whether to print JSON.
 */
export function globalOptions(program: Command): Command {
  return program.option(
    "--json",
    'print one JSON object on stdout instead of text (a failure: {"error": {...}})',
  );
}

/**
 * An action handler that receives its own options merged with the global ones: commander passes
 * an action only its command's options, and optsWithGlobals() adds those of the program.
 */
export function withGlobalOptions<A extends unknown[], O>(
  action: (...args: [...A, O]) => Promise<void>,
): (...args: unknown[]) => Promise<void> {
  return (...args) => {
    const command = args.at(-1) as Command;
    return action(...([...args.slice(0, -2), command.optsWithGlobals()] as [...A, O]));
  };
}

/** A program with the shared settings: errors are thrown to runProgram(), never printed here. */
export function baseProgram(description: string): Command {
  const program = globalOptions(new Command("counterpart").description(description));
  // Set before any subcommand is added: subcommands copy these settings.
  program.exitOverride();
  program.configureHelp({ showGlobalOptions: true });
  program.configureOutput({
    writeOut: (s) => process.stdout.write(s),
    writeErr: (s) => process.stderr.write(s),
    outputError: () => {
      // Reported by runProgram() as one "counterpart: ..." line.
    },
  });
  return program;
}

/** Parses and runs `argv` with the program `build` makes; resolves to the exit code. */
export async function runProgram(
  argv: string[],
  build: (setExit: (code: 0 | 1) => void) => Command,
): Promise<number> {
  let exitCode = 0;
  const program = build((code) => {
    exitCode = code;
  });
  try {
    await program.parseAsync(argv, { from: "user" });
    return exitCode;
  } catch (err) {
    let code: 1 | 2;
    let lines: readonly string[];
    let details: Readonly<Record<string, unknown>> = {};
    if (err instanceof CommanderError) {
      // --help and --version end here with exit code 0; a shown help after a bad call is not 0.
      if (err.exitCode === 0) return 0;
      if (err.code === "commander.help" || err.code === "commander.helpDisplayed") return 2;
      code = 2;
      lines = [oneLine(err.message)];
    } else if (err instanceof CliError) {
      code = err.exitCode;
      lines = err.lines;
      details = err.details;
    } else {
      code = 1;
      lines = [oneLine(err instanceof Error ? err.message : String(err)) || "unexpected failure"];
    }
    for (const line of lines) process.stderr.write(`counterpart: ${line}\n`);
    if (program.opts<OutputOptions>().json)
      printJson({ error: { exit_code: code, message: lines.join("\n"), ...details } });
    return code;
  }
}
