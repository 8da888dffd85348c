package toolpolicy

import (
	"fmt"
	"strings"
)

// ProblemKind classifies why an entry of a canonical tool-id list was rejected, so a
// webhook can choose field.Duplicate for duplicates and field.Invalid otherwise.
type ProblemKind string

// Problem kinds reported by ValidateCanonicalToolIDs.
const (
	// ProblemEmpty: the entry is blank.
	ProblemEmpty ProblemKind = "Empty"
	// ProblemWildcard: the entry is or contains "*"; a declaration must name tools.
	ProblemWildcard ProblemKind = "Wildcard"
	// ProblemGroup: the entry is a "group:" name; groups grow with OpenClaw, so a
	// declaration must list member ids to stay audited.
	ProblemGroup ProblemKind = "Group"
	// ProblemNotCanonical: the entry names a core tool but not in canonical form
	// (case, surrounding space or an alias such as "bash").
	ProblemNotCanonical ProblemKind = "NotCanonical"
	// ProblemUnknown: the entry is not a known core tool id.
	ProblemUnknown ProblemKind = "Unknown"
	// ProblemDuplicate: the entry repeats an earlier canonical entry.
	ProblemDuplicate ProblemKind = "Duplicate"
)

// Problem is one rejected entry of a canonical tool-id list.
type Problem struct {
	// Index is the entry's position in the validated slice.
	Index int
	// Value is the entry as given.
	Value string
	// Kind classifies the problem.
	Kind ProblemKind
	// Message is a short, user-facing explanation for a field error.
	Message string
}

// ValidateCanonicalToolIDs checks a list that must hold canonical core tool ids only
// (conversationToolPolicySafeDenyTools, conversationToolPolicyNativeTools). It
// reports at most one problem per index, in index order, and nil when the list is
// valid. Admission is strict where Evaluate is lenient: Evaluate ignores or
// normalizes such entries at run time, but an audited declaration should say
// exactly what it means.
func ValidateCanonicalToolIDs(ids []string) []Problem {
	var problems []Problem
	seen := make(map[string]int, len(ids))
	report := func(i int, kind ProblemKind, format string, args ...any) {
		problems = append(problems, Problem{Index: i, Value: ids[i], Kind: kind, Message: fmt.Sprintf(format, args...)})
	}
	for i, id := range ids {
		n := Normalize(id)
		switch {
		case n == "":
			report(i, ProblemEmpty, "must not be empty")
		case strings.Contains(n, Wildcard):
			report(i, ProblemWildcard, "wildcards are not allowed: list canonical core tool ids")
		case strings.HasPrefix(n, GroupPrefix):
			report(i, ProblemGroup, "groups are not allowed: list the member tool ids")
		case !IsCoreTool(n):
			report(i, ProblemUnknown, "not a known core tool id")
		case n != id:
			report(i, ProblemNotCanonical, "not canonical: use %q", n)
		default:
			if first, dup := seen[id]; dup {
				report(i, ProblemDuplicate, "duplicate of index %d", first)
				continue
			}
			seen[id] = i
		}
	}
	return problems
}
