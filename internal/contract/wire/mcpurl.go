package wire

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"

	whatwg "github.com/nlnwa/whatwg-url/url"
)

// How an MCP server's URL is checked.
//
// Codex, not the dispatcher, requests the URL, and its HTTP client parses
// URLs by the WHATWG URL Standard: it reads `\` as `/`, removes `.`, `..`,
// `%2e` and `%2e%2e` segments, lowercases the host and drops a default
// port. A check on what Go's net/url parsed is therefore a check on another
// URL than the one requested (`https://h/allowed/..\secret` is
// `https://h/secret` to Codex). So a URL is admitted only in its WHATWG
// canonical form: the string the turn sends must be exactly what the
// standard serialises it to, and the allow-list is compared with that
// string. What a server may still read differently from a canonical URL is
// refused as well: percent-encoded `.`, `/`, `\` and `%`, empty segments and
// segments a server may take for dot segments (`..;`).

// mcpHostRE is the host of a canonical MCP URL that every parser reads
// alike: a DNS name or IPv4 address (WHATWG serialises both in lowercase
// ASCII), or a bracketed IPv6 address.
var mcpHostRE = regexp.MustCompile(`^([a-z0-9_-]+\.)*[a-z0-9_-]+\.?$|^\[[0-9a-f:.]+\]$`)

// ValidMCPURL checks an MCP server URL: absolute http(s) with a host, no
// user information (it would be journaled with the request), no fragment,
// written exactly as the WHATWG URL Standard serialises it (what Codex
// requests), and a path that no server reads as another path. The error
// says what to change (the caller names the field).
func ValidMCPURL(raw string) error {
	_, err := canonicalMCPURL(raw)
	return err
}

// canonicalMCPURL returns the WHATWG parse of raw after checking that raw
// is an MCP URL the dispatcher can vouch for (ValidMCPURL).
func canonicalMCPURL(raw string) (*whatwg.Url, error) {
	if i := strings.IndexFunc(raw, func(r rune) bool { return r <= ' ' || r == 0x7f }); i >= 0 {
		// WHATWG parsers drop tabs and line breaks and trim spaces: the
		// URL requested would not be the URL checked.
		return nil, fmt.Errorf("must not contain whitespace or control characters (byte %d)", i)
	}
	if strings.Contains(raw, `\`) {
		return nil, fmt.Errorf(`must not contain '\': URL clients read it as '/'`)
	}
	if strings.Contains(raw, "#") {
		return nil, fmt.Errorf("must not have a fragment")
	}
	if err := checkMCPPath(rawPath(raw)); err != nil {
		return nil, err
	}
	u, err := whatwg.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("is not a URL")
	}
	switch {
	case u.Scheme() != "https" && u.Scheme() != "http":
		return nil, fmt.Errorf("must be an https URL")
	case u.Username() != "" || u.Password() != "":
		return nil, fmt.Errorf("must not carry user information; send credentials as headers from a Secret")
	case u.Hostname() == "":
		return nil, fmt.Errorf("must name a host")
	case !mcpHostRE.MatchString(u.Hostname()):
		return nil, fmt.Errorf("host %q must be a DNS name of letters, digits, '-' and '_', or an IP address", u.Hostname())
	}
	if canonical := u.Href(false); canonical != raw {
		return nil, fmt.Errorf("must be written in canonical form: Codex would request %q; send exactly that", canonical)
	}
	// The dispatcher resolves the host it read with net/url: it must be the
	// host Codex connects to.
	g, err := url.Parse(raw)
	sameHost := err == nil && (g.Hostname() == u.Hostname() || "["+g.Hostname()+"]" == u.Hostname())
	if !sameHost || g.Port() != u.Port() {
		return nil, fmt.Errorf("is read differently by URL parsers; write the host and port plainly")
	}
	return u, nil
}

// rawPath is the path of the URL raw as written, before any parser: what
// follows the authority up to the query ("" when raw has no authority or
// no path).
func rawPath(raw string) string {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	i := strings.IndexAny(rest, "/?")
	if i < 0 || rest[i] != '/' {
		return ""
	}
	path, _, _ := strings.Cut(rest[i:], "?")
	return path
}

// checkMCPPath refuses a path (as the turn wrote it) that a client or a
// server may turn into another path.
func checkMCPPath(path string) error {
	for i := 0; i+2 < len(path); i++ {
		if path[i] != '%' {
			continue
		}
		b, err := strconv.ParseUint(path[i+1:i+3], 16, 8)
		switch {
		case err != nil:
		case b == '.' || b == '/' || b == '\\' || b == '%':
			return fmt.Errorf("must not percent-encode %q in its path (%s): clients and servers decode it into another path (.. segments, separators)",
				string(rune(b)), path[i:i+3])
		case b < ' ' || b == 0x7f:
			return fmt.Errorf("must not percent-encode a control character in its path (%s)", path[i:i+3])
		}
	}
	if path == "" {
		return nil
	}
	segs := strings.Split(path[1:], "/")
	for i, seg := range segs {
		// Some servers (Tomcat, Spring) drop ";…" path parameters before
		// they resolve dot segments: "..;" is ".." to them.
		name, _, _ := strings.Cut(seg, ";")
		switch {
		case name == "." || name == "..":
			return fmt.Errorf("must not contain . or .. path segments")
		case seg == "" && i < len(segs)-1:
			// Servers that merge slashes and those that do not see
			// different paths.
			return fmt.Errorf("must not contain empty path segments (//)")
		}
	}
	return nil
}

// ValidMCPURLPrefix checks an entry of an AgentHarness's
// spec.mcp.allowedURLPrefixes: an MCP URL (ValidMCPURL: canonical, so it
// can be compared with a turn's canonical URL as a string) without a query.
func ValidMCPURLPrefix(prefix string) error {
	u, err := canonicalMCPURL(prefix)
	if err != nil {
		return err
	}
	if u.Search() != "" || strings.Contains(prefix, "?") {
		return fmt.Errorf("must not have a query")
	}
	return nil
}

// MCPURLHasPrefix reports whether the MCP URL raw is under prefix, both
// valid (ValidMCPURL, ValidMCPURLPrefix; anything else is false): the same
// scheme, host and port, and a path that is the prefix's or continues it
// at a segment boundary. https://h/tools matches https://h/tools,
// https://h/tools/x and https://h/tools?x, not https://h/toolsx;
// https://h/tools/ matches only what is below it.
func MCPURLHasPrefix(raw, prefix string) bool {
	if ValidMCPURL(raw) != nil || ValidMCPURLPrefix(prefix) != nil {
		return false
	}
	rest, ok := strings.CutPrefix(raw, prefix)
	switch {
	case !ok:
		return false
	case strings.HasSuffix(prefix, "/"), rest == "":
		return true
	}
	return rest[0] == '/' || rest[0] == '?'
}
