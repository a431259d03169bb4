// The document as its endpoints return it (docs/decisions.md, "Documents"), with fresh signed
// links to its files.

import { type Static, Type } from "typebox";
import { pageSchema } from "../../platform/wire-schemas.ts";
import { documentTypes } from "./documents-validation.ts";

export const DocumentSchema = Type.Object(
  {
    id: Type.Integer(),
    type: Type.Enum(documentTypes),
    front_file: Type.String({ format: "uri" }),
    back_file: Type.Union([Type.String({ format: "uri" }), Type.Null()]),
    created_at: Type.String({ format: "date-time" }),
  },
  { $id: "Document" },
);

export type DocumentView = Static<typeof DocumentSchema>;

export const DocumentPageSchema = pageSchema("DocumentPage", DocumentSchema);
export type DocumentPage = Static<typeof DocumentPageSchema>;
