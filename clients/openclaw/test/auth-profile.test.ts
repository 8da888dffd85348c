import { test } from "node:test";
import assert from "node:assert/strict";

import { type AuthProfileInput, type ResolveKey, forwardedAuthProfile } from "../src/auth-profile.js";

const KEY = "sk-auth-profile-test-key";

function input(extra: Record<string, unknown>, profiles: Record<string, unknown> = { "openai:work": { type: "api_key", provider: "openai", key: KEY } }): AuthProfileInput {
  return {
    runtimePlan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai", forwardedAuthProfileId: "openai:work" } },
    authProfileStore: { version: 1, profiles },
    agentDir: "/agents/main/agent",
    ...extra,
  } as unknown as AuthProfileInput;
}

// A resolver that records its calls and answers from the store (OpenClaw's
// own reads its keyRef/tokenRef, refreshes OAuth and needs the state dir).
function resolver(answer?: (id: string) => string | undefined): { resolve: ResolveKey; calls: string[] } {
  const calls: string[] = [];
  const resolve = (async (params: Parameters<ResolveKey>[0]) => {
    calls.push(params.profileId);
    assert.equal(params.allowProfileFallback, false, "never another profile than OpenClaw's");
    const key = answer?.(params.profileId);
    return key === undefined ? null : { apiKey: key, provider: "openai", profileId: params.profileId, profileType: "api_key" };
  }) as ResolveKey;
  return { resolve, calls };
}

test("no profile forwarded: nothing is sent, nothing resolved, even with an attempt-level profile id", async () => {
  const r = resolver(() => KEY);
  const p = input({ runtimePlan: { auth: { providerForAuth: "openai", authProfileProviderForAuth: "openai" } }, authProfileId: "openai:work", resolvedApiKey: KEY });
  assert.equal(await forwardedAuthProfile(p, r.resolve), undefined);
  assert.equal(await forwardedAuthProfile(input({ runtimePlan: undefined }), r.resolve), undefined);
  assert.deepEqual(r.calls, []);
});

test("the forwarded profile's key is the attempt's resolved key when OpenClaw resolved it for that profile", async () => {
  const r = resolver(() => "sk-from-store");
  const got = await forwardedAuthProfile(input({ authProfileId: "openai:work", resolvedApiKey: ` ${KEY} ` }), r.resolve);
  assert.deepEqual(got, { id: "openai:work", apiKey: KEY });
  assert.deepEqual(r.calls, []);
});

test("otherwise the key is resolved from the attempt's scoped store, for that profile only", async () => {
  const r = resolver((id) => (id === "openai:work" ? "sk-from-store" : undefined));
  // The resolved key belongs to another profile: not this one's.
  const got = await forwardedAuthProfile(input({ authProfileId: "openai:other", resolvedApiKey: "sk-other" }), r.resolve);
  assert.deepEqual(got, { id: "openai:work", apiKey: "sk-from-store" });
  assert.deepEqual(r.calls, ["openai:work"]);
});

test("a selected profile whose key cannot be had fails the attempt naming the profile, never falling back to the cluster's credentials", async () => {
  const cases: Array<{ name: string; p: AuthProfileInput; resolve: ResolveKey; want: RegExp }> = [
    { name: "not in the store", p: input({}, {}), resolve: resolver(() => KEY).resolve, want: /has no such profile/ },
    { name: "an OAuth login", p: input({}, { "openai:work": { type: "oauth", provider: "openai", access: "at", refresh: "rt", expires: 1 } }), resolve: resolver(() => KEY).resolve, want: /OAuth login/ },
    { name: "no key", p: input({}), resolve: resolver(() => undefined).resolve, want: /holds no key/ },
    { name: "the resolver fails", p: input({}), resolve: (async () => { throw new Error("secret reference env:OPENAI_WORK is unset"); }) as ResolveKey, want: /could not be resolved: secret reference env:OPENAI_WORK is unset/ },
  ];
  for (const c of cases) {
    await assert.rejects(forwardedAuthProfile(c.p, c.resolve), (err: Error) => {
      assert.match(err.message, /auth profile "openai:work"/, c.name);
      assert.match(err.message, c.want, c.name);
      assert.ok(!err.message.includes(KEY), `${c.name}: the message quotes the key`);
      return true;
    });
  }
});
