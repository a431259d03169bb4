// The CLI's two kinds of failure (docs/decisions.md "Operator side"): bad input, exit 2, and anything else,
// exit 1. Each carries the line(s) printed on stderr after "counterpart: "; nothing prints a stack.

export type ExitCode = 1 | 2;

/**
 * Fields added to the `error` object that --json prints, e.g. the service's status, code and msg
 * for a refused partner request.
 */
export type ErrorDetails = Readonly<Record<string, unknown>>;

export class CliError extends Error {
  readonly exitCode: ExitCode;
  readonly lines: readonly string[];
  readonly details: ErrorDetails;
  constructor(exitCode: ExitCode, lines: string | readonly string[], details: ErrorDetails = {}) {
    const all = typeof lines === "string" ? [lines] : lines;
    super(all.join("\n"));
    this.name = "CliError";
    this.exitCode = exitCode;
    this.lines = all;
    this.details = details;
  }
}

/** Bad input: exit 2. */
export class UsageError extends CliError {
  constructor(lines: string | readonly string[], details?: ErrorDetails) {
    super(2, lines, details);
    this.name = "UsageError";
  }
}

/** Any other failure (service unreachable, refused credentials, 5xx): exit 1. */
export class FailureError extends CliError {
  constructor(lines: string | readonly string[], details?: ErrorDetails) {
    super(1, lines, details);
    this.name = "FailureError";
  }
}

/** A short reason for a file-system error, without the stack or the syscall noise. */
export function fileErrorReason(err: unknown): string {
  const code = (err as NodeJS.ErrnoException | null)?.code;
  switch (code) {
    case "ENOENT":
      return "no such file";
    case "EACCES":
    case "EPERM":
      return "permission denied";
    case "EISDIR":
      return "is a directory";
    case "ENOTDIR":
      return "a parent is not a directory";
    case "EEXIST":
      return "already exists";
  }
  return err instanceof Error ? err.message : String(err);
}

/** Why fetch failed: the socket error's code (ECONNREFUSED, ENOTFOUND) or the timeout `timeoutMs`. */
export function networkReason(err: unknown, timeoutMs: number): string {
  if (err instanceof Error && (err.name === "TimeoutError" || err.name === "AbortError")) {
    return `no answer within ${timeoutMs / 1000} s`;
  }
  const cause = (err as { cause?: { code?: unknown; message?: unknown } } | null)?.cause;
  if (typeof cause?.code === "string") return cause.code;
  if (typeof cause?.message === "string") return cause.message;
  return err instanceof Error ? err.message : String(err);
}
