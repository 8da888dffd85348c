package journal

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"
	"unicode/utf8"

	"github.com/openclaw/harness-operator/internal/dispatcher/store"
)

// Capacity reservations (store.Store's Reserve, Unreserve, Reserved): the
// servers a session holds a place on are kept in <session>/reservations.json,
//
//	{"servers":["team-a/harness-0"]}
//
// replaced whole at every change (sessionfiles.go), and counted per server in
// memory, from all sessions' files at Open. The limit is checked and the
// place taken in memory in one step under the index's lock, before the file
// is written, so concurrent Reserves never take a server past its limit; a
// write that fails gives the place back.

const (
	reservationsFileName = "reservations.json"
	// maxServerBytes bounds a server name (a "namespace/pod" is far shorter).
	maxServerBytes = 512
)

// reservationsFile is reservations.json.
type reservationsFile struct {
	Servers []string `json:"servers"`
}

// capacityIndex is every reservation, by server and by session.
type capacityIndex struct {
	mu        sync.Mutex
	byServer  map[string]map[string]bool // server → sessions holding a place
	bySession map[string]map[string]bool // session → servers it holds a place on
}

func (c *capacityIndex) add(server, session string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.addLocked(server, session)
}

func (c *capacityIndex) addLocked(server, session string) {
	if c.byServer == nil {
		c.byServer, c.bySession = map[string]map[string]bool{}, map[string]map[string]bool{}
	}
	if c.byServer[server] == nil {
		c.byServer[server] = map[string]bool{}
	}
	if c.bySession[session] == nil {
		c.bySession[session] = map[string]bool{}
	}
	c.byServer[server][session] = true
	c.bySession[session][server] = true
}

func (c *capacityIndex) removeLocked(server, session string) {
	delete(c.byServer[server], session)
	if len(c.byServer[server]) == 0 {
		delete(c.byServer, server)
	}
	delete(c.bySession[session], server)
	if len(c.bySession[session]) == 0 {
		delete(c.bySession, session)
	}
}

// serversLocked is the content of the session's reservations.json.
func (c *capacityIndex) serversLocked(session string) []string {
	return slices.Sorted(maps.Keys(c.bySession[session]))
}

func validReservation(server string, limit int) error {
	if server == "" || len(server) > maxServerBytes || !utf8.ValidString(server) {
		return fmt.Errorf("%w: server %q must be 1 to %d bytes of UTF-8", store.ErrInvalidReservation, server, maxServerBytes)
	}
	if limit < 1 {
		return fmt.Errorf("%w: limit %d of server %s must be at least 1", store.ErrInvalidReservation, limit, server)
	}
	return nil
}

// Reserve implements store.Store.
func (j *Journal) Reserve(_ context.Context, server, session string, limit int) error {
	if err := validReservation(server, limit); err != nil {
		return err
	}
	err := j.withSession(session, func(s *sessionState) error {
		c := &j.capacity
		c.mu.Lock()
		if c.byServer[server][session] {
			c.mu.Unlock()
			return nil
		}
		if held := len(c.byServer[server]); held >= limit {
			c.mu.Unlock()
			return &store.CapacityError{Server: server, Held: held, Limit: limit}
		}
		c.addLocked(server, session)
		servers := c.serversLocked(session)
		c.mu.Unlock()
		if err := j.writeReservations(s, servers); err != nil {
			c.mu.Lock()
			c.removeLocked(server, session)
			c.mu.Unlock()
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: reserve a place on server %s for session %s: %w", server, session, err)
	}
	return nil
}

// Unreserve implements store.Store.
func (j *Journal) Unreserve(_ context.Context, server, session string) error {
	if err := validReservation(server, 1); err != nil {
		return err
	}
	err := j.withSession(session, func(s *sessionState) error {
		c := &j.capacity
		c.mu.Lock()
		if !c.byServer[server][session] {
			c.mu.Unlock()
			return nil
		}
		servers := slices.DeleteFunc(c.serversLocked(session), func(x string) bool { return x == server })
		c.mu.Unlock()
		// The place is given up once the file no longer holds it: were it
		// freed first, another session could take it and a failed write
		// would leave the server over its limit.
		if err := j.writeReservations(s, servers); err != nil {
			return err
		}
		c.mu.Lock()
		c.removeLocked(server, session)
		c.mu.Unlock()
		return nil
	})
	if err != nil {
		return fmt.Errorf("journal: release the place on server %s of session %s: %w", server, session, err)
	}
	return nil
}

// Reserved implements store.Store.
func (j *Journal) Reserved(_ context.Context, server string) (int, error) {
	if err := validReservation(server, 1); err != nil {
		return 0, err
	}
	if j.closed.Load() {
		return 0, store.ErrClosed
	}
	c := &j.capacity
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.byServer[server]), nil
}

// writeReservations replaces the session's reservations.json, or removes it
// when the session holds none; s.mu must be held.
func (j *Journal) writeReservations(s *sessionState, servers []string) error {
	if len(servers) == 0 {
		return j.removeSessionFile(s, reservationsFileName)
	}
	data, err := json.Marshal(reservationsFile{Servers: servers})
	if err != nil {
		return err
	}
	return j.replaceSessionFile(s, reservationsFileName, append(data, '\n'))
}

// forgetReservations drops a deleted session's reservations.
func (j *Journal) forgetReservations(session string) {
	c := &j.capacity
	c.mu.Lock()
	defer c.mu.Unlock()
	for server := range c.bySession[session] {
		c.removeLocked(server, session)
	}
}
