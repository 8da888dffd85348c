package stubmodel

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"time"
)

// ImageRequest is one recorded POST /v1/images/generations: OpenAI's Images
// API, which Codex's own image tool (image_gen.imagegen, offered with its
// image_generation feature on and a ChatGPT login) calls on its provider's
// base URL.
type ImageRequest struct {
	// Prompt and Model are the body's.
	Prompt string `json:"prompt"`
	Model  string `json:"model"`
	// Body is the raw JSON body.
	Body json.RawMessage `json:"-"`
}

type imageScript struct {
	rules    []imageRule
	requests []ImageRequest
}

type imageRule struct {
	marker, b64 string
}

// Image scripts the answer to image requests whose prompt contains marker:
// the image b64 (standard base64), as the Images API's b64_json. Rules are
// tried in the order they were added; a request no rule matches is answered
// 400 with an OpenAI-style error.
func (s *Server) Image(marker, b64 string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.images.rules = append(s.images.rules, imageRule{marker: marker, b64: b64})
}

// ImageRequests returns the image requests received so far, in arrival
// order.
func (s *Server) ImageRequests() []ImageRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]ImageRequest(nil), s.images.requests...)
}

func (s *Server) handleImages(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	var req ImageRequest
	if err == nil {
		err = json.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, "stubmodel: image request: "+err.Error(), http.StatusBadRequest)
		return
	}
	req.Body = body
	s.mu.Lock()
	s.images.requests = append(s.images.requests, req)
	b64 := ""
	for _, rule := range s.images.rules {
		if strings.Contains(req.Prompt, rule.marker) {
			b64 = rule.b64
			break
		}
	}
	s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if b64 == "" {
		w.WriteHeader(http.StatusBadRequest)
		_ = json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{
			"message": "stubmodel: no image is scripted for this prompt", "type": "invalid_request_error", "code": nil, "param": nil,
		}})
		return
	}
	_ = json.NewEncoder(w).Encode(map[string]any{
		"created":       time.Now().Unix(),
		"data":          []any{map[string]any{"b64_json": b64, "revised_prompt": req.Prompt}},
		"output_format": "png",
	})
}
