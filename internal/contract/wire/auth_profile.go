package wire

import (
	"log/slog"
	"regexp"
	"strconv"
)

// authProfileIDRE is what an auth profile id may be: OpenClaw's profile ids
// (`openai:work`, `anthropic-default`), which appear in messages, events
// and the session's status, never a credential.
var authProfileIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,127}$`)

// inlineKeyRE is what an inline key may be: a bearer token's characters
// (RFC 6750 b64token), since it is sent as the model requests'
// `Authorization: Bearer` value. Anything else (a space, a line break)
// could change the header it goes into, so it is refused.
var inlineKeyRE = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)

// MaxInlineKeyLength bounds an inline key (bytes).
const MaxInlineKeyLength = 4096

// AuthProfileTurnFields are a turn request's auth field (embedded in
// TurnRequest, so the JSON stays flat).
type AuthProfileTurnFields struct {
	// AuthProfile is the prepared auth profile the gateway selected for
	// this attempt (the harness SDK: core forwards "a compatible, explicitly
	// selected or ordered OpenClaw auth profile"). The harness's model
	// requests for this session then authenticate with its credential
	// instead of the app-server's own. Only on a harness that serves no
	// other namespace; a Secret's key is read only after a
	// SubjectAccessReview says the requester may get the Secret.
	AuthProfile *AuthProfileRef `json:"authProfile,omitempty"`
}

// AuthProfileRef names an auth profile and where its credential is:
// exactly one of SecretKeyRef and APIKey.
type AuthProfileRef struct {
	// ID is the profile's id as the gateway knows it (e.g. openai:work):
	// named in errors, events and status.nativeBinding.authProfile.
	ID string `json:"id"`
	// SecretKeyRef is the key of a Secret in the session's namespace that
	// holds the profile's API key (sent as a bearer token).
	SecretKeyRef *SecretKeyRef `json:"secretKeyRef,omitempty"`
	// APIKey is the profile's API key itself (sent as a bearer token), for
	// a gateway that holds it in its own auth store. It is used for this
	// turn only and kept only in memory: never stored in the cluster, the
	// journal, events, status or logs.
	APIKey InlineKey `json:"apiKey,omitempty"`
}

// InlineKey is a credential a request carries itself. Its JSON is the
// value (the wire form); every other way of printing it withholds the
// value, so a key that reaches a log line, an error or a debug dump by
// mistake is not in it.
type InlineKey string

// withheld is what an InlineKey prints as.
const withheld = "[withheld]"

// String withholds the key (and so does every fmt verb that reads it).
func (k InlineKey) String() string {
	if k == "" {
		return ""
	}
	return withheld
}

// GoString is String, so %#v withholds the key too.
func (k InlineKey) GoString() string { return strconv.Quote(k.String()) }

// LogValue withholds the key from log/slog.
func (k InlineKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// MarshalLog withholds the key from logr's sinks (zapr would otherwise
// encode the string itself).
func (k InlineKey) MarshalLog() any { return k.String() }

// String names the profile and the form of its key, never the key: fmt
// uses it for the profile wherever it is printed, also through a pointer.
func (p AuthProfileRef) String() string {
	switch {
	case p.SecretKeyRef != nil:
		return "auth profile " + strconv.Quote(p.ID) + " (secretKeyRef " + p.SecretKeyRef.Name + "/" + p.SecretKeyRef.Key + ")"
	case p.APIKey != "":
		return "auth profile " + strconv.Quote(p.ID) + " (inline apiKey " + withheld + ")"
	}
	return "auth profile " + strconv.Quote(p.ID)
}

// GoString is String, so %#v withholds the key too.
func (p AuthProfileRef) GoString() string { return p.String() }

// LogValue withholds the key from log/slog (whose JSON handler would
// otherwise encode the struct as its wire form).
func (p AuthProfileRef) LogValue() slog.Value { return slog.StringValue(p.String()) }

// MarshalLog withholds the key from logr's sinks.
func (p AuthProfileRef) MarshalLog() any { return p.String() }

// inlineKeyDigestMark stands for an inline key in a request's digest
// (TurnRequest.Digest): the key is no part of what the journal records.
const inlineKeyDigestMark = "inline"

// withoutKey is f with an inline key replaced by inlineKeyDigestMark.
func (f AuthProfileTurnFields) withoutKey() AuthProfileTurnFields {
	if f.AuthProfile == nil || f.AuthProfile.APIKey == "" {
		return f
	}
	p := *f.AuthProfile
	p.APIKey = inlineKeyDigestMark
	return AuthProfileTurnFields{AuthProfile: &p}
}

// Validate checks the auth profile's shape; the error is a *FieldError
// naming the field, and never quotes an inline key.
func (f *AuthProfileTurnFields) Validate() error {
	p := f.AuthProfile
	if p == nil {
		return nil
	}
	if !authProfileIDRE.MatchString(p.ID) {
		return &FieldError{Field: "authProfile.id",
			Message: "must be 1 to 128 letters, digits or '.', '_', ':', '@', '/', '-', starting with a letter or digit"}
	}
	switch {
	case p.SecretKeyRef != nil && p.APIKey != "":
		return &FieldError{Field: "authProfile",
			Message: "set either secretKeyRef (a Secret in the session's namespace) or apiKey (the key itself), not both"}
	case p.APIKey != "":
		if len(p.APIKey) > MaxInlineKeyLength {
			return &FieldError{Field: "authProfile.apiKey",
				Message: "must be at most " + strconv.Itoa(MaxInlineKeyLength) + " bytes"}
		}
		if !inlineKeyRE.MatchString(string(p.APIKey)) {
			return &FieldError{Field: "authProfile.apiKey",
				Message: "must be a bearer token: letters, digits and '-', '.', '_', '~', '+', '/', then any '=' (no spaces or line breaks)"}
		}
	case p.SecretKeyRef == nil:
		return &FieldError{Field: "authProfile",
			Message: "one of secretKeyRef (a Secret in the session's namespace) or apiKey (the key itself) is required"}
	case p.SecretKeyRef.Name == "" || p.SecretKeyRef.Key == "":
		return &FieldError{Field: "authProfile.secretKeyRef",
			Message: "name and key are required"}
	}
	return nil
}
