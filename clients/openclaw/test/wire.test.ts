import { test } from "node:test";
import assert from "node:assert/strict";
import { readFile } from "node:fs/promises";

// The generator is a plain module outside the compiled tree (it needs
// json-schema-to-typescript, never the plugin): loaded from the source.
type WireTs = { SCHEMA: URL; OUTPUT: URL; wireTs(schemaText: string): Promise<string> };

test("src/wire.ts is what json-schema-to-typescript makes of the committed schema", async () => {
  const gen = (await import(new URL("../../scripts/wire-ts.mjs", import.meta.url).href)) as WireTs;
  const want = await gen.wireTs(await readFile(gen.SCHEMA, "utf8"));
  const got = await readFile(gen.OUTPUT, "utf8");
  assert.ok(want.includes("export type ErrorCode ="), "the schema compiles to the wire types");
  assert.ok(
    got === want,
    `clients/openclaw/src/wire.ts differs from internal/contract/wire/wire.schema.json: run make generate-wire (do not edit wire.ts by hand)`,
  );
});
