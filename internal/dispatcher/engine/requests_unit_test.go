package engine

import (
	"context"
	"errors"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// An answer that arrives after the request's wait ended is refused with
// RequestAlreadyResolved (409), and an answer accepted before it is the one
// delivered, even when the deadline passed meanwhile; a decision the request
// does not offer is refused naming the field.
func TestRequestAnswerRacesItsDeadlineOnce(t *testing.T) {
	e := &Engine{}
	key := requestKey{"ns/s", "run-1", "call_1"}

	e.live.expectRequest(key, nil, nil)
	expired, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := e.live.awaitRequest(expired, key); err == nil {
		t.Fatal("a request nobody answered was answered")
	}
	err := e.SubmitApproval("ns/s", "run-1", wire.ApprovalAnswer{RequestID: "call_1", Decision: wire.ApproveOnce})
	if !errors.Is(err, ErrRequestAlreadyResolved) {
		t.Fatalf("answer after the timeout: %v, want ErrRequestAlreadyResolved", err)
	}

	key2 := requestKey{"ns/s", "run-1", "call_2"}
	e.live.expectRequest(key2, &wire.ApprovalRequest{RequestID: "call_2", Decisions: []wire.ApprovalDecision{wire.ApproveOnce, wire.Deny}}, nil)
	var fe *wire.FieldError
	if err := e.SubmitApproval("ns/s", "run-1", wire.ApprovalAnswer{RequestID: "call_2", Decision: wire.ApproveForTurn}); !errors.As(err, &fe) || fe.Field != "decision" {
		t.Fatalf("a decision the request does not offer: %v, want a FieldError on decision", err)
	}
	if err := e.SubmitApproval("ns/s", "run-1", wire.ApprovalAnswer{RequestID: "call_2", Decision: wire.Deny}); err != nil {
		t.Fatal(err)
	}
	p, err := e.live.awaitRequest(expired, key2)
	if err != nil || p.decision != wire.Deny {
		t.Fatalf("the accepted answer was lost to the deadline: %v %+v", err, p)
	}
	if err := e.SubmitApproval("ns/s", "run-1", wire.ApprovalAnswer{RequestID: "call_2", Decision: wire.ApproveOnce}); !errors.Is(err, ErrRequestAlreadyResolved) {
		t.Fatalf("second answer: %v, want ErrRequestAlreadyResolved", err)
	}
	if err := e.SubmitApproval("ns/s", "run-2", wire.ApprovalAnswer{RequestID: "call_2", Decision: wire.Deny}); !errors.Is(err, ErrNoPendingRequest) {
		t.Fatalf("answer in another run: %v, want ErrNoPendingRequest", err)
	}
}
