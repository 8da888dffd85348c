// Package pgtest runs a real PostgreSQL server for tests, from the binaries
// hack/setup-postgres.sh caches (POSTGRES_DIR names them; `make
// test-postgres` sets it). PostgreSQL refuses to run as root, which is who
// runs the tests here, so initdb and the server run as the unprivileged
// nobody (65534:65534, no supplementary groups) on a data directory in a
// temporary directory, listening on 127.0.0.1 only (or on the one address
// StartListening names) at a leased port, with its unix socket inside that
// directory. Nothing is installed on the machine: no
// service, no user. Stop ends the server and removes the directory; the
// server is also killed when the test process dies (the parent-death signal),
// so a crashed test leaves no server running (only its temporary directory).
//
// A package's tests share one server (Main in TestMain, then Shared); each
// test takes its own database (NewDatabase), dropped at its end.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/openclaw/harness-operator/internal/testutil"
)

// EnvDir names the directory hack/setup-postgres.sh prints: <dir>/bin holds
// postgres and initdb.
const EnvDir = "POSTGRES_DIR"

// The unprivileged identity the server runs as: nobody and nogroup.
const (
	uid = 65534
	gid = 65534
)

const (
	superuser    = "postgres"
	readyTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
)

// Server is one running PostgreSQL server.
type Server struct {
	dir      string // temporary root: pg (the binaries), data, sock, postgres.log
	host     string // the one address it listens on
	port     int
	password string // the superuser's, random per server
	opts     options
	cmd      *exec.Cmd
	exited   chan struct{} // closed when the server process has exited
	waitErr  error         // its exit status, set before exited is closed
	dbs      atomic.Int64  // databases created, for unique names
}

// Start starts a server for one test and stops it at the test's end.
// Durability is off (a test's data dies with it).
func Start(tb testing.TB) *Server {
	tb.Helper()
	return startFor(tb, options{host: loopback})
}

// StartDurable is Start with PostgreSQL's default durability — fsync,
// synchronous_commit and full_page_writes on, every commit flushed to the
// disk — for a benchmark that compares what a store's writes cost with the
// file journal's fsyncs.
func StartDurable(tb testing.TB) *Server {
	tb.Helper()
	return startFor(tb, options{host: loopback, durable: true})
}

// StartCrashable is StartDurable for a test that crashes the server
// (Crash, then Restart): the WAL writer waits 10 s between its rounds, so
// what commits without waiting for its flush stays in the server's memory,
// and a crash loses it, until a synchronous commit flushes the WAL.
func StartCrashable(tb testing.TB) *Server {
	tb.Helper()
	return startFor(tb, options{host: loopback, durable: true, slowWALWriter: true})
}

// StartListening starts a server for one test on host instead of loopback,
// admitting password logins from clientCIDR too: for clients in Pods, with
// host the address they reach this machine at (the CNI bridge's gateway).
func StartListening(tb testing.TB, host, clientCIDR string) *Server {
	tb.Helper()
	return startFor(tb, options{host: host, clientCIDR: clientCIDR})
}

const loopback = "127.0.0.1"

// options are how a server listens and how durable it is.
type options struct {
	host       string // the one address it listens on
	clientCIDR string // admitted besides loopback (empty: none)
	durable    bool   // PostgreSQL's default durability (otherwise off)
	// slowWALWriter sets wal_writer_delay to its longest, 10 s.
	slowWALWriter bool
}

func startFor(tb testing.TB, o options) *Server {
	tb.Helper()
	s, err := start(o)
	if err != nil {
		tb.Fatalf("start PostgreSQL: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("stop PostgreSQL: %v", err)
		}
	})
	return s
}

// Port is the server's port on its address (127.0.0.1 unless StartListening).
func (s *Server) Port() int { return s.port }

// Dir is the server's temporary directory (removed by Stop).
func (s *Server) Dir() string { return s.dir }

// PID is the server's (the postmaster's) process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// ConnString is the connection string of database db as the superuser.
func (s *Server) ConnString(db string) string {
	return fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable",
		s.host, s.port, superuser, s.password, db)
}

func start(o options) (s *Server, err error) {
	src := os.Getenv(EnvDir)
	if src == "" {
		return nil, fmt.Errorf("%s is not set: run `export %s=$(hack/setup-postgres.sh)` (make test-postgres does)", EnvDir, EnvDir)
	}
	if _, err := os.Stat(filepath.Join(src, "bin", "postgres")); err != nil {
		return nil, fmt.Errorf("%s=%s holds no bin/postgres (run hack/setup-postgres.sh): %w", EnvDir, src, err)
	}
	dir, err := os.MkdirTemp("", "pgtest-")
	if err != nil {
		return nil, err
	}
	s = &Server{dir: dir, host: o.host, opts: o, exited: make(chan struct{})}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	// nobody must reach the binaries, the data and the socket: the root is
	// world-searchable, the data and socket directories are nobody's own.
	if err := os.Chmod(dir, 0o755); err != nil {
		return nil, err
	}
	if err := linkTree(src, s.path("pg")); err != nil {
		return nil, fmt.Errorf("link the PostgreSQL binaries into %s: %w", dir, err)
	}
	for _, d := range []string{"data", "sock"} {
		if err := os.Mkdir(s.path(d), 0o700); err != nil {
			return nil, err
		}
		if err := os.Chown(s.path(d), uid, gid); err != nil {
			return nil, err
		}
	}
	if err := s.initdb(); err != nil {
		return nil, err
	}
	if o.clientCIDR != "" {
		if err := s.admit(o.clientCIDR); err != nil {
			return nil, err
		}
	}
	if s.port, err = testutil.FreePort(); err != nil {
		return nil, err
	}
	if err := s.run(); err != nil {
		return nil, err
	}
	return s, s.waitReady()
}

func (s *Server) path(elem ...string) string {
	return filepath.Join(append([]string{s.dir}, elem...)...)
}

// unprivileged is cmd run as nobody, killed when this process dies.
func unprivileged(cmd *exec.Cmd) *exec.Cmd {
	cmd.Env = []string{"LC_ALL=C", "TZ=UTC"}
	// Go sets the parent-death signal after the credentials (a change of
	// uid clears it, which is why setpriv cannot be used here).
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: []uint32{}},
		Pdeathsig:  syscall.SIGKILL,
	}
	return cmd
}

// initdb creates the cluster with a random superuser password and password
// authentication only.
func (s *Server) initdb() error {
	pw := make([]byte, 16)
	if _, err := rand.Read(pw); err != nil {
		return err
	}
	s.password = hex.EncodeToString(pw)
	pwfile := s.path("sock", "pwfile")
	if err := os.WriteFile(pwfile, []byte(s.password+"\n"), 0o600); err != nil {
		return err
	}
	defer func() { _ = os.Remove(pwfile) }()
	if err := os.Chown(pwfile, uid, gid); err != nil {
		return err
	}
	out, err := unprivileged(exec.Command(s.path("pg", "bin", "initdb"), "--pgdata", s.path("data"),
		"--username", superuser, "--pwfile", pwfile, "--auth", "scram-sha-256",
		"--encoding", "UTF8", "--locale", "C", "--no-sync")).CombinedOutput()
	if err != nil {
		return fmt.Errorf("initdb: %w\n%s", err, out)
	}
	return nil
}

// admit lets clients from cidr log in with the password (initdb's
// pg_hba.conf admits loopback only).
func (s *Server) admit(cidr string) error {
	if _, _, err := net.ParseCIDR(cidr); err != nil {
		return fmt.Errorf("client CIDR: %w", err)
	}
	f, err := os.OpenFile(s.path("data", "pg_hba.conf"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(f, "host all all %s scram-sha-256\n", cidr)
	return errors.Join(err, f.Close())
}

// run starts the server: one address, its socket in the temporary
// directory, durability off unless durable (a test's data dies with it).
func (s *Server) run() error {
	logFile, err := os.OpenFile(s.path("postgres.log"), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	args := []string{"-D", s.path("data"),
		"-p", strconv.Itoa(s.port), "-c", "listen_addresses=" + s.host,
		"-c", "unix_socket_directories=" + s.path("sock"), "-c", "max_connections=300"}
	if !s.opts.durable {
		args = append(args, "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off")
	}
	if s.opts.slowWALWriter {
		args = append(args, "-c", "wal_writer_delay=10s")
	}
	s.exited = make(chan struct{})
	s.cmd = unprivileged(exec.Command(s.path("pg", "bin", "postgres"), args...))
	s.cmd.Stdout, s.cmd.Stderr = logFile, logFile
	if err := s.cmd.Start(); err != nil {
		return fmt.Errorf("start postgres: %w", err)
	}
	cmd, exited := s.cmd, s.exited
	go func() {
		s.waitErr = cmd.Wait()
		close(exited)
	}()
	return nil
}

// waitReady waits until the server accepts a connection, or fails with its
// log when it exits first.
func (s *Server) waitReady() error {
	deadline := time.Now().Add(readyTimeout)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		conn, err := pgx.Connect(ctx, s.ConnString(superuser))
		cancel()
		if err == nil {
			return conn.Close(context.Background())
		}
		select {
		case <-s.exited:
			return fmt.Errorf("postgres exited before accepting connections (%w):\n%s", s.waitErr, s.log())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("postgres accepted no connection within %s: %w\n%s", readyTimeout, err, s.log())
		}
	}
}

// log is the server's log, for errors.
func (s *Server) log() string {
	b, _ := os.ReadFile(s.path("postgres.log"))
	return strings.TrimSpace(string(b))
}

// Crash ends the server as a crash would: an immediate shutdown (SIGQUIT),
// in which no process writes what is in the server's memory. Restart
// starts it again on the same data, which recovers from its WAL.
func (s *Server) Crash() error {
	if err := s.cmd.Process.Signal(syscall.SIGQUIT); err != nil {
		return fmt.Errorf("crash postgres: %w", err)
	}
	select {
	case <-s.exited:
		return nil
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return fmt.Errorf("postgres did not end within %s of SIGQUIT and was killed", stopTimeout)
	}
}

// Restart starts the server again, after Crash, on the same data, address
// and port, and waits until it has recovered and accepts connections.
func (s *Server) Restart() error {
	select {
	case <-s.exited:
	default:
		return errors.New("restart postgres: it is still running (Crash it first)")
	}
	if err := s.run(); err != nil {
		return err
	}
	return s.waitReady()
}

// Stop ends the server (a fast shutdown: sessions are ended, then a kill
// after stopTimeout) and removes its directory. It is idempotent.
func (s *Server) Stop() error {
	var err error
	if s.cmd != nil && s.cmd.Process != nil {
		_ = s.cmd.Process.Signal(syscall.SIGINT)
		select {
		case <-s.exited:
		case <-time.After(stopTimeout):
			_ = s.cmd.Process.Kill()
			<-s.exited
			err = fmt.Errorf("postgres did not stop within %s and was killed", stopTimeout)
		}
	}
	return errors.Join(err, os.RemoveAll(s.dir))
}
