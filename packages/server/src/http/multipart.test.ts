// The multipart parser on its own (docs/decisions.md, "Documents"): a body cut at any byte is
// refused as malformed, never thrown where nobody listens; a whole body is read back exactly.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { multipartBody, sampleFile } from "../testing/fixtures.ts";
import { parseMultipart } from "./multipart.ts";

const bounds = { fileBytesMax: 4096, filesMax: 2, fieldsMax: 10, fieldBytesMax: 1024 };

describe("parseMultipart", () => {
  const front = sampleFile("png", 300);
  const back = sampleFile("pdf", 400);
  const { body, contentType } = multipartBody([
    { name: "type", data: "government_id" },
    { name: "front_file", filename: "f.png", contentType: "image/png", data: front },
    { name: "back_file", filename: "b.pdf", data: back },
  ]);
  const closingEnd = body.length - 2; // the closing delimiter's last dash; its CRLF is optional

  test("a whole body: the fields and the files, byte for byte", async () => {
    const parsed = await parseMultipart(body, contentType, bounds);
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.fields, [{ name: "type", value: "government_id", truncated: false }]);
    assert.deepEqual(
      parsed.files.map((f) => [f.name, f.truncated]),
      [
        ["front_file", false],
        ["back_file", false],
      ],
    );
    assert.ok(parsed.files[0]!.bytes.equals(front));
    assert.ok(parsed.files[1]!.bytes.equals(back));
  });

  test("the body cut after every byte before its closing delimiter is malformed, without an uncaught error", async () => {
    const uncaught: unknown[] = [];
    const onUncaught = (err: unknown) => uncaught.push(err);
    process.on("uncaughtException", onUncaught);
    try {
      for (let cut = 0; cut < closingEnd; cut++) {
        const parsed = await parseMultipart(body.subarray(0, cut), contentType, bounds);
        assert.deepEqual(parsed, { ok: false, failure: "malformed" }, `cut at ${cut} of ${body.length}`);
      }
      // Errors the parser emits late would arrive on the next turns of the event loop.
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setTimeout(resolve, 10));
    } finally {
      process.off("uncaughtException", onUncaught);
    }
    assert.deepEqual(uncaught, []);
    assert.ok((await parseMultipart(body.subarray(0, closingEnd), contentType, bounds)).ok);
  });

  test("a file over the limit is kept cut and marked; a body cut inside such a file is still malformed", async () => {
    const small = { ...bounds, fileBytesMax: 100 };
    const parsed = await parseMultipart(body, contentType, small);
    assert.ok(parsed.ok);
    assert.deepEqual(
      parsed.files.map((f) => [f.bytes.length, f.truncated]),
      [
        [100, true],
        [100, true],
      ],
    );
    const inside = body.indexOf(back) + 200;
    assert.deepEqual(await parseMultipart(body.subarray(0, inside), contentType, small), {
      ok: false,
      failure: "malformed",
    });
  });

  test("not multipart, no boundary, another boundary than the body's", async () => {
    assert.deepEqual(await parseMultipart(body, "application/json", bounds), {
      ok: false,
      failure: "not_multipart",
    });
    assert.deepEqual(await parseMultipart(body, undefined, bounds), { ok: false, failure: "not_multipart" });
    assert.deepEqual(await parseMultipart(body, "multipart/form-data", bounds), {
      ok: false,
      failure: "malformed",
    });
    assert.deepEqual(await parseMultipart(body, "multipart/form-data; boundary=another", bounds), {
      ok: false,
      failure: "malformed",
    });
  });

  test("an empty or over-long boundary is a malformed body, not missing fields", async () => {
    for (const contentType of [
      "multipart/form-data; boundary=",
      'multipart/form-data; boundary=""',
      "multipart/form-data; boundary= ; charset=utf-8",
      `multipart/form-data; boundary=${"b".repeat(71)}`,
    ]) {
      assert.deepEqual(
        await parseMultipart(body, contentType, bounds),
        { ok: false, failure: "malformed" },
        contentType,
      );
    }
  });
});
