package appserver

import (
	"context"
	"fmt"
	"slices"
)

// MethodModelList reads a page of the server's model catalog.
const MethodModelList = "model/list"

// Bounds of ListModels: Codex 0.169.0's catalog is 12 models on one page
// (hidden ones included); a server that pages on past these is not
// believed to be a catalog a caller could act on.
const (
	MaxModelPages = 100
	MaxModels     = 1000
)

// Model is one model of the server's catalog (model/list): the models
// Codex has metadata for.
type Model struct {
	// ID is the catalog id; Model is the model name Codex sends (the same
	// as ID in 0.169.0, either may be empty).
	ID    string
	Model string
	// Hidden models are left out of pickers but still get metadata.
	Hidden bool
	// Efforts are the reasoning efforts the catalog advertises.
	Efforts []string
}

// ListModels reads the whole model catalog (model/list with includeHidden,
// every page). A catalog of more than MaxModelPages pages or MaxModels
// models is an error, never a truncated list: callers use the catalog to
// prove a model is NOT in it, which a part of it cannot.
func (c *Client) ListModels(ctx context.Context) ([]Model, error) {
	var out []Model
	cursor := ""
	for range MaxModelPages {
		params := map[string]any{"includeHidden": true}
		if cursor != "" {
			params["cursor"] = cursor
		}
		var res struct {
			Data []struct {
				ID                        string `json:"id"`
				Model                     string `json:"model"`
				Hidden                    bool   `json:"hidden"`
				SupportedReasoningEfforts []struct {
					ReasoningEffort string `json:"reasoningEffort"`
				} `json:"supportedReasoningEfforts"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := c.Call(ctx, MethodModelList, params, &res); err != nil {
			return nil, fmt.Errorf("read the model catalog: %w", err)
		}
		if len(out)+len(res.Data) > MaxModels {
			return nil, fmt.Errorf("read the model catalog: more than %d models", MaxModels)
		}
		for _, m := range res.Data {
			mm := Model{ID: m.ID, Model: m.Model, Hidden: m.Hidden}
			for _, e := range m.SupportedReasoningEfforts {
				mm.Efforts = append(mm.Efforts, e.ReasoningEffort)
			}
			out = append(out, mm)
		}
		if res.NextCursor == nil || *res.NextCursor == "" {
			return out, nil
		}
		cursor = *res.NextCursor
	}
	return nil, fmt.Errorf("read the model catalog: more than %d pages", MaxModelPages)
}

// Names are the names Codex may know the model by: ID and Model, each once,
// empty ones left out.
func (m Model) Names() []string {
	var out []string
	for _, n := range []string{m.ID, m.Model} {
		if n != "" && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}
