// Document uploads: a multipart body the SDK writes itself, so the bytes signed are the bytes sent,
// and a body any multipart parser reads back into the fields the contract names.

import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { canonicalString, decodeSignature, parsePublicKey, verifySignature } from "@counterpart/protocol";
import { multipartBody } from "./multipart.ts";
import { fakeClient, keys, ok, type Recorded } from "./test-fakes.ts";

const png = Uint8Array.from([
  0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d, 0x49, 0x48, 0x44, 0x52, 0xff, 0x00,
]);
const pdf = new TextEncoder().encode("%PDF-1.7\n%\u00e2\u00e3\n--not-a-boundary\r\n");

/** The body as a platform parser (undici's FormData) reads it. */
async function formOf(r: Recorded): Promise<FormData> {
  assert.ok(r.body instanceof Uint8Array);
  return new Request("http://x/", {
    method: "POST",
    headers: { "content-type": r.headers["content-type"] ?? "" },
    body: r.body,
  }).formData();
}

describe("documents.upload", () => {
  test("type, front_file and back_file as multipart, signed over the exact bytes sent", async () => {
    const fake = fakeClient(() => ok({ result: { id: 1 } }, 201));
    const document = await fake.client.documents.upload("client-1", {
      type: "government_id",
      front: { data: png, filename: "front.png", contentType: "image/png" },
      back: { data: pdf },
    });
    assert.deepEqual(document, { id: 1 });
    const [r] = fake.requests;
    assert.ok(r);
    assert.equal(r.method, "POST");
    assert.equal(r.target, "/v1/partner/clients/client-1/documents");
    assert.match(
      r.headers["content-type"] ?? "",
      /^multipart\/form-data; boundary=----CounterpartBoundary[0-9a-f]{32}$/,
    );

    const key = parsePublicKey(keys.publicKeyPem);
    assert.ok(key.ok);
    const canonical = canonicalString({
      timestamp: r.headers["X-Timestamp"]!,
      method: "POST",
      path: r.target,
      body: r.body,
    });
    assert.ok(verifySignature(key.key, canonical, decodeSignature(r.headers["X-Signature"]!)!));
    const tampered = Buffer.from(r.body as Uint8Array);
    tampered.writeUInt8(tampered.readUInt8(tampered.length - 10) ^ 1, tampered.length - 10);
    const other = canonicalString({
      timestamp: r.headers["X-Timestamp"]!,
      method: "POST",
      path: r.target,
      body: tampered,
    });
    assert.equal(verifySignature(key.key, other, decodeSignature(r.headers["X-Signature"]!)!), false);

    const form = await formOf(r);
    assert.equal(form.get("type"), "government_id");
    const front = form.get("front_file");
    const back = form.get("back_file");
    assert.ok(front instanceof File && back instanceof File);
    assert.equal(front.name, "front.png");
    assert.equal(front.type, "image/png");
    assert.deepEqual(new Uint8Array(await front.arrayBuffer()), png);
    assert.equal(back.name, "back_file");
    assert.equal(back.type, "application/octet-stream");
    assert.deepEqual(new Uint8Array(await back.arrayBuffer()), pdf);
  });

  test("without a back file, only type and front_file are sent", async () => {
    const fake = fakeClient(() => ok({ result: { id: 2 } }, 201));
    await fake.client.documents.upload("c 1", { type: "proof_of_address", front: { data: pdf } });
    const form = await formOf(fake.requests[0]!);
    assert.deepEqual([...form.keys()], ["type", "front_file"]);
    assert.equal(fake.requests[0]?.target, "/v1/partner/clients/c%201/documents");
  });

  test("filenames cannot break out of their header", async () => {
    const { body, contentType } = multipartBody(
      [{ name: "front_file", data: png, filename: 'a"b\r\nX-Evil: 1.png', contentType: "image/png\r\nX: y" }],
      "b0undary",
    );
    const text = Buffer.from(body).toString("latin1");
    assert.match(text, /filename="a%22b%0D%0AX-Evil: 1\.png"\r\nContent-Type: image\/pngX: y\r\n\r\n/);
    assert.equal(contentType, "multipart/form-data; boundary=b0undary");
    assert.throws(() => multipartBody([{ name: "type", value: "x--b0undary" }], "b0undary"), /no boundary/);
  });

  test("a file that is not bytes is refused before sending", async () => {
    const fake = fakeClient(() => ok({ result: {} }, 201));
    await assert.rejects(
      fake.client.documents.upload("c", {
        type: "government_id",
        front: { data: "front.png" as unknown as Uint8Array },
      }),
      /front_file: data must be the file's bytes/,
    );
    assert.equal(fake.requests.length, 0);
  });
});
