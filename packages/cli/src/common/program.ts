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
    'print JSON on stdout instead of text: one object (events tail: one line per event); a failure: {"error": {...}}',
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

/**
 * The first word of `argv` that names no command where a command is expected, when `argv` asks for
 * help. Commander prints the help of the deepest command it recognised (exit 0) before it checks
 * the words after it, so `counterpart partner create --help` in the partner CLI, which has no
 * `partner`, showed the root help as if the command existed. Options at these levels take no value
 * (--json, --help, --version), so every other word is a command name.
 */
function unknownCommandAskedForHelp(program: Command, argv: readonly string[]): string | null {
  if (!argv.some((a) => a === "--help" || a === "-h")) return null;
  let command = program;
  for (const arg of argv) {
    if (arg === "--") return null;
    if (arg.startsWith("-")) continue;
    if (command.commands.length === 0) return null;
    const sub = command.commands.find((c) => c.name() === arg || c.aliases().includes(arg));
    if (sub === undefined) return arg === "help" ? null : arg;
    command = sub;
  }
  return null;
}

/** Parses and runs `argv` with the program `build` makes; resolves to the exit code. */
export async function runProgram(
  argv: string[],
  build: (setExit: (code: 0 | 1 | 2) => void) => Command,
): Promise<number> {
  let exitCode = 0;
  const program = build((code) => {
    exitCode = code;
  });
  try {
    const unknown = unknownCommandAskedForHelp(program, argv);
    if (unknown !== null) throw new CliError(2, `unknown command '${unknown}'`);
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
