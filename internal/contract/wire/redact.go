package wire

import (
	"net/http"
	"regexp"
)

// What Redacted replaces in the message of a server-side error: URLs,
// network addresses (IPv4, bracketed IPv6, host:port) and absolute
// filesystem paths. These come from wrapped errors (a dial's "dial tcp
// 10.0.0.7:4500", a Codex error naming a file under its home, a journal
// path) and tell a gateway nothing it can act on, while they map the
// cluster and the dispatcher's disk for anyone who can send a turn.
var redactions = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`[A-Za-z][A-Za-z0-9+.-]*://[^\s"'<>]*[^\s"'<>:.,)]`), "<url>"},
	{regexp.MustCompile(`\[[0-9A-Fa-f:.%]+\](:\d+)?`), "<address>"},
	{regexp.MustCompile(`\b\d{1,3}(\.\d{1,3}){3}(:\d+)?\b`), "<address>"},
	{regexp.MustCompile(`\b[A-Za-z0-9-]+(\.[A-Za-z0-9-]+)+:\d{1,5}\b`), "<address>"},
	{regexp.MustCompile(`(^|[\s"'(=\[,])/[^\s"'),;\]]*[^\s"'),;\]:.]`), "${1}<path>"},
}

// Redacted is e as a gateway may see it: a server-side error (HTTP status
// 500 or above) without the URLs, addresses and absolute paths of its
// message; other errors (a caller's mistake, naming its own request) are e
// itself. The full error belongs in the dispatcher's log.
func (e *Error) Redacted() *Error {
	if e == nil || e.HTTPStatus() < http.StatusInternalServerError {
		return e
	}
	msg := e.Message
	for _, r := range redactions {
		msg = r.re.ReplaceAllString(msg, r.with)
	}
	if msg == e.Message {
		return e
	}
	out := *e
	out.Message = msg
	return &out
}
