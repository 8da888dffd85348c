package wire

import (
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// ToolNameRE is what the model APIs (the Responses API) accept as a function
// name: a host tool's name must match it.
var ToolNameRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// thinkLevels are the thinkLevel values a turn accepts (compared trimmed and
// lowercased); empty and adaptive keep the model's default.
var thinkLevels = []string{"", "adaptive", "off", "minimal", "low", "medium", "high", "xhigh"}

// ValidateInput checks the turn-only fields a runtime is handed, which
// Decide ignores: something to say (a prompt or an image), a known
// thinkLevel, and host tool names the model API accepts. A turn that fails
// it is refused before anything is journaled; the runtime would refuse it
// only after its run began. The error is a *FieldError.
func (r *TurnRequest) ValidateInput() error {
	if strings.TrimSpace(r.Prompt) == "" && len(r.Images) == 0 {
		return &FieldError{Field: "prompt", Message: "a turn needs a prompt or an image"}
	}
	level := strings.ToLower(strings.TrimSpace(r.ThinkLevel))
	found := false
	for _, l := range thinkLevels {
		found = found || l == level
	}
	if !found {
		return &FieldError{Field: "thinkLevel", Message: fmt.Sprintf("%q is not off, minimal, low, medium, high, xhigh or adaptive", r.ThinkLevel)}
	}
	for i, t := range r.Tools {
		if t.Name != "" && !ToolNameRE.MatchString(t.Name) {
			return &FieldError{Field: "tools[" + strconv.Itoa(i) + "].name", Message: fmt.Sprintf("%q must match %s", t.Name, ToolNameRE)}
		}
	}
	return nil
}

// ValidateImages checks images as a runtime takes them: exactly one of url
// (a data:image/… or http(s) URL) and path (absolute), and a detail of auto,
// low, high or original. The error is a *FieldError naming images[i].
func ValidateImages(images []Image) error {
	for i, img := range images {
		field := "images[" + strconv.Itoa(i) + "]"
		switch {
		case (img.URL == "") == (img.Path == ""):
			return &FieldError{Field: field, Message: "exactly one of url and path is required"}
		case img.Path != "" && !path.IsAbs(img.Path):
			return &FieldError{Field: field + ".path", Message: fmt.Sprintf("%q must be an absolute path", img.Path)}
		case img.URL != "" && !strings.HasPrefix(img.URL, "data:image/") &&
			!strings.HasPrefix(img.URL, "https://") && !strings.HasPrefix(img.URL, "http://"):
			return &FieldError{Field: field + ".url", Message: "must be a data:image/… URL or an http(s) URL"}
		}
		switch img.Detail {
		case "", "auto", "low", "high", "original":
		default:
			return &FieldError{Field: field + ".detail", Message: fmt.Sprintf("%q is not auto, low, high or original", img.Detail)}
		}
	}
	return nil
}
