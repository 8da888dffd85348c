//go:build postgres

package pgtest

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"net"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestServerRunsUnprivilegedOnLoopbackOnly: the server runs as nobody, takes
// TCP connections on 127.0.0.1 only and keeps its unix socket in its own
// directory.
func TestServerRunsUnprivilegedOnLoopbackOnly(t *testing.T) {
	s := Start(t)
	status, err := os.ReadFile("/proc/" + strconv.Itoa(s.PID()) + "/status")
	if err != nil {
		t.Fatalf("read the server's status: %v", err)
	}
	creds := map[string]string{}
	for line := range strings.SplitSeq(string(status), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && (k == "Uid" || k == "Gid" || k == "Groups") {
			creds[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	if want := map[string]string{"Uid": "65534 65534 65534 65534", "Gid": "65534 65534 65534 65534", "Groups": ""}; !maps.Equal(creds, want) {
		t.Fatalf("the server's credentials: %q, want %q (nobody, no supplementary groups)", creds, want)
	}
	conn := connect(t, s.ConnString(superuser))
	for setting, want := range map[string]string{"listen_addresses": "127.0.0.1", "unix_socket_directories": s.path("sock")} {
		var got string
		if err := conn.QueryRow(context.Background(), "SELECT current_setting($1)", setting).Scan(&got); err != nil || got != want {
			t.Fatalf("%s = %q, %v; want %q", setting, got, err, want)
		}
	}
}

// TestStopEndsTheServerAndRemovesItsDirectory: after Stop nothing of the
// server is left: no process, no directory.
func TestStopEndsTheServerAndRemovesItsDirectory(t *testing.T) {
	s := Start(t)
	pid := s.PID()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("signal 0 to the server's pid %d after Stop: %v, want ESRCH (no such process)", pid, err)
	}
	if _, err := os.Stat(s.Dir()); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the server's directory after Stop: %v, want it removed", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatalf("second Stop: %v", err)
	}
}

// TestEachTestGetsItsOwnDatabaseDroppedAtItsEnd: databases of two tests are
// separate, and a test's database is gone after it.
func TestEachTestGetsItsOwnDatabaseDroppedAtItsEnd(t *testing.T) {
	s := Shared(t)
	var names []string
	for _, sub := range []string{"first", "second"} {
		t.Run(sub, func(t *testing.T) {
			conn := connect(t, s.NewDatabase(t))
			ctx := context.Background()
			if _, err := conn.Exec(ctx, "CREATE TABLE mine (x int)"); err != nil {
				t.Fatalf("create a table: %v", err)
			}
			var name string
			if err := conn.QueryRow(ctx, "SELECT current_database()").Scan(&name); err != nil {
				t.Fatalf("current_database: %v", err)
			}
			names = append(names, name)
			_ = conn.Close(ctx)
		})
	}
	if len(names) != 2 || names[0] == names[1] {
		t.Fatalf("databases of the two tests: %v, want two different ones", names)
	}
	conn := connect(t, s.ConnString(superuser))
	var left int
	if err := conn.QueryRow(context.Background(), "SELECT count(*) FROM pg_database WHERE datname = ANY($1)", names).Scan(&left); err != nil || left != 0 {
		t.Fatalf("databases of ended tests still there: %d, %v; want 0", left, err)
	}
}

// TestDurableServerFlushesCommitsAsPostgreSQLDoesByDefault: a benchmark's
// durable server has fsync, synchronous_commit and full_page_writes on — the
// server's defaults — where a test's server has them off.
func TestDurableServerFlushesCommitsAsPostgreSQLDoesByDefault(t *testing.T) {
	for _, c := range []struct {
		name  string
		start func(testing.TB) *Server
		want  string
	}{{"durable", StartDurable, "on"}, {"test", Start, "off"}} {
		t.Run(c.name, func(t *testing.T) {
			s := c.start(t)
			conn := connect(t, s.ConnString(superuser))
			for _, setting := range []string{"fsync", "synchronous_commit", "full_page_writes"} {
				var got string
				if err := conn.QueryRow(context.Background(), "SELECT current_setting($1)", setting).Scan(&got); err != nil || got != c.want {
					t.Fatalf("%s = %q, %v; want %q", setting, got, err, c.want)
				}
			}
		})
	}
}

func connect(t *testing.T, connString string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), connString)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close(context.Background()) })
	return conn
}

// TestServerListensWhereToldAndAdmitsTheClientRange: for clients in Pods, the
// server listens on the one address it is given (here 127.0.0.2, standing in
// for the bridge's gateway) and takes password logins from the client range
// it is given, and from nowhere else.
func TestServerListensWhereToldAndAdmitsTheClientRange(t *testing.T) {
	s := StartListening(t, "127.0.0.2", "127.0.0.3/32")
	from := func(local string) error {
		cfg, err := pgx.ParseConfig(s.ConnString(superuser))
		if err != nil {
			t.Fatal(err)
		}
		cfg.DialFunc = (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(local)}}).DialContext
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		conn, err := pgx.ConnectConfig(ctx, cfg)
		if err != nil {
			return err
		}
		return conn.Close(ctx)
	}
	if !strings.HasPrefix(s.ConnString(superuser), "host=127.0.0.2 ") {
		t.Fatalf("connection string %q does not name the address", s.ConnString(superuser))
	}
	if err := from("127.0.0.3"); err != nil {
		t.Fatalf("a client in the admitted range: %v", err)
	}
	if err := from("127.0.0.4"); err == nil || !strings.Contains(err.Error(), "no pg_hba.conf entry") {
		t.Fatalf("a client outside the admitted range: %v, want no pg_hba.conf entry", err)
	}
	if _, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(s.Port()))); err == nil {
		t.Fatal("the server also listens on 127.0.0.1")
	}
}

// TestACrashLosesWhatNoCommitFlushed: after Crash and Restart the server
// holds what was committed synchronously, and has lost what was committed
// without waiting for its flush since: the tests of crashes rely on both.
func TestACrashLosesWhatNoCommitFlushed(t *testing.T) {
	s := StartCrashable(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, s.ConnString(superuser))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	for _, sql := range []string{
		"CREATE TABLE t (v text)",
		"INSERT INTO t VALUES ('flushed')",
		"BEGIN; SET LOCAL synchronous_commit = off; INSERT INTO t VALUES ('not flushed'); COMMIT",
	} {
		if _, err := conn.Exec(ctx, sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	_ = conn.Close(ctx)
	if err := s.Crash(); err != nil {
		t.Fatalf("Crash: %v", err)
	}
	if err := s.Restart(); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	conn, err = pgx.Connect(ctx, s.ConnString(superuser))
	if err != nil {
		t.Fatalf("connect after the restart: %v", err)
	}
	defer func() { _ = conn.Close(ctx) }()
	rows, err := conn.Query(ctx, "SELECT v FROM t ORDER BY v")
	if err != nil {
		t.Fatalf("read after the restart: %v", err)
	}
	got, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("read after the restart: %v", err)
	}
	if strings.Join(got, ",") != "flushed" {
		t.Fatalf("rows after the crash: %q, want only the synchronously committed one", got)
	}
}
