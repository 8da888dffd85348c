package manifest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name      string
		input     string
		wantKinds []string
		wantErr   string
	}{
		{
			name:      "multi-document YAML keeps document order and skips empty documents",
			input:     "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\n---\napiVersion: v1\nkind: Secret\nmetadata: {name: b}\n",
			wantKinds: []string{"Namespace", "Secret"},
		},
		{
			name:      "JSON object",
			input:     `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`,
			wantKinds: []string{"ConfigMap"},
		},
		{
			name:    "a document without kind names the document",
			input:   "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n",
			wantErr: "in.yaml: document 2: apiVersion and kind are required",
		},
		{
			name:    "malformed YAML is an error naming the source",
			input:   "apiVersion: v1\nkind: [unclosed\n",
			wantErr: "in.yaml: document 1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			objs, err := Decode(strings.NewReader(tt.input), "in.yaml")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			if strings.Join(kinds, ",") != strings.Join(tt.wantKinds, ",") {
				t.Fatalf("kinds = %v, want %v", kinds, tt.wantKinds)
			}
		})
	}
}

func TestReadPathOrdersFilesAndSkipsSubdirectories(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("20_b.yaml", "apiVersion: v1\nkind: Secret\nmetadata: {name: b}\n")
	write("00_a.yml", "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n")
	write("notes.txt", "not a manifest")
	if err := os.Mkdir(filepath.Join(dir, "nested"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "nested", "c.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	objs, err := ReadPath(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range objs {
		names = append(names, o.GetName())
	}
	if strings.Join(names, ",") != "a,b" {
		t.Fatalf("names = %v, want [a b]", names)
	}
	if _, err := ReadPath(filepath.Join(dir, "missing")); err == nil {
		t.Fatal("want an error for a missing path")
	}
}
