package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strconv"
	"strings"
)

var (
	errToolListNull = errors.New("must be an array of tool names (omit the field for no allowlist; null is ambiguous)")
	toolListType    = reflect.TypeFor[ToolList]()
	rawMessageType  = reflect.TypeFor[json.RawMessage]()
)

// DecodeStrict decodes exactly one JSON object from r into v, a pointer to a
// struct whose fields are strings, bools, integers, ToolLists, json.RawMessages
// (any JSON value, unchecked), slices, pointers and structs (embedded structs
// are flattened as encoding/json does). Unlike
// encoding/json it refuses, with a *FieldError naming the field path: unknown
// fields (names match exactly), duplicate fields, values of the wrong JSON type,
// null for strings, bools and ToolLists, and anything after the object. A later
// turn request that embeds Attempt decodes with it and then calls Validate.
// It reads r to the end; bound r when it comes from a client.
func DecodeStrict(r io.Reader, v any) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() != reflect.Pointer || rv.IsNil() || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("wire.DecodeStrict: want a non-nil pointer to a struct, got %T", v)
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return fmt.Errorf("read request body: %w", err)
	}
	w := walker{dec: json.NewDecoder(bytes.NewReader(data))}
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax("", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return &FieldError{Message: "must be a JSON object"}
	}
	if err := w.object(rv.Elem().Type(), ""); err != nil {
		return err
	}
	if _, err := w.dec.Token(); err != io.EOF {
		return &FieldError{Message: "unexpected data after the JSON object"}
	}
	if err := json.Unmarshal(data, v); err != nil {
		// The walk above accepted the document, so this is a bug in the walk.
		return &FieldError{Message: "invalid JSON: " + err.Error()}
	}
	return nil
}

// walker checks a JSON token stream against a Go type before encoding/json
// decodes it, so every refusal can name its path. It only descends as deep as
// the type does: a value of the wrong kind is refused at its first token.
type walker struct {
	dec *json.Decoder
}

func (w *walker) syntax(path string, err error) error {
	msg := err.Error()
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		msg = "unexpected end of JSON input"
	}
	return &FieldError{Field: path, Message: "invalid JSON: " + msg}
}

func (w *walker) value(t reflect.Type, path string) error {
	tok, err := w.dec.Token()
	if err != nil {
		return w.syntax(path, err)
	}
	if t == rawMessageType {
		return w.skip(tok, path)
	}
	if tok == nil {
		switch {
		case t == toolListType:
			return &FieldError{Field: path, Message: errToolListNull.Error()}
		case t.Kind() == reflect.Pointer, t.Kind() == reflect.Slice, t.Kind() == reflect.Map:
			return nil // absent
		}
		return &FieldError{Field: path, Message: "must not be null"}
	}
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		if d, ok := tok.(json.Delim); !ok || d != '{' {
			return &FieldError{Field: path, Message: "must be an object"}
		}
		return w.object(t, path)
	case reflect.Map:
		if d, ok := tok.(json.Delim); !ok || d != '{' || t.Key().Kind() != reflect.String {
			return &FieldError{Field: path, Message: "must be an object"}
		}
		return w.members(t.Elem(), path)
	case reflect.Slice:
		if d, ok := tok.(json.Delim); !ok || d != '[' {
			return &FieldError{Field: path, Message: "must be an array"}
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(t.Elem(), path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
		if _, err := w.dec.Token(); err != nil {
			return w.syntax(path, err)
		}
		return nil
	case reflect.String:
		if _, ok := tok.(string); !ok {
			return &FieldError{Field: path, Message: "must be a string"}
		}
		return nil
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			return &FieldError{Field: path, Message: "must be true or false"}
		}
		return nil
	case reflect.Int, reflect.Int32, reflect.Int64, reflect.Uint32, reflect.Uint64:
		n, ok := tok.(float64)
		if !ok || n != math.Trunc(n) {
			return &FieldError{Field: path, Message: "must be a whole number"}
		}
		if n < minInt(t) || n > maxInt(t) {
			return &FieldError{Field: path, Message: fmt.Sprintf("must be a whole number from %.0f to %.0f", minInt(t), maxInt(t))}
		}
		return nil
	}
	return &FieldError{Field: path, Message: "has an unsupported Go type " + t.String()}
}

// object walks the members of an object whose '{' was read.
func (w *walker) object(t reflect.Type, path string) error {
	var seen []string
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return w.syntax(path, err)
		}
		key, _ := tok.(string) // inside an object the decoder yields string keys only
		field := key
		if path != "" {
			field = path + "." + key
		}
		for _, k := range seen {
			if k == key {
				return &FieldError{Field: field, Message: "duplicate field"}
			}
		}
		seen = append(seen, key)
		ft, ok := jsonField(t, key)
		if !ok {
			return &FieldError{Field: field, Message: "unknown field"}
		}
		if err := w.value(ft, field); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return w.syntax(path, err)
	}
	return nil
}

// members walks the members of a map-typed object whose '{' was read: any
// key once, each value of type elem.
func (w *walker) members(elem reflect.Type, path string) error {
	seen := map[string]bool{}
	for w.dec.More() {
		tok, err := w.dec.Token()
		if err != nil {
			return w.syntax(path, err)
		}
		key, _ := tok.(string)
		field := key
		if path != "" {
			field = path + "." + key
		}
		if seen[key] {
			return &FieldError{Field: field, Message: "duplicate field"}
		}
		seen[key] = true
		if err := w.value(elem, field); err != nil {
			return err
		}
	}
	if _, err := w.dec.Token(); err != nil {
		return w.syntax(path, err)
	}
	return nil
}

// jsonField finds the type of the field JSON calls name, looking through
// embedded structs as encoding/json does; names match exactly.
func jsonField(t reflect.Type, name string) (reflect.Type, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			et := f.Type
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				if ft, ok := jsonField(et, name); ok {
					return ft, true
				}
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		if tag == "" {
			tag = f.Name
		}
		if tag == name {
			return f.Type, true
		}
	}
	return nil, false
}

// skip consumes the rest of a value whose first token was tok.
func (w *walker) skip(tok json.Token, path string) error {
	d, ok := tok.(json.Delim)
	if !ok || d == '}' || d == ']' {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.dec.Token()
		if err != nil {
			return w.syntax(path, err)
		}
		if d, ok := t.(json.Delim); ok {
			if d == '{' || d == '[' {
				depth++
			} else {
				depth--
			}
		}
	}
	return nil
}

// minInt and maxInt bound the integers a JSON number may carry into t, within
// the float64 range encoding/json parses numbers into exactly (±2^53).
func minInt(t reflect.Type) float64 {
	switch t.Kind() {
	case reflect.Uint32, reflect.Uint64:
		return 0
	case reflect.Int32:
		return math.MinInt32
	}
	return -(1 << 53)
}

func maxInt(t reflect.Type) float64 {
	switch t.Kind() {
	case reflect.Int32:
		return math.MaxInt32
	case reflect.Uint32:
		return math.MaxUint32
	}
	return 1 << 53
}
