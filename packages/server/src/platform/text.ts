// The rule every text input meets, whichever way it arrives (a JSON body, a query string, a
// multipart field): no NUL character and well-formed Unicode.

import type { FieldError } from "@counterpart/protocol";

export function checkString(value: string, loc: (string | number)[]): FieldError | null {
  if (value.includes("\u0000")) {
    return { loc, msg: "String should not contain NUL characters", type: "string_nul" };
  }
  if (!value.isWellFormed()) {
    return {
      loc,
      msg: "Input should be a valid string, unable to parse raw data as a unicode string",
      type: "string_unicode",
    };
  }
  return null;
}
