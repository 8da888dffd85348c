package wire

import (
	"errors"
	"testing"
)

// expectFieldError checks that err refuses an input naming field: a
// *FieldError whose Field is field, so a client can point at what to fix.
// field "" expects no error (the accepted rows of the table tests). It
// returns the refusal's message ("" when there is none) for checks of its
// wording.
func expectFieldError(t *testing.T, err error, field string) string {
	t.Helper()
	if field == "" {
		if err != nil {
			t.Errorf("refused: %v", err)
		}
		return ""
	}
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != field {
		t.Errorf("err = %v, want a *FieldError naming %s", err, field)
		return ""
	}
	return fe.Message
}
