package wire

// The model gateway's question to the dispatcher (docs/design/model-gateway.md,
// 5.2): is the grant a credential was sealed under still the current grant
// of its lease key? Only the gateway's ServiceAccount may ask. It is not a
// route of a session, and no client of the plugin calls it, so it is not
// in the generated schema.

// ModelGatewayHoldsPath (POST) answers a HoldsRequest with a HoldsAnswer.
const ModelGatewayHoldsPath = "/internal/model-gateway/v1/holds"

// HoldsRequest names a grant: the lease key and its fencing token, as a
// credential's claims carry them.
type HoldsRequest struct {
	// Lease is the store key the grant is of: "<namespace>/<uid>" (a turn)
	// or "<namespace>/<uid>.call" (a completion or a finalization).
	Lease string `json:"lease"`
	// Token is the grant's fencing token (positive).
	Token int64 `json:"token"`
}

// HoldsAnswer says whether the grant is current now: true from the lease's
// Acquire until its Release, a takeover or the session's deletion.
type HoldsAnswer struct {
	Holds bool `json:"holds"`
}
