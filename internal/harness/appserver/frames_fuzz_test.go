package appserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// frameShape is a message from the app-server as JSON-RPC sorts it: one
// with a method is a request when it has an id too and a notification
// otherwise; one without a method is a response. The error member has the
// shape the client decodes, so a frame whose error member does not fit is no
// JSON-RPC message the client must act on.
type frameShape struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

func shapeOf(frame []byte) (frameShape, bool) {
	var s frameShape
	if json.Unmarshal(frame, &s) != nil || !bytes.HasPrefix(bytes.TrimLeft(frame, " \t\r\n"), []byte("{")) {
		return frameShape{}, false
	}
	return s, true
}

func sameJSON(a, b json.RawMessage) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && equalJSON(x, y)
}

func equalJSON(x, y any) bool {
	bx, _ := json.Marshal(x)
	by, _ := json.Marshal(y)
	return bytes.Equal(bx, by)
}

// FuzzServerFrame sends one fuzzed message from a scripted app-server to a
// connected client that has a call pending and a turn attached, then
// answers the call and completes the turn. Whatever the message:
//   - the connection lives on and nothing panics (the read loop and the
//     request handlers recover panics; the log must show none);
//   - a request (method and id) is answered exactly once, with its id, and
//     never taken for the answer to the pending call, even when its id is
//     the call's;
//   - a response or notification is never answered;
//   - the pending call gets the peer's answer, or whatever the fuzzed
//     message says when that is a response with the call's id;
//   - the attached turn completes normally.
func FuzzServerFrame(f *testing.F) {
	for _, seed := range []string{
		delta("thr_1", "tu_1", "hello"),
		completed("thr_1", "tu_1"),
		toolCall(9, "thr_1", "tu_1", "lookup"),
		toolCall(3, "thr_1", "tu_1", "lookup"), // a request with the pending call's id
		`{"id":3,"result":{"fuzzed":true}}`,
		`{"id":3,"error":{"code":-1,"message":"no"}}`,
		`{"id":"3","result":1}`, `{"id":null,"method":"item/tool/call"}`, `{"id":3.0,"result":1}`,
		`{"id":7,"method":"item/commandExecution/requestApproval","params":{"threadId":"thr_1","turnId":"tu_1","itemId":"i","command":"ls"}}`,
		`{"id":8,"method":"item/permissions/requestApproval","params":{"threadId":"thr_1","turnId":"tu_1","permissions":{"network":true}}}`,
		`{"id":"x","method":"applyPatchApproval","params":{"threadId":"thr_1","turnId":"tu_1"}}`,
		`{"id":[1],"method":"mcpServer/elicitation/request","params":{"threadId":"thr_1","turnId":"tu_1"}}`,
		`{"id":10,"method":"item/tool/requestUserInput","params":{"threadId":"thr_1","turnId":"tu_1","itemId":"q"}}`,
		`{"id":11,"method":"no/such/method","params":{"threadId":"thr_1","turnId":"tu_1"}}`,
		`{"id":12,"method":"item/tool/call","params":{"threadId":"thr_1","turnId":"tu_1","arguments":"not an object","tool":5}}`,
		`{"method":"item/completed","params":{"threadId":"thr_1","turnId":"tu_1","item":{"type":"reasoning","id":"r","summary":["s"],"content":["c"]}}}`,
		`{"method":"item/started","params":{"threadId":"thr_1","turn":{"id":"tu_1"},"item":{"type":"agentMessage","id":"m","text":"t"}}}`,
		`{"method":"item/reasoning/summaryTextDelta","params":{"threadId":"thr_1","turnId":"tu_1","itemId":"r","delta":"d","summaryIndex":1}}`,
		`{"method":"turn/plan/updated","params":{"threadId":"thr_1","turnId":"tu_1","explanation":null,"plan":[{"step":"a","status":"pending"}]}}`,
		`{"method":"thread/tokenUsage/updated","params":{"threadId":"thr_1","turnId":"tu_1","tokenUsage":{"total":{"totalTokens":1},"last":{},"modelContextWindow":null}}}`,
		`{"method":"error","params":{"threadId":"thr_1","turnId":"tu_1","error":{"message":"m","codexErrorInfo":"other"},"willRetry":true}}`,
		`{"method":"turn/started","params":{"threadId":"thr_1","turn":{"id":"tu_1","status":"inProgress","items":[]}}}`,
		`{"method":"item/completed","params":{"threadId":"thr_1","turnId":"tu_1","item":5}}`,
		`{"method":"turn/completed","params":{"threadId":"thr_1","turn":{"id":"tu_1","status":"failed","error":{"message":"x","codexErrorInfo":{"httpError":500}}}}}`,
		`{"method":"thread/started","params":{"thread":{"id":"other"}}}`,
		`{"method":5}`, `{"error":"x","id":3}`, `[]`, `null`, `"frame"`, `{`, ``, "\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		logs, logger := newLogLines()
		c, m := connectMem(t, appserver.Options{Logger: logger})
		th := threadFor(t, c, m)
		turn := th.AttachTurn("tu_1")

		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		type callResult struct {
			result json.RawMessage
			err    error
		}
		called := make(chan callResult, 1)
		go func() {
			var res json.RawMessage
			err := c.Call(ctx, "fuzz/probe", nil, &res)
			called <- callResult{res, err}
		}()
		probe := m.recv(t)
		if probe.Method != "fuzz/probe" {
			t.Fatalf("the client sent %q, not the probe", probe.Method)
		}
		m.send(string(frame))
		m.send(completed("thr_1", "tu_1"))
		m.send(`{"id":` + string(probe.ID) + `,"result":{"probe":true}}`)

		shape, isJSONRPC := shapeOf(frame)
		request := isJSONRPC && shape.Method != "" && shape.ID != nil
		response := isJSONRPC && shape.Method == "" && shape.ID != nil

		r := <-called
		peerAnswered := r.err == nil && sameJSON(r.result, json.RawMessage(`{"probe":true}`))
		takenByFrame := response && sameJSON(shape.ID, probe.ID)
		if !peerAnswered && !takenByFrame {
			t.Fatalf("the pending call (id %s) got %s, %v after the frame %q", probe.ID, r.result, r.err, frame)
		}
		if _, err := turn.Wait(ctx); err != nil {
			t.Fatalf("the attached turn did not complete after the frame %q: %v", frame, err)
		}
		if err := c.Err(); err != nil {
			t.Fatalf("the frame %q ended the connection: %v", frame, err)
		}

		if request {
			answer := m.recvRaw(t)
			if !sameJSON(answer.ID, shape.ID) || answer.Method != "" || (answer.Result == nil) == (answer.Error == nil) {
				t.Fatalf("the request %q was answered with %+v", frame, answer)
			}
		}
		// Close waits for the request handlers: whatever they were to send
		// is sent by now.
		_ = c.Close()
		select {
		case b := <-m.toPeer:
			t.Fatalf("after the frame %q the client also sent %s", frame, b)
		default:
		}
		if p := logs.with("panic"); len(p) > 0 {
			t.Fatalf("the frame %q caused a panic: %s", frame, p)
		}
	})
}
