package pgtest

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
)

// NewDatabase creates an empty database for tb and returns its connection
// string; the database is dropped at tb's end, its sessions ended.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	name := fmt.Sprintf("t%d_%s", s.dbs.Add(1), strings.ToLower(nonIdent.ReplaceAllString(tb.Name(), "_")))
	name = name[:min(len(name), 63)] // PostgreSQL's identifier limit
	if err := s.exec(context.Background(), "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		tb.Fatalf("create database %s: %v", name, err)
	}
	tb.Cleanup(func() {
		if err := s.exec(context.Background(), "DROP DATABASE "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
			tb.Errorf("drop database %s: %v", name, err)
		}
	})
	return s.ConnString(name)
}

var nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)

// exec runs one statement as the superuser on the maintenance database.
func (s *Server) exec(ctx context.Context, sql string) error {
	conn, err := pgx.Connect(ctx, s.ConnString(superuser))
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close(ctx) }()
	_, err = conn.Exec(ctx, sql)
	return err
}

// shared is the server of a package's tests (Main, Shared).
var shared struct {
	sync.Mutex
	inMain bool
	srv    *Server
	err    error
}

// Main runs m's tests with a server that the first Shared call starts, and
// stops it after them: call it from TestMain.
func Main(m *testing.M) int {
	shared.Lock()
	shared.inMain = true
	shared.Unlock()
	code := m.Run()
	shared.Lock()
	defer shared.Unlock()
	if shared.srv != nil {
		if err := shared.srv.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "pgtest: stop the shared PostgreSQL: %v\n", err)
			code = max(code, 1)
		}
	}
	return code
}

// Shared returns the package's server, starting it on first use. It needs
// Main in the package's TestMain, which stops the server.
func Shared(tb testing.TB) *Server {
	tb.Helper()
	shared.Lock()
	defer shared.Unlock()
	if !shared.inMain {
		tb.Fatal("pgtest.Shared needs pgtest.Main in the package's TestMain (it stops the server)")
	}
	if shared.srv == nil && shared.err == nil {
		shared.srv, shared.err = start(options{host: loopback})
	}
	if shared.err != nil {
		tb.Fatalf("start PostgreSQL: %v", shared.err)
	}
	return shared.srv
}

// linkTree recreates the directory tree src at dst with hard links to its
// files (a copy across file systems), so that nobody reaches the binaries
// where the cache itself (under root's home) is closed to it. Symbolic links
// (the libraries' versioned names) are recreated as they are: relative.
func linkTree(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		switch {
		case d.IsDir():
			return os.MkdirAll(target, 0o755)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(path)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			if err := os.Link(path, target); err == nil {
				return nil
			}
			return copyFile(path, target)
		}
	})
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm()|0o444)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}
