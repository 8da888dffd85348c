package journal

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	utilclock "k8s.io/utils/clock"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Defaults applied by Open to zero-valued Options fields.
const (
	DefaultMaxRuns                  = 10000
	DefaultMaxAge                   = 7 * 24 * time.Hour
	DefaultMaxTranscriptBytes int64 = 64 << 20
	DefaultMaxNamespaceRuns         = 20000
	DefaultMaxNamespaceBytes  int64 = 1 << 30
)

// MaxRunIDBytes is the longest runId Begin accepts.
const MaxRunIDBytes = store.MaxRunIDBytes

const (
	lockFileName       = "LOCK"
	sessionsDirName    = "by-uid"
	legacyDirName      = "sessions" // the name-keyed layout before UID keys (migrate.go)
	runsDirName        = "runs"
	transcriptFileName = "transcript.jsonl"
	runFileExt         = ".jsonl"
	corruptExt         = ".corrupt"
	fileMode           = 0o640
	dirMode            = 0o750
)

// Options tunes a Journal. The zero value is the documented defaults.
type Options struct {
	// MaxRuns is how many ended runs keep their payload (events and
	// result) across all sessions, the most recently finished ones; Prune
	// reduces older ones to their tombstone (tombstone.go). Zero means
	// DefaultMaxRuns (10 000); negative means no count limit. Running runs
	// are never pruned and do not count.
	MaxRuns int
	// MaxAge is the retention: Prune forgets runs — tombstone and all — that
	// finished longer ago than this, and only then is their runId free
	// again. Zero means DefaultMaxAge (7 days); negative means no age limit.
	MaxAge time.Duration
	// MaxNamespaceRuns bounds the runs one namespace's sessions may hold:
	// running, ended and tombstones. While a namespace holds this many, Begin
	// refuses new runIds in it with a *RetentionLimitError; known runIds are
	// answered as always. Zero means DefaultMaxNamespaceRuns (20 000);
	// negative means no bound.
	MaxNamespaceRuns int
	// MaxNamespaceBytes caps the payload one namespace's sessions keep: run
	// files with their events and results, and transcripts (tombstones do
	// not count; MaxNamespaceRuns bounds them). Prune brings a namespace
	// over the cap back under it by pruning the payloads of its oldest ended
	// runs, then the transcripts of its idle sessions (caps.go). Zero means
	// DefaultMaxNamespaceBytes (1 GiB); negative means no cap.
	MaxNamespaceBytes int64
	// MaxTranscriptBytes is the size limit of one session's transcript file.
	// Zero means DefaultMaxTranscriptBytes (64 MiB); negative means no limit.
	MaxTranscriptBytes int64
	// Now is the clock for timestamps, retention and lease expiry; nil
	// means Clock.Now.
	Now func() time.Time
	// Clock is what Acquire waits on for a held lease to expire (lease.go);
	// nil means the real clock. Tests pass a fake clock here, which then is
	// the journal's clock for everything unless Now is set.
	Clock utilclock.Clock
	// ResolveLegacy migrates a journal kept by AgentSession name (the layout
	// before sessions were keyed by UID) at Open: it returns the UID of the
	// AgentSession namespace/name that exists now, or exists false. Without
	// it, Open refuses such a journal with ErrLegacyLayout (migrate.go).
	ResolveLegacy func(namespace, name string) (uid string, exists bool, err error)

	noSync bool // skip every fsync: tests and benchmarks only
	// onSync, when set, is called with the path of every fsync the journal
	// makes (a file or a directory): tests and benchmarks count them.
	onSync func(path string)
}

func (o Options) withDefaults() Options {
	if o.MaxRuns == 0 {
		o.MaxRuns = DefaultMaxRuns
	}
	if o.MaxAge == 0 {
		o.MaxAge = DefaultMaxAge
	}
	if o.MaxTranscriptBytes == 0 {
		o.MaxTranscriptBytes = DefaultMaxTranscriptBytes
	}
	if o.MaxNamespaceRuns == 0 {
		o.MaxNamespaceRuns = DefaultMaxNamespaceRuns
	}
	if o.MaxNamespaceBytes == 0 {
		o.MaxNamespaceBytes = DefaultMaxNamespaceBytes
	}
	if o.Clock == nil {
		o.Clock = utilclock.RealClock{}
	}
	if o.Now == nil {
		o.Now = o.Clock.Now
	}
	return o
}

// RecoveryReport says what Open found and repaired in the directory.
type RecoveryReport struct {
	Runs      int // run files loaded
	Running   int // of which were still running (see Journal.Running)
	TornTails int // run and transcript files whose incomplete last line was cut off
	// Discarded lists run files removed because their begin record never
	// completed: their Begin never returned, so nothing ran.
	Discarded []string
	// Corrupt lists the *.corrupt copies kept of files that were damaged
	// beyond a torn last line. A damaged run file keeps its valid prefix; one
	// whose begin record is unreadable is moved aside entirely.
	Corrupt []string
	Pruned  PruneReport // what retention did at Open
	// Migrated is what Open did to a journal kept by AgentSession name.
	Migrated LegacyMigration
}

// Journal is an open journal directory. Its methods are safe for concurrent use.
type Journal struct {
	dir     string
	opts    Options
	lock    *os.File
	closing chan struct{} // closed by Close: wakes waiting Events iterators
	closed  atomic.Bool

	mu       sync.Mutex
	runs     map[runKey]*runState
	lastGen  uint64 // the last runState.gen given out
	sessions map[string]*sessionState
	spaces   map[string]*namespaceState // by namespace; see indexRunLocked
	recovery RecoveryReport

	// tailBytes is the bytes of event records that running runs hold in
	// memory (their tails, events.go): what tests check stays bounded.
	tailBytes atomic.Int64

	leases     leaseTable    // per-session leases (lease.go)
	leaseEpoch int64         // the epoch of this process's lease tokens (lease.go)
	capacity   capacityIndex // reservations per server (capacity.go)
}

type runKey struct{ session, runID string }

// sessionState serializes the file work of one session: directory creation
// and every transcript operation.
type sessionState struct {
	name, dir string

	mu          sync.Mutex
	deleted     bool  // DeleteSession removed it; callers must fetch a fresh one
	dirsReady   bool  // runs/ exists and its parents were fsynced
	tsize       int64 // transcript size in bytes; -1 unknown
	tdirPending bool  // the transcript file was created and its directory entry not yet fsynced
	tfull       bool  // an append was refused for the size limit since the last reset (this process)
}

// Open opens (creating if needed) the journal in dir, takes its exclusive lock,
// loads the index of runs, repairs torn tails (RecoveryReport) and prunes by
// retention. A second Open of the same directory fails with ErrLocked until
// the first is closed or its process exits.
func Open(dir string, opts Options) (*Journal, error) {
	if dir == "" {
		return nil, errors.New("journal: open: empty directory")
	}
	if err := os.MkdirAll(filepath.Join(dir, sessionsDirName), dirMode); err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	lock, err := acquireLock(filepath.Join(dir, lockFileName))
	if err != nil {
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	j := &Journal{
		dir:      dir,
		opts:     opts.withDefaults(),
		lock:     lock,
		closing:  make(chan struct{}),
		runs:     map[runKey]*runState{},
		sessions: map[string]*sessionState{},
	}
	if j.recovery.Migrated, err = j.migrateLegacy(); err != nil {
		j.releaseLock()
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	if err := j.load(); err != nil {
		j.releaseLock()
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	if err := j.loadSessionFiles(); err != nil {
		j.releaseLock()
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	pruned, err := j.Prune()
	if err != nil {
		j.releaseLock()
		return nil, fmt.Errorf("journal: open %s: %w", dir, err)
	}
	j.recovery.Pruned = pruned
	return j, nil
}

func acquireLock(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, fileMode)
	if err != nil {
		return nil, fmt.Errorf("lock file: %w", err)
	}
	if err := lockFile(f); err != nil {
		holder, _ := io.ReadAll(io.LimitReader(f, 64))
		_ = f.Close()
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("%w (%s held by %s)", ErrLocked, path, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The pid is for people reading the file; the flock is the lock.
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}

func (j *Journal) releaseLock() {
	_ = unlockFile(j.lock)
	_ = j.lock.Close()
}

// Recovery returns what Open found and repaired.
func (j *Journal) Recovery() RecoveryReport {
	j.mu.Lock()
	defer j.mu.Unlock()
	r := j.recovery
	r.Discarded = append([]string(nil), r.Discarded...)
	r.Corrupt = append([]string(nil), r.Corrupt...)
	return r
}

// Close syncs and closes the files of running runs (they stay running on disk,
// as after a crash), wakes waiting Events iterators with ErrClosed and releases
// the lock. Further calls fail with ErrClosed; Close itself is idempotent.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed.Load() {
		j.mu.Unlock()
		return nil
	}
	j.closed.Store(true)
	close(j.closing)
	var live []*runState
	for _, rs := range j.runs {
		live = append(live, rs)
	}
	j.mu.Unlock()

	var errs []error
	for _, rs := range live {
		rs.wmu.Lock()
		if rs.f != nil {
			// A running run's events are durable at Close, as at its end.
			errs = append(errs, j.sync(rs.f), rs.f.Close())
			rs.f = nil
		}
		rs.wmu.Unlock()
	}
	errs = append(errs, j.writeHeldLeases())
	errs = append(errs, unlockFile(j.lock), j.lock.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("journal: close %s: %w", j.dir, err)
	}
	return nil
}

func (j *Journal) now() time.Time { return j.opts.Now().UTC() }

func (j *Journal) sync(f *os.File) error {
	if j.opts.noSync {
		return nil
	}
	if j.opts.onSync != nil {
		j.opts.onSync(f.Name())
	}
	return f.Sync()
}

func (j *Journal) syncDir(dir string) error {
	if j.opts.noSync {
		return nil
	}
	if j.opts.onSync != nil {
		j.opts.onSync(dir)
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return nil
}

// sessionLocked returns the state of a session, creating it; j.mu must be held.
func (j *Journal) sessionLocked(name string) *sessionState {
	s := j.sessions[name]
	if s == nil {
		ns, n, _ := strings.Cut(name, "/")
		s = &sessionState{name: name, dir: filepath.Join(j.dir, sessionsDirName, ns, n), tsize: -1}
		j.sessions[name] = s
	}
	return s
}

// withSession runs fn with the session's lock held, on a state that
// DeleteSession has not removed.
func (j *Journal) withSession(name string, fn func(*sessionState) error) error {
	if err := ValidateSession(name); err != nil {
		return err
	}
	for {
		j.mu.Lock()
		if j.closed.Load() {
			j.mu.Unlock()
			return ErrClosed
		}
		s := j.sessionLocked(name)
		j.mu.Unlock()
		s.mu.Lock()
		if s.deleted {
			s.mu.Unlock()
			continue
		}
		err := fn(s)
		s.mu.Unlock()
		return err
	}
}

// ensureDirs creates the session's directories and makes their entries
// durable; s.mu must be held.
func (j *Journal) ensureDirs(s *sessionState) error {
	if s.dirsReady {
		return nil
	}
	runs := filepath.Join(s.dir, runsDirName)
	if err := os.MkdirAll(runs, dirMode); err != nil {
		return fmt.Errorf("create session directory: %w", err)
	}
	// Never replay: a run file's entry is durable only with the entries of
	// the directories above it (once per session and process).
	nsDir := filepath.Dir(s.dir)
	for _, d := range []string{s.dir, nsDir, filepath.Dir(nsDir)} {
		if err := j.syncDir(d); err != nil {
			return err
		}
	}
	s.dirsReady = true
	return nil
}

// SessionKey is the journal's key of an AgentSession, "namespace/uid": its
// identity is the UID, so a session deleted and created again under its name
// never finds its predecessor's runs or transcript.
func SessionKey(namespace, uid string) string { return namespace + "/" + uid }

// Sessions lists the keys of the sessions that have a directory in the
// journal or a lease, for garbage collection of sessions that no longer
// exist.
func (j *Journal) Sessions() ([]string, error) {
	root := filepath.Join(j.dir, sessionsDirName)
	nsEntries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("journal: list sessions: %w", err)
	}
	var keys []string
	for _, nsEntry := range nsEntries {
		if !nsEntry.IsDir() {
			continue
		}
		entries, err := os.ReadDir(filepath.Join(root, nsEntry.Name()))
		if err != nil {
			return nil, fmt.Errorf("journal: list sessions: %w", err)
		}
		for _, e := range entries {
			if key := SessionKey(nsEntry.Name(), e.Name()); e.IsDir() && ValidateSession(key) == nil {
				keys = append(keys, key)
			}
		}
	}
	// A lease lives in memory: a session may hold one and have no
	// directory yet (no run, no transcript).
	listed := map[string]bool{}
	for _, key := range keys {
		listed[key] = true
	}
	leased := j.leaseSessions()
	slices.Sort(leased)
	for _, key := range leased {
		if !listed[key] {
			keys = append(keys, key)
		}
	}
	return keys, nil
}

// ValidateSession checks that session is a store key, "namespace/uid"
// (store.ValidateSession). Such names are safe as directory names as they
// are: no separators, no dot-only segments, no upper case (so no collisions
// on case-insensitive file systems).
var ValidateSession = store.ValidateSession

// runFileName is the file of a run: the hash keeps any runId out of the path.
func runFileName(runID string) string {
	sum := sha256.Sum256([]byte(runID))
	return hex.EncodeToString(sum[:]) + runFileExt
}

func (j *Journal) runPath(session, runID string) string {
	ns, name, _ := strings.Cut(session, "/")
	return filepath.Join(j.dir, sessionsDirName, ns, name, runsDirName, runFileName(runID))
}
