// The error catalog and docs/errors.md say the same thing, row for row.

import assert from "node:assert/strict";
import fs from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { errorBody, errorCatalog, errorNames } from "./errors.ts";

const docPath = path.resolve(import.meta.dirname, "../../../docs/errors.md");

function documentedRows(): Map<string, { code: number; status: number; msg: string }> {
  const rows = new Map<string, { code: number; status: number; msg: string }>();
  for (const line of fs.readFileSync(docPath, "utf8").split("\n")) {
    const cells = line.split("|").map((c) => c.trim());
    if (cells.length < 6 || !/^[a-z_]+$/.test(cells[1] ?? "") || !/^\d+$/.test(cells[2] ?? "")) continue;
    rows.set(cells[1]!, { code: Number(cells[2]), status: Number(cells[3]), msg: cells[4]! });
  }
  return rows;
}

test("docs/errors.md lists exactly the catalog, with the same code, status and message", () => {
  const rows = documentedRows();
  assert.deepEqual([...rows.keys()].sort(), [...errorNames].sort());
  for (const name of errorNames) {
    const { code, status, msg } = errorCatalog[name];
    assert.deepEqual(rows.get(name), { code, status, msg }, name);
  }
});

test("the contract's application codes map to the contract's HTTP statuses", () => {
  for (const name of errorNames) {
    const { code, status } = errorCatalog[name];
    if (code >= 1000) assert.equal(status, code === 2020 ? 409 : 400, name);
    else assert.equal(status, code, name);
  }
});

test("errorBody builds {code, msg, msg_detail} with a null detail by default", () => {
  assert.deepEqual(errorBody("invalid_client"), { code: 2008, msg: "Invalid client ID", msg_detail: null });
  assert.deepEqual(errorBody("validation_error", [{ loc: ["body"], msg: "x", type: "missing" }]).msg_detail, [
    { loc: ["body"], msg: "x", type: "missing" },
  ]);
});
