package appserver

import (
	"fmt"
	"regexp"

	"github.com/Masterminds/semver/v3"
)

// MinimumVersion is the oldest Codex app-server release the operator
// supports (docs/design/contract-rules.md, rule 7). An AgentHarness's
// minVersion can raise this floor but never lower it.
const MinimumVersion = "0.149.0"

// userAgentVersionRE is OpenClaw's pattern for the version in the userAgent
// of the initialize result: "<clientInfo.name>/<version> (<os>; <arch>) …".
// It assumes a clientInfo.name without "/", which Connect enforces.
var userAgentVersionRE = regexp.MustCompile(`^[^/]+/(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)(?:[\s(]|$)`)

// ParseUserAgentVersion extracts the Codex version from the userAgent of an
// initialize result. It reports false when the userAgent is missing or has
// no version in the expected place.
func ParseUserAgentVersion(userAgent string) (string, bool) {
	m := userAgentVersionRE.FindStringSubmatch(userAgent)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// Floor is the effective version floor for a harness: the newer of
// MinimumVersion and minVersion (empty minVersion means the built-in floor).
func Floor(minVersion string) (*semver.Version, error) {
	floor := semver.MustParse(MinimumVersion)
	if minVersion == "" {
		return floor, nil
	}
	v, err := semver.StrictNewVersion(minVersion)
	if err != nil {
		return nil, fmt.Errorf("appserver: minVersion %q is not a semantic version (x.y.z): %w", minVersion, err)
	}
	if v.GreaterThan(floor) {
		return v, nil
	}
	return floor, nil
}

// VersionError refuses a server that is older than the floor or whose
// version cannot be determined. Its message is the one shown to users.
type VersionError struct {
	// Floor is the effective floor, e.g. "0.149.0".
	Floor string
	// Detected is the version read from the userAgent; empty when it could
	// not be determined.
	Detected string
	// UserAgent is the userAgent the server sent (may be empty).
	UserAgent string
}

// Error implements error.
func (e *VersionError) Error() string {
	if e.Detected == "" {
		return fmt.Sprintf("Codex app-server %s or newer is required, but the running Codex version could not be determined. "+
			"Update the AgentHarness image to a newer Codex release.", e.Floor)
	}
	return fmt.Sprintf("Codex app-server %s or newer is required, but detected %s. "+
		"Update the AgentHarness image to a newer Codex release.", e.Floor, e.Detected)
}

// CheckVersion reads the version from userAgent and checks it against the
// floor for minVersion. It returns the detected version, or a *VersionError
// when the version is missing, unparsable or below the floor (a prerelease
// of the floor, e.g. 0.149.0-alpha.1, is below it). An invalid minVersion is
// reported as a plain error.
func CheckVersion(userAgent, minVersion string) (*semver.Version, error) {
	floor, err := Floor(minVersion)
	if err != nil {
		return nil, err
	}
	raw, ok := ParseUserAgentVersion(userAgent)
	if !ok {
		return nil, &VersionError{Floor: floor.String(), UserAgent: userAgent}
	}
	v, err := semver.StrictNewVersion(raw)
	if err != nil {
		return nil, &VersionError{Floor: floor.String(), UserAgent: userAgent}
	}
	if v.LessThan(floor) {
		return v, &VersionError{Floor: floor.String(), Detected: v.String(), UserAgent: userAgent}
	}
	return v, nil
}
