package toolpolicy

import (
	"slices"
	"testing"
)

func TestValidateCanonicalToolIDs(t *testing.T) {
	tests := []struct {
		name string
		ids  []string
		want []Problem
	}{
		{
			name: "nil is valid",
		},
		{
			name: "canonical core tool ids are valid",
			ids:  codexNative,
		},
		{
			name: "an unknown name is rejected",
			ids:  []string{"exec", "shell"},
			want: []Problem{{Index: 1, Value: "shell", Kind: ProblemUnknown, Message: "not a known core tool id"}},
		},
		{
			name: "bundle-mcp is a profile marker, not a tool id",
			ids:  []string{"bundle-mcp"},
			want: []Problem{{Index: 0, Value: "bundle-mcp", Kind: ProblemUnknown, Message: "not a known core tool id"}},
		},
		{
			name: "the wildcard is rejected",
			ids:  []string{"*"},
			want: []Problem{{Index: 0, Value: "*", Kind: ProblemWildcard, Message: "wildcards are not allowed: list canonical core tool ids"}},
		},
		{
			name: "other wildcards are rejected",
			ids:  []string{"read", "sessions_*"},
			want: []Problem{{Index: 1, Value: "sessions_*", Kind: ProblemWildcard, Message: "wildcards are not allowed: list canonical core tool ids"}},
		},
		{
			name: "known groups are rejected",
			ids:  []string{"group:fs"},
			want: []Problem{{Index: 0, Value: "group:fs", Kind: ProblemGroup, Message: "groups are not allowed: list the member tool ids"}},
		},
		{
			name: "unknown groups are rejected as groups",
			ids:  []string{"group:nope"},
			want: []Problem{{Index: 0, Value: "group:nope", Kind: ProblemGroup, Message: "groups are not allowed: list the member tool ids"}},
		},
		{
			name: "an alias is not canonical",
			ids:  []string{"bash", "apply-patch", "cron"},
			want: []Problem{
				{Index: 0, Value: "bash", Kind: ProblemNotCanonical, Message: `not canonical: use "exec"`},
				{Index: 1, Value: "apply-patch", Kind: ProblemNotCanonical, Message: `not canonical: use "apply_patch"`},
				{Index: 2, Value: "cron", Kind: ProblemNotCanonical, Message: `not canonical: use "automations"`},
			},
		},
		{
			name: "case and surrounding space are not canonical",
			ids:  []string{"Read", " write"},
			want: []Problem{
				{Index: 0, Value: "Read", Kind: ProblemNotCanonical, Message: `not canonical: use "read"`},
				{Index: 1, Value: " write", Kind: ProblemNotCanonical, Message: `not canonical: use "write"`},
			},
		},
		{
			name: "blank entries are rejected",
			ids:  []string{"", "  "},
			want: []Problem{
				{Index: 0, Value: "", Kind: ProblemEmpty, Message: "must not be empty"},
				{Index: 1, Value: "  ", Kind: ProblemEmpty, Message: "must not be empty"},
			},
		},
		{
			name: "duplicates are reported at the later index",
			ids:  []string{"exec", "read", "exec", "exec"},
			want: []Problem{
				{Index: 2, Value: "exec", Kind: ProblemDuplicate, Message: "duplicate of index 0"},
				{Index: 3, Value: "exec", Kind: ProblemDuplicate, Message: "duplicate of index 0"},
			},
		},
		{
			name: "a non-canonical spelling is reported as such, not as a duplicate",
			ids:  []string{"exec", "bash"},
			want: []Problem{{Index: 1, Value: "bash", Kind: ProblemNotCanonical, Message: `not canonical: use "exec"`}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ValidateCanonicalToolIDs(tt.ids)
			if !slices.Equal(got, tt.want) {
				t.Errorf("ValidateCanonicalToolIDs(%q) =\n%+v\nwant\n%+v", tt.ids, got, tt.want)
			}
		})
	}
}

func TestValidateCanonicalToolIDsAcceptsTheWholeCatalog(t *testing.T) {
	if got := ValidateCanonicalToolIDs(CoreToolIDs()); got != nil {
		t.Fatalf("ValidateCanonicalToolIDs(CoreToolIDs()) = %+v, want nil", got)
	}
}
