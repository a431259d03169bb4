// A CommonJS project: require() of the ES module package (Node 20.19+, 22.12+, 24).
const assert = require("node:assert/strict");
const sdk = require("@counterpart/sdk");

assert.equal(typeof sdk.Counterpart, "function");
assert.equal(sdk.toMoney("1.0E-7"), 10n);
process.stdout.write(`${JSON.stringify({ ok: true, node: process.version })}\n`);
