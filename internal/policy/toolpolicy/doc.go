// Package toolpolicy holds OpenClaw's core tool catalog and the rule that decides
// whether a prepared turn's tool policy restricts tools
// (docs/design/contract-rules.md, rule 6).
//
// The rule, in short: a turn is restricted when any explicit layer narrows tools —
// a finite allowlist, a deny, toolsAllow: [] or disableTools — when a declared native
// tool is not allowed by the effective profile, or when the host already prepared
// pluginHarnessToolPolicyRestricted. A harness that declares support Exact may also
// declare a safe-deny list: a deny layer then stays unrestricted only when every
// expanded name is a known core tool id in that list. Everything else — wildcards,
// unknown names, groups with a member outside the list, unknown profiles — fails
// closed, so a new tool can never silently relax the policy boundary.
//
// The package is pure: the catalog is compiled in from
// reference/openclaw-tool-catalog.tsv (openclaw 2026.9.6), nothing is read at run
// time, and no package state is ever written after initialisation.
package toolpolicy
