package codex

import (
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/adapter"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// A turn's images[].path can only make Codex read a file inside the
// session's working directory: climbing out with `..`, an absolute path
// elsewhere and a symbolic link out (to a file or through a directory) are
// refused as BadRequest naming the field, before any thread or model
// request; the same turn with a file of the working directory runs and the
// image reaches the model.
func TestImagePathConfinedToWorkingDirectory(t *testing.T) {
	t.Parallel()
	r := newRig(t, codextest.Options{})
	r.stub.When("LOOK", stubmodel.Text("seen"))
	cwd := r.input("").Cwd
	png, _ := base64.StdEncoding.DecodeString(onePixelPNG)
	outside := filepath.Join(r.srv.Workdir, "outside.png")
	for _, f := range []string{outside, filepath.Join(cwd, "dot.png")} {
		if err := os.MkdirAll(filepath.Dir(f), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f, png, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(cwd, "link.png")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(r.srv.Workdir, filepath.Join(cwd, "up")); err != nil {
		t.Fatal(err)
	}

	attacks := []struct{ name, path, why string }{
		{"parent traversal", cwd + "/../../../../etc/passwd", "inside the session's working directory"},
		{"absolute path elsewhere", "/etc/passwd", "inside the session's working directory"},
		{"the working directory itself", cwd, "inside the session's working directory"},
		{"symbolic link to a file outside", filepath.Join(cwd, "link.png"), "symbolic link"},
		{"symbolic link through a directory", filepath.Join(cwd, "up", "outside.png"), "symbolic link"},
		{"missing file", filepath.Join(cwd, "nope.png"), "readable file"},
	}
	for _, a := range attacks {
		in := r.input("LOOK at this")
		in.Images = []wire.Image{{URL: "data:image/png;base64," + onePixelPNG}, {Path: a.path}}
		_, err := Start(testCtx(t, 20*time.Second), r.c, in, adapter.Hooks{})
		var we *wire.Error
		if !errors.As(err, &we) || we.Code != wire.CodeBadRequest ||
			!strings.Contains(we.Message, "images[1].path") || !strings.Contains(we.Message, a.why) {
			t.Errorf("%s (%s): err %v, want BadRequest naming images[1].path (%q)", a.name, a.path, err, a.why)
		}
		if we != nil && strings.Contains(we.Message, cwd+" ") {
			t.Errorf("%s: the refusal names the server's working directory: %s", a.name, we.Message)
		}
	}
	// A relative path is refused by the input shape (it must be absolute).
	in := r.input("LOOK at this")
	in.Images = []wire.Image{{Path: "../../etc/passwd"}}
	if _, err := Start(testCtx(t, 10*time.Second), r.c, in, adapter.Hooks{}); !errors.Is(err, adapter.ErrInvalidInput) ||
		!strings.Contains(err.Error(), "images[0]") {
		t.Errorf("relative path: err %v, want ErrInvalidInput naming images[0]", err)
	}
	if n := len(r.stub.Requests()); n != 0 {
		t.Fatalf("%d model requests after refused turns, want 0", n)
	}

	// Control: a file of the working directory.
	in = r.input("LOOK at this")
	in.Images = []wire.Image{{Path: filepath.Join(cwd, "dot.png")}}
	res := run(t, r, in, &recorder{})
	if res.Terminal.Kind != wire.TerminalOK {
		t.Fatalf("control: terminal %+v", res.Terminal)
	}
	reqs := r.stub.RequestsContaining("LOOK")
	if len(reqs) != 1 {
		t.Fatalf("control: %d model requests, want 1", len(reqs))
	}
	last := reqs[0].Input[len(reqs[0].Input)-1]
	if n := strings.Count(string(last.Content), `"input_image"`); n != 1 {
		t.Fatalf("control: the prompt reached the model with %d images, want 1: %s", n, last.Content)
	}
}
