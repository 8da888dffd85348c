package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// DocsPath is the page whose error-code tables the generator writes.
const DocsPath = "docs/dispatcher-api.md"

const (
	beginMarker = "<!-- BEGIN GENERATED: error codes (make generate-wire) -->"
	endMarker   = "<!-- END GENERATED -->"
)

// ErrorTables are the docs' two error-code tables, the turn's codes and
// the API's own: each code's status and retryability from the code table,
// its "When" from its constant's doc comment, in declaration order.
func ErrorTables(root string) (string, error) {
	src, err := readSources(root)
	if err != nil {
		return "", err
	}
	codes := src.typed(wirePkg, "ErrorCode")
	var turn, api strings.Builder
	for _, c := range codes {
		code := wire.ErrorCode(c.value)
		when := c.summary()
		if when == "" {
			return "", fmt.Errorf("%s has no doc comment: it is the docs' \"When\"", c.name)
		}
		if strings.Contains(when, "|") {
			return "", fmt.Errorf("%s's doc comment has a '|', which would break the table", c.name)
		}
		retry := "no"
		if code.Retryable() {
			retry = "yes"
		}
		row := "| `" + c.value + "` | " + strconv.Itoa(code.HTTPStatus()) + " | " + retry + " | " + when + " |\n"
		if code.IsTurnError() {
			turn.WriteString(row)
		} else {
			api.WriteString(row)
		}
	}
	if len(wire.ErrorCodes()) != strings.Count(turn.String(), "\n") {
		return "", fmt.Errorf("the code table has %d turn codes, the constants %d", len(wire.ErrorCodes()), strings.Count(turn.String(), "\n"))
	}
	const head = "| Code | HTTP | Retryable | When |\n|---|---|---|---|\n"
	return head + turn.String() + "\nThe API's own codes (the same table):\n\n" + head + api.String(), nil
}

// splice replaces what lies between the markers of doc with tables.
func splice(doc, tables string) (string, error) {
	before, rest, ok := strings.Cut(doc, beginMarker+"\n")
	if !ok {
		return "", fmt.Errorf("%s: no line %q", DocsPath, beginMarker)
	}
	_, after, ok := strings.Cut(rest, endMarker+"\n")
	if !ok {
		return "", fmt.Errorf("%s: no line %q after %q", DocsPath, endMarker, beginMarker)
	}
	return before + beginMarker + "\n" + tables + endMarker + "\n" + after, nil
}
