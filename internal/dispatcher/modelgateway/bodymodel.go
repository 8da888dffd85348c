package modelgateway

import (
	"encoding/json"
	"strings"
)

// bodyModel is bodyModelStrict's answer in one validating pass and one
// walk of the top level: every request's body (about 26 KB for a Codex
// first turn) was decoded value by value, twice over, which took a large
// share of the gateway's CPU per request (BenchmarkBodyModel). A body that
// is not valid JSON takes bodyModelStrict, which names what is wrong.
func bodyModel(body []byte) (model, invalid string) {
	if !json.Valid(body) {
		return bodyModelStrict(body)
	}
	return validBodyModel(body)
}

// validBodyModel applies bodyModelStrict's rules to a body json.Valid
// accepted: one value, so its members and their values are well formed
// and only white space follows it.
func validBodyModel(body []byte) (model, invalid string) {
	i := skipSpace(body, 0)
	if body[i] != '{' {
		return "", "it is not a JSON object"
	}
	i++
	seen := false
	for {
		i = skipSpace(body, i)
		switch body[i] {
		case '}':
			if !seen {
				return "", `it has no "model"`
			}
			return model, ""
		case ',':
			i = skipSpace(body, i+1)
		}
		keyEnd := stringEnd(body, i)
		name := memberName(body[i:keyEnd])
		start := skipSpace(body, skipSpace(body, keyEnd)+1) // past the ':'
		end := valueEnd(body, start)
		i = end
		if !strings.EqualFold(name, "model") {
			continue
		}
		if seen {
			return "", `it names "model" more than once`
		}
		seen = true
		if name != "model" || json.Unmarshal(body[start:end], &model) != nil || model == "" {
			return "", `its "model" must be a non-empty string, named in lower case`
		}
	}
}

// memberName decodes a member's name (a JSON string with its quotes).
func memberName(raw []byte) string {
	if !strings.ContainsRune(string(raw), '\\') {
		return strings.ToValidUTF8(string(raw[1:len(raw)-1]), "\uFFFD")
	}
	var name string
	_ = json.Unmarshal(raw, &name) // valid: json.Valid accepted the body
	return name
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// stringEnd is the index after the string starting at b[i] (its '"').
func stringEnd(b []byte, i int) int {
	for j := i + 1; j < len(b); j++ {
		switch b[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(b)
}

// valueEnd is the index after the value starting at b[i].
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		return stringEnd(b, i)
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				j = stringEnd(b, j) - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return len(b)
	}
	j := i
	for j < len(b) && !strings.ContainsRune(",}] \t\r\n", rune(b[j])) {
		j++
	}
	return j
}
