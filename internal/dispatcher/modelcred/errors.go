package modelcred

import "fmt"

// Reason is why a credential was refused: one value per failure, stable, so
// that the model gateway can count refusals by reason and its logs can say
// which check failed.
type Reason string

// The reasons Open and Seal refuse with, in the order Open checks them.
const (
	// Malformed: the text does not start with Prefix.
	Malformed Reason = "malformed"
	// TooLong: the text is longer than MaxLength.
	TooLong Reason = "too_long"
	// BadEncoding: what follows Prefix is not canonical unpadded base64url.
	BadEncoding Reason = "bad_encoding"
	// TooShort: the decoded bytes cannot hold a nonce and a tag.
	TooShort Reason = "too_short"
	// Forged: the bytes do not open with the key. Another key sealed them
	// (another cluster, a rotated key), or they were altered; GCM cannot
	// tell the two apart.
	Forged Reason = "forged"
	// Unreadable: the bytes opened, but they are not claims of this
	// version (an unknown claim, a claim of the wrong type).
	Unreadable Reason = "unreadable"
	// InvalidClaim: a claim is missing, malformed or over its bound. Claim
	// names it.
	InvalidClaim Reason = "invalid_claim"
	// WrongAudience: the credential is for another audience.
	WrongAudience Reason = "wrong_audience"
	// NotYetValid: the credential was issued more than Skew after now.
	NotYetValid Reason = "not_yet_valid"
	// Expired: the credential expired more than Skew before now.
	Expired Reason = "expired"
)

// Error is a refusal of Open or Seal. Its text names what is wrong and
// never holds the credential, a key, or a profile key.
type Error struct {
	// Reason is which check failed.
	Reason Reason
	// Claim names the claim at fault (e.g. "models[1]", "profile.key") for
	// InvalidClaim, and "" otherwise.
	Claim string
	// detail says what is wrong; it never quotes the credential or a key.
	detail string
}

func (e *Error) Error() string {
	if e.Claim != "" {
		return "modelcred: claim " + e.Claim + ": " + e.detail
	}
	return "modelcred: " + e.detail
}

func refuse(r Reason, format string, args ...any) *Error {
	return &Error{Reason: r, detail: fmt.Sprintf(format, args...)}
}

func badClaim(claim, format string, args ...any) *Error {
	return &Error{Reason: InvalidClaim, Claim: claim, detail: fmt.Sprintf(format, args...)}
}
