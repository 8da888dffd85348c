// Package codex is the codex-app-server adapter: it runs one prepared turn
// (adapter.TurnInput) on one connected `codex app-server`
// (internal/harness/appserver) and reports it in the engine's vocabulary
// (adapter.Event, wire.TurnResult).
//
//	t, err := codex.Start(ctx, client, in, hooks) // policy gate, thread, turn/start
//	res, err := t.Wait(ctx)                       // relay until the turn ends
//	// on a *codex.DetachedError: reconnect to the same server, then
//	// t.Reattach(ctx, newClient) and t.Wait(ctx) again — never replay.
//
// # What the adapter sends
//
// thread/start: the bare model, the session's cwd (created first with
// fs/createDirectory, on the server's filesystem), the approvalPolicy of the
// attempt's approvalMode (never by default), the sandbox the engine chose (danger-full-access in pods, the server's own
// mode when empty), developerInstructions, model_reasoning_effort
// (ReasoningEffort), the offered host tools as dynamicTools, and the turn's
// thread config: IsolationConfig() on a restricted turn, SafeDenyConfig's
// keys otherwise. thread/resume re-sends the same overrides (never an empty
// config, see below). turn/start: the prompt as a text item, images as
// `image` (data: or http(s) URL) or `localImage` (a path on the server; Codex
// reads the file and sends it as a data URL; detail "low" makes Codex drop a
// local image for models without low detail), and collaborationMode plan
// when the attempt asks for it (default again on a thread a plan turn left
// in plan mode).
//
// # Isolated completion and finalization (completion.go)
//
// Complete runs one prompt-only call on an ephemeral thread with no
// dynamic tools, IsolationConfig plus hooks, skills, project docs and the
// permission/environment context off, approval never and a read-only
// sandbox; a frozen transcript is injected before the prompt. A model of
// Codex's catalog is refused (CanIsolate) before any thread. The recorded
// model request is "tools": [] and exactly the caller's input
// (TestIsolatedCompletionOffersNoTools).
//
// # Approvals and user input (requests.go)
//
// Codex's approval requests (commands, file changes, permissions, MCP
// elicitations) and plan mode's request_user_input are relayed to the
// client: an approval_request or user_input_request event with the action's
// facts, Hooks.AnswerApproval / AnswerUserInput until the tool timeout,
// then one request_resolved before Codex is answered. No answer denies (an
// approval) or answers nothing (user input), visibly: request_resolved
// timed_out, then the declined agent_event and tool_terminal.
// approve_for_turn is the adapter's (Codex's acceptForSession would
// outlive the turn). A request Codex re-sends after a reattach is answered
// with the first delivery's resolution, never asked twice
// (TestReattachWithPendingApproval). Which actions Codex asks about per
// mode and sandbox: docs/codex-app-server.md, "Approvals and user input".
//
// # Codex behaviour this package relies on (0.169.0, each pinned by a test)
//
//   - Thread config lives as long as the thread is loaded. A thread/resume
//     with a non-empty config rebuilds it from the server's config plus that
//     config; a resume without config keeps the current one (an earlier
//     turn's isolation, say). Resume overrides apply only when no connection
//     is subscribed to the thread — a subscribed thread is joined as it is.
//     So turns end with thread/unsubscribe, resumes are preceded by one and
//     always carry a config, and a restricted turn whose resume echo shows
//     ignored overrides fails closed (TestRestrictedTurnOffersOnlyHostTools,
//     TestResumeOverridesNeedNoSubscriber). The echo only shows a changed
//     reasoning effort or cwd: a foreign client holding the thread with the
//     same effort goes unnoticed.
//   - Dynamic tools are fixed at thread/start; thread/resume ignores a
//     dynamicTools field. A resumed turn offering fewer host tools than the
//     thread started with leaves the others visible to the model and the
//     adapter refuses calls to them; a host tool added later is not visible
//     to the model at all. Codex itself answers calls to tools the thread
//     never registered (and native tools an isolated thread lacks) with
//     "unsupported call: <name>" without an item, so nothing ran and there
//     is no tool_terminal to report (TestToolsNotOfferedAreRefused). The
//     engine therefore re-seeds when the host tools change: a new thread
//     with the new tools and the old conversation injected
//     (TurnInput.ReseedFrom, Reseed; thread/fork keeps the source's tools).
//   - Native tool isolation (CanIsolate, IsolationConfig) works only for
//     models Codex does not know; catalog models keep apply_patch (and in
//     code mode the MCP-resource helpers); a configured MCP server adds
//     tools even for unknown models unless the thread sets mcp_servers = {}
//     (TestCanIsolateMatchesRecordedRequests).
//   - A closed connection does not end a running turn. Codex delivers a
//     server request still pending (a host tool call) again to the
//     connection that resumes the thread; the adapter asks the client once
//     per call id (TestReattachWithPendingHostTool). Events of the gap are
//     not replayed: items completed meanwhile are read back from
//     thread/turns/list (only completed items are listed), the tail of an
//     assistant message streaming across the gap is sent as one partial
//     when it completes (TestReattachAfterWebSocketDrop). The new
//     connection subscribes before the list is taken, so a message can
//     start and finish in between and arrive both ways: a listed item is
//     completed at once, in list order, and what the connection delivers
//     for it afterwards is ignored — each delta reaches the client once
//     (TestReattachDeliversTheAnswerOnce).
//
// # Plan text (docs/design/contract-rules.md, rule 8)
//
// Codex carries explicit plan text in two places, both reported as
// TurnResult.PlanText and as agent_events on the plan stream:
//
//   - `plan` items (item/started, item/plan/delta, item/completed with
//     `text`): the <proposed_plan> block of a turn in plan collaboration mode
//     (turn/start collaborationMode {"mode":"plan"}), removed from the
//     assistant message. A plan-mode answer that is only a plan has no
//     agentMessage at all, so the turn classifies planning-only
//     (TestClassification). A turn runs in plan mode when its attempt says
//     collaborationMode plan.
//   - turn/plan/updated (explanation + steps of the update_plan tool),
//     rendered as "- [status] step" lines. Codex 0.169.0 does not offer
//     update_plan to models it does not know ("unsupported call:
//     update_plan"), so this path is not exercised against the stub.
//
// Assistant prose is never read as plan text.
//
// # Usage and media
//
// Usage is the difference of thread/tokenUsage/updated totals across the
// turn (each model request reports the thread's running total). Host tool
// media (ToolAnswer.MediaURLs) go to ToolMediaURLs.
//
// An image Codex generates is delivered from its item. Codex 0.169.0 runs
// its image tool itself (the function imagegen in the namespace image_gen:
// it calls the Images API, POST …/images/generations, on its provider's
// base URL), and the imageGeneration item it completes carries the image as
// `result`, the base64 the API returned (Codex also saves it as savedPath
// on the app-server's filesystem, which no gateway can fetch and the
// adapter never reads). deliverImage decodes it (media.go): at most
// wire.NativeMediaMaxBytes, recognised from its bytes as PNG, JPEG, WebP or
// GIF. A delivered image is one `media` event (wire.NativeMedia: the base64
// travels once; the tool agent_events' raw item leaves `result` out), named
// by its native-media: URL in ToolMediaURLs and HostOwnedToolMediaURLs — an
// artifact the runtime created and persisted itself. An image that cannot
// be delivered is a warning agent_event (phase refused) with the reason;
// the tool result's transcript text says which it was. The bytes are
// bounded before they arrive by the connection's message limit
// (appserver.DefaultMaxMessageBytes), which Codex's notification must fit.
//
// Codex offers the image tool only when its image_generation feature is on
// in the server's config (the project's Codex config turns it off;
// codexconfig.ImageGenerationArgs turns it on) and the provider
// authenticates with a ChatGPT login (never with an API key). A restricted
// turn switches it off for its thread (IsolationConfig), so a deny of
// image_generate, which is not safe-denied, removes it. TestGeneratedImageIsDeliveredAsMedia and
// TestImageToolNeedsTheFeatureAndAChatGPTLogin pin this against the stub
// (its Images API, and the ChatGPT login codextest.WriteChatGPTLogin
// writes).
package codex
