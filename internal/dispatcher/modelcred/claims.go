package modelcred

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// Claims are what a credential says: which grant of which session's lease
// it rides, for which harness and models, with which auth profile, and
// until when. Printing Claims (fmt, log/slog, logr, JSON) withholds the
// profile key; only Seal writes it.
type Claims struct {
	// Audience is who may accept the credential: Audience for the model
	// gateway.
	Audience string
	// Lease is the store key whose grant the credential rides:
	// "<namespace>/<uid>" for a turn, "<namespace>/<uid>.call" for a
	// completion or a finalization.
	Lease string
	// Token is that grant's fencing token (positive).
	Token int64
	// Run is the turn's run id, for logs and metrics: required on a turn's
	// lease, optional on a call's.
	Run string
	// Harness is the harness whose upstream and credential serve the
	// requests.
	Harness Harness
	// Models are the model ids the requests may name (the body's "model"),
	// 1 to MaxModels of them.
	Models []string
	// Profile is the turn's auth profile, when it has one.
	Profile *Profile
	// IssuedAt is when the credential was sealed: Seal sets it. Seconds.
	IssuedAt time.Time
	// ExpiresAt is when the credential stops opening (after Skew). Seconds:
	// Seal drops the fraction.
	ExpiresAt time.Time
}

// Harness names an AgentHarness.
type Harness struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

// Profile is an auth profile sealed in a credential: its id, and its key,
// which the gateway injects as the upstream's bearer token. Printing a
// Profile withholds the key.
type Profile struct {
	ID  string
	Key wire.InlineKey
}

// The claims' bounds. With every field at its bound a credential is under
// MaxLength; a usual one is about 400 bytes, one with a 4,096-byte profile
// key about 6 KB.
const (
	// MaxModels bounds Claims.Models: a turn's model and the bare id Codex
	// sends need two.
	MaxModels = 4
	// MaxModelLength bounds a model id (bytes), as spec.model is bounded.
	MaxModelLength = 192
	// MaxUIDLength bounds a UID (bytes).
	MaxUIDLength = 128
	// MaxProfileIDLength bounds Profile.ID (bytes), as the turn request's
	// authProfile.id is bounded.
	MaxProfileIDLength = 128
	// MaxAudienceLength bounds Claims.Audience (bytes).
	MaxAudienceLength = 64
	// MaxLifetime bounds ExpiresAt - IssuedAt: the longest turn's deadline,
	// plus an hour for the lease's TTL and the slack the minter adds.
	MaxLifetime = wire.MaxTurnTimeout + time.Hour
)

// callSuffix ends the lease key of a session's calls.
const callSuffix = ".call"

var (
	dns1123Label     = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	// A UID as the API server makes them (a UUID), and as tests write them;
	// never a dot, which separates the call suffix.
	uidRE      = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
	audienceRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	// A bearer token's characters (RFC 6750 b64token), as the turn
	// request's inline key: the gateway writes the key into an
	// Authorization header, which a space or a line break would change.
	bearerRE = regexp.MustCompile(`^[A-Za-z0-9._~+/-]+=*$`)
)

// validate checks every claim's shape and bound, and the lifetime; not
// the audience or the clock, which depend on who opens it and when. The
// error names the first claim at fault and never quotes the profile key.
func (c *Claims) validate() *Error {
	if len(c.Audience) > MaxAudienceLength || !audienceRE.MatchString(c.Audience) {
		return badClaim("aud", "is required: 1 to %d lowercase letters, digits or '-'", MaxAudienceLength)
	}
	if err := validateLease(c.Lease, c.Run); err != nil {
		return err
	}
	if c.Token <= 0 {
		return badClaim("token", "is required: the grant's fencing token, a positive number")
	}
	if err := c.Harness.validate(); err != nil {
		return err
	}
	if len(c.Models) == 0 || len(c.Models) > MaxModels {
		return badClaim("models", "must hold 1 to %d model ids, not %d", MaxModels, len(c.Models))
	}
	for i, m := range c.Models {
		if err := checkText("models["+strconv.Itoa(i)+"]", m, MaxModelLength); err != nil {
			return err
		}
	}
	if c.Profile != nil {
		if err := checkText("profile.id", c.Profile.ID, MaxProfileIDLength); err != nil {
			return err
		}
		switch k := string(c.Profile.Key); {
		case k == "":
			return badClaim("profile.key", "is required with a profile")
		case len(k) > wire.MaxInlineKeyLength:
			return badClaim("profile.key", "is %d bytes, more than the limit of %d", len(k), wire.MaxInlineKeyLength)
		case !bearerRE.MatchString(k):
			return badClaim("profile.key", "must be a bearer token: letters, digits and '-', '.', '_', '~', '+', '/', then any '=' (no spaces or line breaks)")
		}
	}
	if c.IssuedAt.Unix() <= 0 {
		return badClaim("iat", "is required: when the credential was sealed")
	}
	if c.ExpiresAt.Unix() <= c.IssuedAt.Unix() {
		return badClaim("exp", "must be after iat (%s), not %s", stamp(c.IssuedAt), stamp(c.ExpiresAt))
	}
	// In seconds: a far exp would overflow a Duration.
	if life := c.ExpiresAt.Unix() - c.IssuedAt.Unix(); life > int64(MaxLifetime/time.Second) {
		return badClaim("exp", "is %d s after iat, more than the limit of %s", life, MaxLifetime)
	}
	return nil
}

// CheckLease checks a lease key as the lease claim is checked:
// "<namespace>/<uid>" or "<namespace>/<uid>.call". The dispatcher's holds
// endpoint refuses other keys with it. The error names the claim "lease".
func CheckLease(lease string) error {
	if _, err := leaseKind(lease); err != nil {
		return err
	}
	return nil
}

// leaseKind checks the lease key's shape and says whether it is a call's.
func leaseKind(lease string) (call bool, _ *Error) {
	ns, uid, ok := strings.Cut(lease, "/")
	call = strings.HasSuffix(uid, callSuffix)
	uid = strings.TrimSuffix(uid, callSuffix)
	switch {
	case !ok:
		return false, badClaim("lease", "is required: \"<namespace>/<uid>\" (a turn) or \"<namespace>/<uid>.call\" (a call)")
	case len(ns) > 63 || !dns1123Label.MatchString(ns):
		return false, badClaim("lease", "must start with a namespace (a DNS-1123 label of at most 63 characters) and '/'")
	case len(uid) > MaxUIDLength || !uidRE.MatchString(uid):
		return false, badClaim("lease", "must end with a UID of 1 to %d letters, digits, '-' or '_', then \".call\" for a call", MaxUIDLength)
	}
	return call, nil
}

// validateLease checks the lease key and the run id that goes with it.
func validateLease(lease, run string) *Error {
	call, err := leaseKind(lease)
	if err != nil {
		return err
	}
	if run == "" {
		if !call {
			return badClaim("run", "is required on a turn's lease")
		}
		return nil
	}
	return checkText("run", run, wire.MaxRunIDLength)
}

func (h Harness) validate() *Error {
	switch {
	case len(h.Namespace) > 63 || !dns1123Label.MatchString(h.Namespace):
		return badClaim("harness.namespace", "is required: a DNS-1123 label of at most 63 characters")
	case len(h.Name) > 253 || !dns1123Subdomain.MatchString(h.Name):
		return badClaim("harness.name", "is required: a DNS-1123 subdomain of at most 253 characters")
	case len(h.UID) > MaxUIDLength || !uidRE.MatchString(h.UID):
		return badClaim("harness.uid", "is required: 1 to %d letters, digits, '-' or '_'", MaxUIDLength)
	}
	return nil
}

// checkText checks a claim that is an id: 1 to limit bytes of UTF-8,
// without spaces or control characters.
func checkText(claim, s string, limit int) *Error {
	switch {
	case s == "":
		return badClaim(claim, "is required")
	case len(s) > limit:
		return badClaim(claim, "is %d bytes, more than the limit of %d", len(s), limit)
	case !utf8.ValidString(s):
		return badClaim(claim, "is not UTF-8")
	case strings.IndexFunc(s, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }) >= 0:
		return badClaim(claim, "holds a space or a control character")
	}
	return nil
}

// stamp is t as errors print it.
func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// withheld is what a profile key prints as.
const withheld = "[withheld]"

// String names the profile, never its key.
func (p Profile) String() string { return fmt.Sprintf("auth profile %q (key %s)", p.ID, withheld) }

// GoString is String, so %#v withholds the key too.
func (p Profile) GoString() string { return p.String() }

// LogValue withholds the key from log/slog.
func (p Profile) LogValue() slog.Value {
	return slog.GroupValue(slog.String("id", p.ID), slog.String("key", withheld))
}

// MarshalLog withholds the key from logr's sinks.
func (p Profile) MarshalLog() any { return p.view() }

// MarshalJSON withholds the key: a Profile's JSON is for logs and
// debugging, the sealed form is Seal's alone.
func (p Profile) MarshalJSON() ([]byte, error) { return json.Marshal(p.view()) }

type profileView struct {
	ID  string `json:"id"`
	Key string `json:"key"`
}

func (p Profile) view() profileView { return profileView{ID: p.ID, Key: withheld} }

// String prints every claim but the profile key.
func (c Claims) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "modelcred.Claims{aud: %q, lease: %q, token: %d, run: %q, harness: %s/%s (uid %q), models: %q",
		c.Audience, c.Lease, c.Token, c.Run, c.Harness.Namespace, c.Harness.Name, c.Harness.UID, c.Models)
	if c.Profile != nil {
		fmt.Fprintf(&b, ", profile: %s", c.Profile)
	}
	fmt.Fprintf(&b, ", iat: %s, exp: %s}", stamp(c.IssuedAt), stamp(c.ExpiresAt))
	return b.String()
}

// GoString is String, so %#v withholds the key too.
func (c Claims) GoString() string { return c.String() }

// LogValue withholds the profile key from log/slog.
func (c Claims) LogValue() slog.Value {
	attrs := []slog.Attr{
		slog.String("aud", c.Audience), slog.String("lease", c.Lease), slog.Int64("token", c.Token),
		slog.String("run", c.Run), slog.Any("harness", c.Harness), slog.Any("models", c.Models),
	}
	if c.Profile != nil {
		attrs = append(attrs, slog.Any("profile", *c.Profile))
	}
	return slog.GroupValue(append(attrs, slog.Time("iat", c.IssuedAt), slog.Time("exp", c.ExpiresAt))...)
}

// MarshalLog withholds the profile key from logr's sinks.
func (c Claims) MarshalLog() any { return c.view() }

// MarshalJSON withholds the profile key: Claims' JSON is for logs and
// debugging, the sealed form is Seal's alone.
func (c Claims) MarshalJSON() ([]byte, error) { return json.Marshal(c.view()) }

type claimsView struct {
	Audience  string       `json:"aud"`
	Lease     string       `json:"lease"`
	Token     int64        `json:"token"`
	Run       string       `json:"run,omitempty"`
	Harness   Harness      `json:"harness"`
	Models    []string     `json:"models"`
	Profile   *profileView `json:"profile,omitempty"`
	IssuedAt  time.Time    `json:"iat"`
	ExpiresAt time.Time    `json:"exp"`
}

func (c Claims) view() claimsView {
	v := claimsView{Audience: c.Audience, Lease: c.Lease, Token: c.Token, Run: c.Run, Harness: c.Harness,
		Models: c.Models, IssuedAt: c.IssuedAt, ExpiresAt: c.ExpiresAt}
	if c.Profile != nil {
		p := c.Profile.view()
		v.Profile = &p
	}
	return v
}
