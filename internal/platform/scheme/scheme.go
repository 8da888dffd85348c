// Package scheme builds the runtime.Scheme the binaries and tests share:
// client-go's built-in kinds and the harness.openclaw.dev kinds.
package scheme

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// New returns a scheme with client-go's kinds and the harness kinds.
func New() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add client-go types to scheme: %w", err)
	}
	if err := v1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add harness types to scheme: %w", err)
	}
	return s, nil
}
