package adapter

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		kind      wire.TerminalKind
		texts     []string
		plan, rsn string
		want      wire.Classification
	}{
		{"visible text", wire.TerminalOK, []string{"hello"}, "plan", "why", ""},
		{"NO_REPLY is visible", wire.TerminalOK, []string{"NO_REPLY"}, "", "", ""},
		{"empty", wire.TerminalOK, nil, "", "", wire.ClassEmpty},
		{"blank text is not visible", wire.TerminalOK, []string{"", "  \n"}, "", "", wire.ClassEmpty},
		{"reasoning only", wire.TerminalOK, nil, "", "thinking", wire.ClassReasoningOnly},
		{"plan wins over reasoning", wire.TerminalOK, []string{""}, "# Plan", "thinking", wire.ClassPlanningOnly},
		{"failed turns are not classified", wire.TerminalFailed, nil, "", "", ""},
		{"aborted turns are not classified", wire.TerminalAborted, nil, "# Plan", "", ""},
		{"timed-out turns are not classified", wire.TerminalTimeout, nil, "", "x", ""},
	}
	for _, tc := range cases {
		if got := Classify(tc.kind, tc.texts, tc.plan, tc.rsn); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	ok := TurnInput{Model: "m", Cwd: "/home/codex/sessions/s1", Prompt: "hi",
		Images: []wire.Image{{URL: "data:image/png;base64,AAAA"}, {Path: "/tmp/x.png", Detail: "high"}},
		Tools:  []wire.HostTool{{Name: "a", Parameters: json.RawMessage(`{"type":"object"}`)}, {Name: "b"}}}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid input: %v", err)
	}
	if ok.EffectiveToolTimeout() != DefaultToolTimeout {
		t.Fatal("default tool timeout")
	}
	ok.ToolTimeout = time.Second
	if ok.EffectiveToolTimeout() != time.Second {
		t.Fatal("tool timeout")
	}
	bad := []func(*TurnInput){
		func(in *TurnInput) { in.Model = " " },
		func(in *TurnInput) { in.Cwd = "" },
		func(in *TurnInput) { in.Cwd = "rel" },
		func(in *TurnInput) { in.Prompt, in.Images = "", nil },
		func(in *TurnInput) { in.Images = []wire.Image{{}} },
		func(in *TurnInput) { in.Images = []wire.Image{{URL: "data:image/png;base64,A", Path: "/a"}} },
		func(in *TurnInput) { in.Images = []wire.Image{{Path: "rel.png"}} },
		func(in *TurnInput) { in.Images = []wire.Image{{URL: "ftp://x/y.png"}} },
		func(in *TurnInput) { in.Images = []wire.Image{{URL: "https://x/y.png", Detail: "tiny"}} },
		func(in *TurnInput) { in.Tools = []wire.HostTool{{Name: ""}} },
		func(in *TurnInput) { in.Tools = []wire.HostTool{{Name: "a"}, {Name: "a"}} },
		func(in *TurnInput) { in.Tools = []wire.HostTool{{Name: "a", Parameters: json.RawMessage(`[1]`)}} },
		func(in *TurnInput) { in.ToolTimeout = -1 },
	}
	for i, mutate := range bad {
		in := ok
		in.Images = append([]wire.Image(nil), ok.Images...)
		in.Tools = append([]wire.HostTool(nil), ok.Tools...)
		mutate(&in)
		if err := in.Validate(); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("case %d: %v, want ErrInvalidInput", i, err)
		}
	}
}

func TestEventPayloadAndRecordJSON(t *testing.T) {
	t.Parallel()
	p := &wire.Partial{ItemID: "m", Delta: "x"}
	if (Event{Type: wire.EventPartial, Partial: p}).Payload() != any(p) {
		t.Fatal("payload")
	}
	rec := wire.TranscriptRecord{Type: wire.RecordToolCall, Role: wire.RoleAssistant, CallID: "c1", Tool: "t", Arguments: json.RawMessage(`{"a":1}`)}
	want := `{"type":"tool_call","role":"assistant","callId":"c1","tool":"t","arguments":{"a":1}}`
	if got := string(rec.JSON()); got != want {
		t.Fatalf("record %s\nwant   %s", got, want)
	}
}
