// Command wiregen writes the dispatcher API's contract, from the package
// internal/contract/wire (its types, constants and their doc comments), as
// the JSON Schema SchemaPath and the error-code tables of DocsPath. make
// generate-wire runs it from the repository's root, then compiles the
// schema into the OpenClaw plugin's src/wire.ts; a test here fails when a
// committed file differs from what it writes.
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
)

// SchemaPath is the committed schema.
const SchemaPath = "internal/contract/wire/wire.schema.json"

func main() {
	if err := run("."); err != nil {
		fmt.Fprintln(os.Stderr, "wiregen:", err)
		os.Exit(1)
	}
}

func run(root string) error {
	schema, err := Schema(root)
	if err != nil {
		return err
	}
	if err := write(filepath.Join(root, SchemaPath), schema); err != nil {
		return err
	}
	tables, err := ErrorTables(root)
	if err != nil {
		return err
	}
	doc, err := os.ReadFile(filepath.Join(root, DocsPath))
	if err != nil {
		return err
	}
	out, err := splice(string(doc), tables)
	if err != nil {
		return err
	}
	return write(filepath.Join(root, DocsPath), []byte(out))
}

// write leaves an unchanged file alone, so its time stamp says when it last
// changed.
func write(path string, b []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
		return nil
	}
	return os.WriteFile(path, b, 0o644)
}
