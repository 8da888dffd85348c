package openclawconfig

import (
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

// The RuntimePolicy CRD's rules for what the import writes (its CEL rules,
// lengths and list sizes, api/v1alpha1). The import checks them itself so
// that a config the API server would refuse is refused here, naming the
// config path the bad value came from rather than the policy field it became
// (FuzzImport found configs whose printed policy `kubectl apply` refused).
var (
	providerIDRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]*[a-z0-9])?$`)
	runtimeIDRE  = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]*[a-z0-9])?$`)
	agentIDRE    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	modelRefRE   = regexp.MustCompile(`^([a-z0-9]([a-z0-9._-]*[a-z0-9])?/)?[^/*\s]+$|^[a-z0-9]([a-z0-9._-]*[a-z0-9])?/\*$`)
)

// API limits: lengths in characters, as the API server counts them.
const (
	maxProviderID     = 64
	maxRuntimeID      = 63
	maxAgentID        = 128
	maxModelRef       = 192
	maxCatalogModelID = 128
	maxProviders      = 64
	maxProviderModels = 128
	maxModels         = 256
	maxAgents         = 64
	maxAgentModels    = 64
)

// refuse records the first value the API server would refuse; Import
// returns it instead of a policy.
func (imp *importer) refuse(format string, args ...any) {
	if imp.err == nil {
		imp.err = fmt.Errorf(format, args...)
	}
}

func validID(re *regexp.Regexp, id string, max int) bool {
	return re.MatchString(id) && utf8.RuneCountInString(id) <= max
}

func validCatalogModelID(id string) bool {
	return id != "" && utf8.RuneCountInString(id) <= maxCatalogModelID && !strings.ContainsAny(id, "/*") && strings.TrimSpace(id) == id
}

// tooMany refuses a list longer than the API allows.
func (imp *importer) tooMany(path, what string, n, max int) {
	if n > max {
		imp.refuse("%s: %d %s set runtimes; a RuntimePolicy holds at most %d", path, n, what, max)
	}
}
