package wire

import (
	"strings"
	"testing"
)

// A gateway forwarding OpenClaw's embedded attempt params gets its
// pass-through fields accepted (not 400) and kept with the request: they are
// part of the digest, so the same runId with other values is another request.
// Fields outside the pass-through set stay refused.
func TestPassThroughFieldsAreAcceptedAndForwarded(t *testing.T) {
	const body = `{"runId":"r1","prompt":"hi","skillWorkshopProposalOnly":true,"trigger":"heartbeat"}`
	req, err := DecodeTurnRequest(strings.NewReader(body))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if req.PassThrough != (PassThrough{SkillWorkshopProposalOnly: true, Trigger: "heartbeat"}) {
		t.Fatalf("pass-through %+v", req.PassThrough)
	}
	plain, err := DecodeTurnRequest(strings.NewReader(`{"runId":"r1","prompt":"hi","trigger":"heartbeat"}`))
	if err != nil {
		t.Fatal(err)
	}
	a, _ := req.Digest()
	b, _ := plain.Digest()
	if a == b {
		t.Fatal("skillWorkshopProposalOnly does not change the request digest")
	}

	for _, tc := range []struct{ body, field string }{
		{`{"prompt":"hi","forceRestartSafeTools":true}`, "forceRestartSafeTools"},
		{`{"prompt":"hi","skillWorkshopProposalOnly":"yes"}`, "skillWorkshopProposalOnly"},
		{`{"prompt":"hi","trigger":"` + strings.Repeat("x", MaxTriggerLength+1) + `"}`, "trigger"},
	} {
		t.Run(tc.field, func(t *testing.T) {
			_, err := DecodeTurnRequest(strings.NewReader(tc.body))
			expectFieldError(t, err, tc.field)
		})
	}
}
