package v1alpha1

// The names the operator puts on objects, which users and their tools see
// and may select on: defined here, once, for every binary.
const (
	// JournalFinalizer is the AgentSession finalizer the dispatcher owns: it
	// keeps a session until its journal runs and transcript mirror are
	// deleted (docs/dispatcher-api.md, "Session identity, capacity and
	// shutdown").
	JournalFinalizer = "harness.openclaw.dev/dispatcher-journal"

	// LabelHarness carries the owning AgentHarness's name (shortened with a
	// hash suffix when the name is not a valid label value) on every object
	// the manager owns for a harness, server pods included.
	LabelHarness = "harness.openclaw.dev/agentharness"
	// AnnotationHarness carries the owning AgentHarness's full name on the
	// pod template, so a pod maps back to its harness whatever the name's
	// length.
	AnnotationHarness = "harness.openclaw.dev/agentharness"
	// AnnotationConfigHash is the hash of everything that shapes a server
	// pod; a change rolls the pods.
	AnnotationConfigHash = "harness.openclaw.dev/config-hash"
	// AnnotationCredentialsHash is the keyed hash of the content of the
	// Secret keys a server pod uses (the token Secret, credentials, env
	// valueFrom); a change rolls the pods.
	AnnotationCredentialsHash = "harness.openclaw.dev/credentials-hash"
)
