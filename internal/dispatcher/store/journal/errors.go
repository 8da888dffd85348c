package journal

import "errors"

var (
	// ErrLocked is returned by Open when another process (or another Journal in
	// this process) holds the directory's lock file.
	ErrLocked = errors.New("journal: directory is locked by another dispatcher")
	// ErrLegacyLayout is returned by Open for a journal kept by AgentSession
	// name (its <dir>/sessions directory) when Options.ResolveLegacy is nil.
	ErrLegacyLayout = errors.New("journal: the directory holds a journal keyed by AgentSession name; it must be migrated by a dispatcher that can read AgentSessions")
)
