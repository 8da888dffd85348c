// Package appserver is a client for the JSON-RPC protocol of `codex
// app-server` (Codex's native agent server), over WebSocket or stdio.
//
// Connect performs the handshake (initialize with experimentalApi, the
// version floor check, initialized). A Client then starts or resumes
// threads; a Thread starts turns; a Turn delivers its notifications as typed
// events (Next, Run, Wait). Server-initiated requests (dynamic tool calls,
// approvals, user input) go to the Handlers of their thread. A dropped
// connection surfaces as a *ConnectionLostError that says whether a turn may
// have had side effects. All methods are safe for concurrent use.
//
// Files: client.go (connection, requests, the read loop), streams.go (the
// per-turn event buffers and their limits), serverrequests.go (Handlers
// and the server→client requests), limits.go (the limits' defaults, Stats,
// rate-limited logging, panic recovery), thread.go, transport.go,
// events.go, protocol.go, errors.go, version.go.
//
// # Limits against a misbehaving app-server
//
// The read loop never blocks on a consumer, and nothing the server sends
// grows memory without bound. Each limit is an Options field; zero means
// its default.
//
//   - A message over MaxMessageBytes (DefaultMaxMessageBytes, 16 MiB) ends
//     the connection with a *MessageTooLargeError naming the limit and how
//     much had arrived. The transports stop reading at the limit (a stdio
//     line without end is not buffered whole). The connection is then lost
//     like any other: its turns get a *ConnectionLostError wrapping the
//     cause, and a caller reattaches as after any drop.
//   - Turn notifications for a thread this client has not opened (never
//     started or resumed on this connection, or released) are dropped
//     without being buffered, counted in Stats.UnknownThreadNotifications
//     and logged at most once a minute.
//   - The events buffered for one turn and not yet read by its consumer are
//     bounded by MaxUnreadEvents (DefaultMaxUnreadEvents) and MaxUnreadBytes
//     (DefaultMaxUnreadBytes, counting the raw params). A server that sends
//     more fails that turn's stream alone: its buffer is freed, Next returns
//     a *TurnStreamError, and the client sends turn/interrupt for the turn,
//     since nobody will read it any more. Other turns and the connection
//     are unaffected.
//   - At most MaxServerRequests (DefaultMaxServerRequests) server requests
//     are handled at once per connection. One beyond is answered at once
//     with a JSON-RPC error (code -32000) naming the limit, recorded as a
//     declined ServerRequestHandled on its turn, and counted in
//     Stats.RefusedServerRequests. Closing the connection instead would fail
//     every turn sharing it (the dispatcher pools one connection per
//     server); an error fails only the refused request, which Codex reports
//     to the model as a failed call ("dynamic tool request failed";
//     TestRefusedToolCallReachesTheModelAsAFailedCall pins it). The default
//     is high because a host tool's handler legitimately waits for the
//     gateway, and every turn on a server shares its connection. The answer
//     is written on the read loop, so a server that floods waits for it.
//
// # Panics
//
// A panic in a goroutine the client starts is recovered, logged with its
// stack (Options.Logger) and becomes an error for what it concerns, never a
// crash: in a Handlers function (or the handling of its request) the
// request is answered with a JSON-RPC error and the turn's stream fails
// with a *TurnStreamError wrapping a *PanicError (the turn is interrupted,
// as above); in the read loop (including a caller's Transport) or the
// WebSocket keepalive the connection ends with the *PanicError as cause, so
// only that connection's turns fail.
package appserver
