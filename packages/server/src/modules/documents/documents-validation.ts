// What an upload must hold (docs/decisions.md, "Documents"): a `type` from the enum, a front file,
// perhaps a back file, each at most 5 MiB and, judged by its content (never by its name or
// declared type), a JPEG, PNG, HEIC, HEIF or PDF: the first bytes name the format, and the file
// must then be a whole file of it (file-formats.ts). Every problem is a 422 at ["body", field].

import { documentTypes, type FieldError } from "@counterpart/protocol";
import { fileTypeFromBuffer } from "file-type";
import { limits } from "../../config/limits.ts";
import type { DocumentContentType, DocumentType } from "../../db/schema.ts";
import { checkString } from "../../platform/text.ts";
import { wholeFileProblem } from "./file-formats.ts";

export { documentTypes } from "@counterpart/protocol";

export const acceptedTypes: readonly DocumentContentType[] = [
  "image/jpeg",
  "image/png",
  "image/heic",
  "image/heif",
  "application/pdf",
];

const formatNames: Record<DocumentContentType, string> = {
  "image/jpeg": "JPEG",
  "image/png": "PNG",
  "image/heic": "HEIC",
  "image/heif": "HEIF",
  "application/pdf": "PDF",
};

export interface CheckedFile {
  bytes: Buffer;
  contentType: DocumentContentType;
}

export interface CheckedUpload {
  type: DocumentType;
  front: CheckedFile;
  back: CheckedFile | null;
}

/** A text field of the upload, as the multipart parser hands it over (http/multipart.ts). */
export interface UploadField {
  name: string;
  value: string;
  /** The value was longer than the field limit and was cut. */
  truncated: boolean;
}

/** A file of the upload, as the multipart parser hands it over. */
export interface UploadFile {
  name: string;
  bytes: Buffer;
  /** The file was longer than the file limit: `bytes` holds only its first part. */
  truncated: boolean;
}

export type UploadCheck = { ok: true; upload: CheckedUpload } | { ok: false; errors: FieldError[] };

const quotedTypes = documentTypes.map((t) => `'${t}'`);
const typeEnumMsg = `Input should be ${quotedTypes.slice(0, -1).join(", ")} or ${quotedTypes.at(-1)}`;

/** The format of a file as its bytes show it, when it is one of the accepted ones. */
export async function sniff(bytes: Buffer): Promise<DocumentContentType | null> {
  if (bytes.length === 0) return null;
  const found = await fileTypeFromBuffer(bytes);
  const mime = found?.mime as DocumentContentType | undefined;
  return mime !== undefined && acceptedTypes.includes(mime) ? mime : null;
}

function checkType(fields: UploadField[], files: UploadFile[]): { type?: DocumentType; error?: FieldError } {
  const loc = ["body", "type"];
  const given = fields.filter((f) => f.name === "type");
  if (given.length === 0) {
    if (files.some((f) => f.name === "type")) {
      return { error: { loc, msg: "Input should be a valid string", type: "string_type" } };
    }
    return { error: { loc, msg: "Field required", type: "missing" } };
  }
  if (given.length > 1) return { error: { loc, msg: "Field should be sent once", type: "value_error" } };
  const value = given[0]!.value;
  const problem = checkString(value, loc);
  if (problem !== null) return { error: problem };
  if (!(documentTypes as readonly string[]).includes(value) || given[0]!.truncated) {
    return { error: { loc, msg: typeEnumMsg, type: "enum" } };
  }
  return { type: value as DocumentType };
}

async function checkFile(
  name: "front_file" | "back_file",
  fields: UploadField[],
  files: UploadFile[],
): Promise<{ file: CheckedFile | null; error?: FieldError }> {
  const loc = ["body", name];
  const given = files.filter((f) => f.name === name);
  if (given.length === 0) {
    if (fields.some((f) => f.name === name)) {
      return {
        file: null,
        error: { loc, msg: "Expected a file upload, received a text field", type: "value_error" },
      };
    }
    if (name === "back_file") return { file: null };
    return { file: null, error: { loc, msg: "Field required", type: "missing" } };
  }
  if (given.length > 1)
    return { file: null, error: { loc, msg: "Field should be sent once", type: "value_error" } };
  const file = given[0]!;
  if (file.truncated) {
    return {
      file: null,
      error: {
        loc,
        msg: `File should be at most ${limits.documentFileBytesMax} bytes`,
        type: "file_too_large",
      },
    };
  }
  const contentType = await sniff(file.bytes);
  if (contentType === null) {
    return {
      file: null,
      error: {
        loc,
        msg: "File should be a JPEG, PNG, HEIC, HEIF or PDF document (judged by its content)",
        type: "file_type",
      },
    };
  }
  const problem = wholeFileProblem(contentType, file.bytes);
  if (problem !== null) {
    return {
      file: null,
      error: {
        loc,
        msg: `File should be a whole ${formatNames[contentType]} file: ${problem}`,
        type: "file_invalid",
      },
    };
  }
  return { file: { bytes: file.bytes, contentType } };
}

/** Every field error of an upload at once, or the upload ready to store. */
export async function checkUpload(fields: UploadField[], files: UploadFile[]): Promise<UploadCheck> {
  const type = checkType(fields, files);
  const front = await checkFile("front_file", fields, files);
  const back = await checkFile("back_file", fields, files);
  const errors = [type.error, front.error, back.error].filter((e): e is FieldError => e !== undefined);
  if (errors.length > 0 || type.type === undefined || front.file === null) return { ok: false, errors };
  return { ok: true, upload: { type: type.type, front: front.file, back: back.file } };
}
