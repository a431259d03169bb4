// The document as its endpoints return it (spec §2.2), with fresh signed links to its files.

import { Type } from "typebox";
import { documentTypes } from "./documents-validation.ts";

export const DocumentSchema = Type.Object({
  id: Type.Integer(),
  type: Type.Enum(documentTypes),
  front_file: Type.String({ format: "uri" }),
  back_file: Type.Union([Type.String({ format: "uri" }), Type.Null()]),
  created_at: Type.String({ format: "date-time" }),
});

export interface DocumentView {
  id: number;
  type: (typeof documentTypes)[number];
  front_file: string;
  back_file: string | null;
  created_at: string;
}
