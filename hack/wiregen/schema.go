package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"github.com/invopop/jsonschema"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

const (
	wirePkg = "github.com/openclaw/harness-operator/internal/contract/wire"
	apiPkg  = "github.com/openclaw/harness-operator/api/v1alpha1"
)

// roots are the types that cross the API, in either direction: request
// bodies, answers and the error body. Event payloads come from events.
var roots = []any{
	wire.TurnRequest{}, wire.CompletionRequest{}, wire.ToolResultRequest{},
	wire.ApprovalAnswer{}, wire.UserInputAnswer{},
	wire.Decision{}, wire.CompletionResponse{}, wire.MCPInventory{}, wire.Error{},
}

// events maps every stream event name to its payload. A name without a
// payload here fails the generator, so a new event cannot be forgotten.
var events = map[string]any{
	wire.EventSelected:         wire.SelectedEvent{},
	wire.EventPartial:          wire.Partial{},
	wire.EventAgent:            wire.AgentEvent{},
	wire.EventToolCall:         wire.ToolCall{},
	wire.EventToolTerminal:     wire.ToolTerminal{},
	wire.EventTranscript:       wire.TranscriptRecord{},
	wire.EventResult:           wire.ResultEvent{},
	wire.EventError:            wire.Error{},
	wire.EventApprovalRequest:  wire.ApprovalRequest{},
	wire.EventUserInputRequest: wire.UserInputRequest{},
	wire.EventRequestResolved:  wire.RequestResolved{},
	wire.EventMedia:            wire.NativeMedia{},
}

// values are the wire package's numeric constants that clients read as
// values, not only as types (the completion bounds the plugin keeps its
// context within).
var values = []struct {
	name  string
	value int
}{
	{"MaxCompletionMessages", wire.MaxCompletionMessages},
	{"MaxCompletionBytes", wire.MaxCompletionBytes},
}

// valueKeyword marks a definition whose const is a value of the API as
// well as a type: clients/openclaw/scripts/wire-ts.mjs exports it as a
// TypeScript constant of the definition's name.
const valueKeyword = "x-value"

var rawMessage = reflect.TypeFor[json.RawMessage]()

// fieldEnums close plain string fields whose values are a group of untyped
// constants (named by prefix); the group becomes the definition def.
var fieldEnums = []struct{ typ, field, def, prefix string }{
	{"AgentEvent", "stream", "AgentEventStream", "Stream"},
	{"AgentEvent", "phase", "AgentEventPhase", "Phase"},
	{"ToolFailure", "reason", "ToolFailureReason", "Failure"},
	{"ToolError", "reason", "ToolFailureReason", "Failure"},
	{"TranscriptRecord", "type", "TranscriptRecordType", "Record"},
	{"TranscriptRecord", "role", "TranscriptRole", "Role"},
	{"NativeMutation", "mutation", "Mutation", "Mutation"},
	{"CompletionMessage", "role", "CompletionMessageRole", "MessageRole"},
	{"CompletionResult", "finishReason", "FinishReason", "Finish"},
}

// Schema is the JSON Schema of the wire package, as committed: indented,
// definitions sorted by name, a final newline.
func Schema(root string) ([]byte, error) {
	src, err := readSources(root)
	if err != nil {
		return nil, err
	}
	defs := jsonschema.Definitions{}
	enums := map[reflect.Type]bool{}
	r := &jsonschema.Reflector{
		Anonymous: true,
		// Go's json tags decide: a field without omitempty or omitzero is
		// always sent, so it is required.
		LookupComment: func(t reflect.Type, field string) string {
			key := t.PkgPath() + "." + t.Name()
			if field != "" {
				key += "." + field
			}
			return src.comments[key]
		},
		// A named string type with constants is an enum of its own.
		Mapper: func(t reflect.Type) *jsonschema.Schema {
			if t == rawMessage {
				// Any JSON value; json-schema-to-typescript would make {} an object.
				return &jsonschema.Schema{Extras: map[string]any{"tsType": "unknown"}}
			}
			if t.Kind() != reflect.String || t.Name() == "" || len(src.typed(t.PkgPath(), t.Name())) == 0 {
				return nil
			}
			enums[t] = true
			return &jsonschema.Schema{Ref: "#/$defs/" + t.Name()}
		},
	}
	add := func(v any) error {
		t := reflect.TypeOf(v)
		s := r.ReflectFromType(t)
		for name, d := range s.Definitions {
			if old, ok := defs[name]; ok && !sameSchema(old, d) {
				return fmt.Errorf("two types named %s", name)
			}
			defs[name] = d
		}
		return nil
	}
	for _, v := range roots {
		if err := add(v); err != nil {
			return nil, err
		}
	}
	payloads := jsonschema.NewProperties()
	names := src.untyped(wirePkg, "Event")
	for _, c := range names {
		p, ok := events[c.value]
		if !ok {
			return nil, fmt.Errorf("event %s (%q) has no payload in hack/wiregen's events", c.name, c.value)
		}
		if err := add(p); err != nil {
			return nil, err
		}
		payloads.Set(c.value, &jsonschema.Schema{Ref: "#/$defs/" + reflect.TypeOf(p).Name(), Description: c.doc})
	}
	if len(names) != len(events) {
		return nil, fmt.Errorf("hack/wiregen's events name %d events, the wire package %d", len(events), len(names))
	}
	defs["EventName"] = enumOf("The `event:` of a turn stream's frame.", names)
	defs["EventPayloads"] = &jsonschema.Schema{
		Type:                 "object",
		Description:          "Each stream event's payload (the frame's `data:`), by event name.",
		Properties:           payloads,
		Required:             slices.Collect(payloads.KeysFromOldest()),
		AdditionalProperties: jsonschema.FalseSchema,
	}
	for t := range enums {
		c := src.typed(t.PkgPath(), t.Name())
		defs[t.Name()] = enumOf(src.comments[t.PkgPath()+"."+t.Name()], c)
	}
	for _, f := range fieldEnums {
		prop, ok := defs[f.typ].Properties.Get(f.field)
		if !ok {
			return nil, fmt.Errorf("%s has no field %s", f.typ, f.field)
		}
		c := src.untyped(wirePkg, f.prefix)
		if len(c) == 0 {
			return nil, fmt.Errorf("no constants %s* for %s.%s", f.prefix, f.typ, f.field)
		}
		if _, ok := defs[f.def]; !ok {
			defs[f.def] = enumOf("One of the wire package's "+f.prefix+"* constants.", c)
		}
		defs[f.typ].Properties.Set(f.field, &jsonschema.Schema{Ref: "#/$defs/" + f.def, Description: prop.Description})
	}
	if err := constants(defs, src.untypedSuffix(wirePkg, "Header"), "Header",
		"A header of the API that clients set or read."); err != nil {
		return nil, err
	}
	routes := append(src.untyped(wirePkg, "SessionPath"), src.untyped(wirePkg, "Route")...)
	if err := constants(defs, routes, "Route",
		"A route's path: SessionPath, or a path below it (`{…}` are path parameters)."); err != nil {
		return nil, err
	}
	if err := constants(defs, src.untyped(wirePkg, "SafeDeny"), "SafeDenyTool",
		"An OpenClaw tool the plugin declares safe to deny (conversationToolPolicySafeDenyTools)."); err != nil {
		return nil, err
	}
	natives := src.untyped(wirePkg, "NativeTool")
	if err := constants(defs, natives, "NativeToolId",
		"A tool Codex runs natively on the cluster, by its canonical OpenClaw tool id."); err != nil {
		return nil, err
	}
	ids := make([]string, len(natives))
	for i, c := range natives {
		ids[i] = c.value
	}
	defs["NativeToolIds"] = value(&jsonschema.Schema{
		Type: "array", Items: &jsonschema.Schema{Ref: "#/$defs/NativeToolId"}, Const: ids,
		Description: "The tools Codex runs natively on the cluster (the NativeTool* constants, in their order): " +
			"their output reaches the model without any tool-result middleware of the gateway.",
	})
	for _, v := range values {
		doc, ok := src.comments[wirePkg+"."+v.name]
		if !ok {
			return nil, fmt.Errorf("hack/wiregen's values name %s, which is no constant of the wire package", v.name)
		}
		defs[v.name] = value(&jsonschema.Schema{Type: "integer", Const: v.value, Description: doc})
	}
	for _, d := range defs {
		if d.Properties == nil {
			continue
		}
		for name, p := range d.Properties.FromOldest() {
			if p.Ref != "" && p.Description != "" {
				// A $ref with a sibling is a new type to json-schema-to-typescript
				// (ToolList1, Error2, …); under allOf it stays the named one.
				d.Properties.Set(name, &jsonschema.Schema{AllOf: []*jsonschema.Schema{{Ref: p.Ref}}, Description: p.Description})
			}
		}
	}
	// The root is an empty object: json-schema-to-typescript declares every
	// $defs entry (unreachableDefinitions) only under an object root.
	top := &jsonschema.Schema{
		Version:              jsonschema.Version,
		Title:                "DispatcherWire",
		Description:          "What crosses the dispatcher API: the types are the $defs. Generated from internal/contract/wire by make generate-wire; do not edit.",
		Type:                 "object",
		AdditionalProperties: jsonschema.FalseSchema,
		Definitions:          defs,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(top); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// constants adds one definition per constant (a string literal type) and
// the enum group of them all.
func constants(defs jsonschema.Definitions, cs []constant, group, doc string) error {
	if len(cs) == 0 {
		return fmt.Errorf("no constants for %s", group)
	}
	for _, c := range cs {
		defs[c.name] = &jsonschema.Schema{Type: "string", Const: c.value, Description: c.doc}
	}
	defs[group] = enumOf(doc, cs)
	return nil
}

// value marks s as a value of the API (valueKeyword).
func value(s *jsonschema.Schema) *jsonschema.Schema {
	s.Extras = map[string]any{valueKeyword: true}
	return s
}

func enumOf(doc string, cs []constant) *jsonschema.Schema {
	s := &jsonschema.Schema{Type: "string", Description: doc}
	for _, c := range cs {
		if !slices.Contains(s.Enum, any(c.value)) {
			s.Enum = append(s.Enum, c.value)
		}
	}
	return s
}

func sameSchema(a, b *jsonschema.Schema) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	return errA == nil && errB == nil && bytes.Equal(ja, jb)
}
