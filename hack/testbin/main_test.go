package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestGroupByName(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   []string
		want [][]string
	}{
		{"distinct names share one group", []string{"m/b", "m/a"}, [][]string{{"m/a", "m/b"}}},
		{"a shared name splits, in path order", []string{"m/test/dispatcher", "m/cmd/dispatcher", "m/x"},
			[][]string{{"m/cmd/dispatcher", "m/x"}, {"m/test/dispatcher"}}},
		{"three of a name make three groups", []string{"m/c/p", "m/a/p", "m/b/p"}, [][]string{{"m/a/p"}, {"m/b/p"}, {"m/c/p"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pkgs []*pkg
			for _, p := range tc.in {
				pkgs = append(pkgs, &pkg{importPath: p})
			}
			var got [][]string
			for _, g := range groupByName(pkgs) {
				var names []string
				for _, p := range g {
					names = append(names, p.importPath)
				}
				got = append(got, names)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("groups = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestRun runs a module of three packages (two share a name, one fails)
// twice: a failing package fails the run with its output, the others pass
// in their own directories, and the second run finds the binaries up to
// date instead of linking them again.
func TestRun(t *testing.T) {
	mod := t.TempDir()
	write := func(name, body string) {
		t.Helper()
		p := filepath.Join(mod, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("go.mod", "module example.test/m\n\ngo 1.26\n")
	write("a/p/p_test.go", "package p\nimport (\"os\"; \"testing\")\nfunc TestDir(t *testing.T) { if _, err := os.Stat(\"here\"); err != nil { t.Fatal(err) } }\n")
	write("a/p/here", "")
	write("b/p/p_test.go", "package p\nimport \"testing\"\nfunc TestFails(t *testing.T) { t.Fatal(\"b/p fails on purpose\") }\n")
	write("c/none/none.go", "package none\n")
	t.Setenv("HARNESS_CACHE_DIR", t.TempDir())
	t.Chdir(mod)

	out := testbinOutput(t, mod)
	for _, want := range []string{"ok  \texample.test/m/a/p\t", "b/p fails on purpose", "FAIL\texample.test/m/b/p\t", "?   \texample.test/m/c/none\t[no test files]", "\nFAIL\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	dir, err := configDir(options{})
	if err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(filepath.Join(dir, "g0", "p.test"))
	if err != nil {
		t.Fatal(err)
	}
	// Up to date: go test -c -o leaves the file as it was (it only touches
	// its mtime); a relink writes a new file.
	_ = testbinOutput(t, mod)
	after, err := os.Stat(filepath.Join(dir, "g0", "p.test"))
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Errorf("the second run linked a/p's binary again")
	}
}

// testbinOutput runs testbin's run on the module's packages and returns
// what it printed; the run must fail (b/p fails).
func testbinOutput(t *testing.T, mod string) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestHelperProcess$")
	cmd.Dir = mod
	cmd.Env = append(os.Environ(), "TESTBIN_HELPER=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("testbin passed with a failing package:\n%s", out)
	}
	return string(out)
}

// TestHelperProcess is testbin's main in a process of its own (it prints
// to stdout and exits).
func TestHelperProcess(t *testing.T) {
	if os.Getenv("TESTBIN_HELPER") != "1" {
		t.Skip("only as testbinOutput's child")
	}
	code, err := run(options{parallel: 2, count: 1, timeout: time.Minute}, []string{"./..."})
	if err != nil {
		t.Fatal(err)
	}
	os.Exit(code)
}
