// Package dispatch is the turn engine: it executes prepared attempts on the
// selected harness — one turn at a time per session, on the session's bound
// app-server or the least-loaded ready one, never replaying a turn that
// reached a harness (DESIGN.md §4, §5). This session of work holds its
// building blocks: server choice and the per-session lock.
package dispatch
