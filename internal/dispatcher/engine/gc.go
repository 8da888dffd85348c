package engine

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/google/uuid"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/api/v1alpha1"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter/codex"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/dispatcher/store/journal"
)

// DefaultGCInterval is how often GarbageCollector runs by default.
const DefaultGCInterval = 10 * time.Minute

// GarbageCollector removes what the dispatcher keeps for AgentSessions that
// no longer exist — a session whose finalizer was removed by hand, or that
// was deleted while its app-server could not be reached: its journal runs and
// transcript, and its threads and working directory on every app-server the
// engine can reach. It runs once at start and then every Interval, on the
// leader only.
//
// It is safe against sessions that are being created: it lists what it may
// remove first and the existing AgentSessions (through an uncached reader)
// second, and a turn reads its AgentSession before it writes anything — so
// state found in the first step belongs to a session the second step sees,
// unless that session is gone. Working directories whose name is not a UID
// (the layout before sessions were keyed by UID) are left alone.
type GarbageCollector struct {
	// Engine reaches the app-servers and forgets remembered status.
	Engine *Engine
	// Store is the Engine's store.
	Store store.Store
	// Sessions lists AgentSessions; it must not be a cache that may lag
	// behind a creation (use the manager's API reader).
	Sessions client.Reader
	// Interval between collections; zero means DefaultGCInterval.
	Interval time.Duration
}

// GCReport says what one collection removed.
type GCReport struct {
	// Journal lists the session keys whose runs and transcript were deleted.
	Journal []string
	// Native lists "<server> <directory>" of removed working directories.
	Native []string
}

// NeedLeaderElection: only the leader collects.
func (g *GarbageCollector) NeedLeaderElection() bool { return true }

// Start collects until ctx ends; failures are logged and retried at the next
// interval.
func (g *GarbageCollector) Start(ctx context.Context) error {
	interval := g.Interval
	if interval <= 0 {
		interval = DefaultGCInterval
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		rep, err := g.Collect(ctx)
		if len(rep.Journal)+len(rep.Native) > 0 {
			g.Engine.log.Info("removed the state of AgentSessions that no longer exist", "journal", rep.Journal, "native", rep.Native)
		}
		if err != nil && ctx.Err() == nil {
			g.Engine.log.Error(err, "garbage collection of deleted sessions' state")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// nativeDir is a session working directory found on an app-server.
type nativeDir struct {
	server appServer
	key    string // journal.SessionKey of the directory's namespace and UID
	dir    string
}

// Collect runs one collection.
func (g *GarbageCollector) Collect(ctx context.Context) (GCReport, error) {
	var rep GCReport
	keys, err := g.Store.Sessions()
	if err != nil {
		return rep, err
	}
	dirs, nativeErr := g.sessionDirs(ctx)
	remembered := g.Engine.rememberedUIDs()
	var list v1alpha1.AgentSessionList
	if err := g.Sessions.List(ctx, &list); err != nil {
		return rep, fmt.Errorf("list AgentSessions: %w", err)
	}
	live, liveUIDs := map[string]bool{}, map[k8stypes.UID]bool{}
	for i := range list.Items {
		live[SessionKey(&list.Items[i])] = true
		liveUIDs[list.Items[i].UID] = true
	}
	for _, uid := range remembered {
		if !liveUIDs[uid] {
			g.Engine.forget(uid)
		}
	}
	errs := []error{nativeErr}
	for _, key := range keys {
		if live[key] {
			continue
		}
		switch err := g.Store.DeleteSession(key); {
		case errors.Is(err, store.ErrSessionBusy):
			// A run still ends; the next collection removes it.
		case err != nil:
			errs = append(errs, err)
		default:
			rep.Journal = append(rep.Journal, key)
		}
	}
	for _, d := range dirs {
		if live[d.key] {
			continue
		}
		if err := g.Engine.forgetOn(ctx, d.server, d.dir); err != nil {
			errs = append(errs, err)
			continue
		}
		rep.Native = append(rep.Native, d.server.name+" "+d.dir)
	}
	return rep, errors.Join(errs...)
}

// sessionDirs lists <root>/<namespace>/<uid> on every reachable app-server.
func (g *GarbageCollector) sessionDirs(ctx context.Context) ([]nativeDir, error) {
	servers, err := g.Engine.appServers(ctx)
	errs := []error{err}
	var out []nativeDir
	for _, s := range servers {
		namespaces, err := codex.ListDirectories(ctx, s.client, s.root)
		if err != nil {
			errs = append(errs, fmt.Errorf("app-server %s: %w", s.name, err))
			continue
		}
		for _, ns := range namespaces {
			uids, err := codex.ListDirectories(ctx, s.client, path.Join(s.root, ns))
			if err != nil {
				errs = append(errs, fmt.Errorf("app-server %s: %w", s.name, err))
				continue
			}
			for _, uid := range uids {
				if _, err := uuid.Parse(uid); err != nil || strings.ToLower(uid) != uid {
					continue // not a session directory of this layout
				}
				out = append(out, nativeDir{server: s, key: journal.SessionKey(ns, uid), dir: path.Join(s.root, ns, uid)})
			}
		}
	}
	return out, errors.Join(errs...)
}
