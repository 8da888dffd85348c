package appserver_test

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// nopWriteCloser is the stdin of a server that is never written to.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// FuzzStdioFrames: whatever an app-server writes to its stdout, the stdio
// transport never panics and reads exactly its non-blank lines, trimmed,
// one message each (a last line without its newline too), then the end of
// the stream; byte by byte it reads the same.
func FuzzStdioFrames(f *testing.F) {
	for _, seed := range []string{
		"{\"id\":1,\"result\":{}}\n{\"method\":\"x\"}\n",
		"\n\n  {\"a\":1}  \r\n\t\n{\"b\":2}",
		"{\"a\":\"line\\nbreak escaped\"}\n", "no json at all\n", "", "\n", "\r\n", " ",
		"{\"a\":1}\r{\"b\":2}\n", "\x00\xff\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, out []byte) {
		var want [][]byte
		for _, line := range bytes.Split(out, []byte("\n")) {
			if line = bytes.TrimSpace(line); len(line) > 0 {
				want = append(want, line)
			}
		}
		for _, r := range []io.Reader{bytes.NewReader(out), iotest.OneByteReader(bytes.NewReader(out))} {
			tr := appserver.NewStdioTransport(io.NopCloser(r), nopWriteCloser{io.Discard})
			var got [][]byte
			for {
				msg, err := tr.ReadMessage()
				if err != nil {
					if !errors.Is(err, io.EOF) {
						t.Fatalf("the stream ended with %v, not its end", err)
					}
					break
				}
				got = append(got, msg)
			}
			if len(got) != len(want) {
				t.Fatalf("read %q, want the non-blank lines %q", got, want)
			}
			for i := range got {
				if !bytes.Equal(got[i], want[i]) {
					t.Fatalf("message %d is %q, want %q", i, got[i], want[i])
				}
			}
		}
	})
}
