// docs/decisions.md "Authentication": a failure takes no measurably different path for an unknown partner,
// and the credentials a process keeps never stand in for the partner's row. The measurable part of
// the path is the database: these tests count the statements each kind of request costs.

import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { generateKeyPair, signRequest } from "@counterpart/protocol";
import type { KyselyPlugin } from "kysely";
import { chooseVerifier, type SignatureVerifier } from "../../platform/signature-verifier.ts";
import { startTestContext, type TestContext, testNote } from "../../testing/harness.ts";
import { CredentialCheck, PartnerAuthenticator, type SignedRequest } from "./partner-auth.ts";
import { credentialsColumn } from "./partners-store.ts";

describe("partner authentication, statement by statement", () => {
  let ctx: TestContext;
  let statements = 0;
  const counting: KyselyPlugin = {
    transformQuery: (args) => {
      statements++;
      return args.node;
    },
    transformResult: async (args) => args.result,
  };
  before(async () => {
    ctx = await startTestContext();
  });
  after(async () => {
    await ctx.close();
  });

  /** A fresh authenticator (a process that has read no partner yet) on a counting database. */
  const fresh = () => new PartnerAuthenticator(ctx.services.database.db.withPlugin(counting), ctx.clock);

  function request(
    partnerId: string,
    privateKeyPem: string,
    method: "GET" | "POST",
    body = "",
  ): SignedRequest {
    const target = method === "GET" ? "/v1/partner/asset-pairs" : "/v1/partner/deposits";
    ctx.clock.advance(1);
    const h = signRequest({
      partnerId,
      privateKey: privateKeyPem,
      method,
      target,
      body,
      nowMs: ctx.clock.nowMs(),
    });
    return {
      partnerId: h["X-Partner-ID"],
      timestamp: h["X-Timestamp"],
      signature: h["X-Signature"],
      method,
      target,
      routed: true,
      body: Buffer.from(body),
      clientIp: "127.0.0.1",
    };
  }

  async function cost(auth: PartnerAuthenticator, req: SignedRequest) {
    statements = 0;
    const result = await auth.authenticate(req);
    return { result: result.ok ? "ok" : result.cause, statements };
  }

  test("an unknown partner and a known one with a wrong signature cost one statement each, cold or not", async () => {
    const stranger = generateKeyPair();
    const unknownId = "5d0c61c9-3f7e-4d1a-9a38-2f1b6f7e0c11";
    for (const method of ["GET", "POST"] as const) {
      const auth = fresh();
      const unknown = () => cost(auth, request(unknownId, stranger.privateKeyPem, method, "{}"));
      const forged = () => cost(auth, request(ctx.partner.id, stranger.privateKeyPem, method, "{}"));
      assert.deepEqual(await unknown(), { result: "unknown_partner", statements: 1 }, `${method} unknown`);
      assert.deepEqual(
        await unknown(),
        { result: "unknown_partner", statements: 1 },
        `${method} unknown again`,
      );
      assert.deepEqual(
        await forged(),
        { result: "signature_mismatch", statements: 1 },
        `${method} forged, cold`,
      );
      assert.deepEqual(
        await forged(),
        { result: "signature_mismatch", statements: 1 },
        `${method} forged, kept`,
      );
    }
  });

  test("an accepted POST costs one statement once the process has read its partner; a GET always one", async () => {
    const auth = fresh();
    const post = () => cost(auth, request(ctx.partner.id, ctx.partner.privateKeyPem, "POST", '{"a":1}'));
    const get = () => cost(auth, request(ctx.partner.id, ctx.partner.privateKeyPem, "GET"));
    assert.deepEqual(await post(), { result: "ok", statements: 2 }, "first: read the row, then record");
    assert.deepEqual(await post(), { result: "ok", statements: 1 }, "then: read and record in one");
    assert.deepEqual(await get(), { result: "ok", statements: 1 });
    const replayed = request(ctx.partner.id, ctx.partner.privateKeyPem, "POST", '{"a":2}');
    assert.deepEqual(await cost(auth, replayed), { result: "ok", statements: 1 });
    assert.deepEqual(await cost(auth, replayed), { result: "replay", statements: 1 });
  });

  test("a refusal costs three verifications whoever asks; an acceptance stops at the key that verifies", async () => {
    const p = await ctx.addPartner({ name: "Partner of the verification count" });
    const second = generateKeyPair();
    const third = generateKeyPair();
    ctx.clock.advance(1_000);
    assert.ok((await ctx.services.partners.addKey(p.id, "second", second.publicKeyPem, testNote)).ok);
    ctx.clock.advance(1_000);
    assert.ok((await ctx.services.partners.addKey(p.id, "third", third.publicKeyPem, testNote)).ok);
    const { verifier } = chooseVerifier("auto");
    let verifications = 0;
    const counting: SignatureVerifier = {
      library: verifier.library,
      verify(key, message, signature) {
        verifications++;
        return verifier.verify(key, message, signature);
      },
    };
    const auth = new PartnerAuthenticator(ctx.services.database.db, ctx.clock, null, counting);
    const count = async (req: SignedRequest) => {
      verifications = 0;
      const result = await auth.authenticate(req);
      return { result: result.ok ? "ok" : result.cause, verifications };
    };
    const stranger = generateKeyPair();
    const unknownId = "0b5f2f6e-8d1c-4f53-a1d7-6c1e3f9b2a40";
    // The partner's keys are tried newest first.
    assert.deepEqual(await count(request(p.id, third.privateKeyPem, "GET")), {
      result: "ok",
      verifications: 1,
    });
    assert.deepEqual(await count(request(p.id, second.privateKeyPem, "GET")), {
      result: "ok",
      verifications: 2,
    });
    assert.deepEqual(await count(request(p.id, p.privateKeyPem, "GET")), { result: "ok", verifications: 3 });
    assert.deepEqual(await count(request(p.id, stranger.privateKeyPem, "GET")), {
      result: "signature_mismatch",
      verifications: 3,
    });
    assert.deepEqual(await count(request(ctx.partner.id, stranger.privateKeyPem, "GET")), {
      result: "signature_mismatch",
      verifications: 3,
    });
    assert.deepEqual(await count(request(unknownId, stranger.privateKeyPem, "GET")), {
      result: "unknown_partner",
      verifications: 3,
    });
  });

  test("the credentials a process keeps are frozen: what it derives from them cannot go stale", async () => {
    const read: object[] = [];
    const capturing: KyselyPlugin = {
      transformQuery: (args) => args.node,
      transformResult: async (args) => {
        read.push(...(args.result.rows as object[]));
        return args.result;
      },
    };
    const auth = new PartnerAuthenticator(ctx.services.database.db.withPlugin(capturing), ctx.clock);
    const get = () => auth.authenticate(request(ctx.partner.id, ctx.partner.privateKeyPem, "GET"));
    assert.equal((await get()).ok, true);
    const kept = read.find((row) => "allowed_ips" in row) as { allowed_ips: string[]; public_keys: string[] };
    assert.ok(kept !== undefined, "the partner's row was read");
    assert.ok(
      Object.isFrozen(kept) && Object.isFrozen(kept.allowed_ips) && Object.isFrozen(kept.public_keys),
    );
    assert.throws(() => kept.allowed_ips.push("0.0.0.0/0"), TypeError);
    assert.throws(() => {
      kept.public_keys[0] = "another key";
    }, TypeError);
    assert.equal((await get()).ok, true);
  });

  test("kept credentials never decide alone: a change in the row is seen by the next request", async () => {
    const p = await ctx.addPartner({ name: "Partner of the counting test" });
    const auth = fresh();
    const post = (key = p.privateKeyPem) => cost(auth, request(p.id, key, "POST", "{}"));
    assert.deepEqual(await post(), { result: "ok", statements: 2 });
    await ctx.services.partners.setActive(p.id, false, testNote);
    assert.deepEqual(await post(), { result: "inactive_partner", statements: 1 });
    await ctx.services.partners.setActive(p.id, true, testNote);
    // Judged by the disabled row it kept: read again, judged again, then recorded.
    assert.deepEqual(await post(), { result: "ok", statements: 2 });
    const next = generateKeyPair();
    assert.ok((await ctx.services.partners.setKey(p.id, next.publicKeyPem, testNote)).ok);
    assert.deepEqual(await post(next.privateKeyPem), { result: "ok", statements: 2 });
    assert.deepEqual(await post(p.privateKeyPem), { result: "signature_mismatch", statements: 1 });
    assert.deepEqual(await post(next.privateKeyPem), { result: "ok", statements: 1 });
  });

  test("a target that is not what was routed, or not plain visible ASCII, is refused before any statement", async () => {
    const auth = fresh();
    const ok = request(ctx.partner.id, ctx.partner.privateKeyPem, "GET");
    assert.deepEqual(await cost(auth, { ...ok, routed: false }), {
      result: "path_not_routed",
      statements: 0,
    });
    for (const target of [
      "/v1/partner/asset-pairs#x",
      "/v1/partner/asset-pairs\u00e9",
      "/v1/partner/asset pairs",
    ]) {
      assert.deepEqual(await cost(auth, { ...ok, target }), { result: "bad_path", statements: 0 }, target);
    }
    assert.deepEqual(await cost(auth, ok), { result: "ok", statements: 1 });
  });
  test("a read judged by credentials since replaced is judged by the text its statement carried, even a text seen before", async () => {
    const p = await ctx.addPartner({ name: "Witnessed text" });
    const auth = fresh();
    /** The credentials' text as a witnessed read's statement carries it now. */
    const carried = async () =>
      (await ctx.services.database.db.selectNoFrom(credentialsColumn(p.id).as("c")).executeTakeFirstOrThrow())
        .c;
    const pending = async (key: string) => {
      const r = await auth.authenticate(request(p.id, key, "GET"), { provisional: true });
      assert.ok(r.ok && r.pending instanceof CredentialCheck, "accepted by the kept credentials, pending");
      return r.pending;
    };
    assert.equal((await auth.authenticate(request(p.id, p.privateKeyPem, "GET"))).ok, true);
    const first = await pending(p.privateKeyPem);
    first.observe(await carried());
    assert.equal((await first.settle()).ok, true);
    // Judged by the old key, its statement not yet run, when the key is replaced.
    const stale = await pending(p.privateKeyPem);
    const next = generateKeyPair();
    assert.ok((await ctx.services.partners.setKey(p.id, next.publicKeyPem, testNote)).ok);
    // This process learns the new key (a read refused by the kept key, judged by the row), and a
    // read of the new key's sees the new text.
    assert.equal(
      (await auth.authenticate(request(p.id, next.privateKeyPem, "GET"), { provisional: true })).ok,
      true,
    );
    const fresher = await pending(next.privateKeyPem);
    const text = await carried();
    fresher.observe(text);
    assert.equal((await fresher.settle()).ok, true);
    // The stale read's statement carries that same text: the old key is refused by it.
    stale.observe(text);
    assert.deepEqual(await stale.settle(), { ok: false, cause: "signature_mismatch" });
  });
});
