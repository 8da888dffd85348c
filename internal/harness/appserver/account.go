package appserver

import "context"

// MethodAccountRead reads the server's login state.
const MethodAccountRead = "account/read"

// Login is the app-server's login state (account/read, without a token
// refresh, so it never reaches the network).
//
// What Codex 0.169.0 answers (docs/codex-app-server.md, "Model
// authentication"): a model provider with requires_openai_auth (the
// built-in `openai` one) authenticates only with the server's login — an
// auth.json in its home (account type apiKey or chatgpt); OPENAI_API_KEY
// in the environment is not read, and with no account Codex sends model
// requests without credentials. A provider with an env_key reports
// requiresOpenaiAuth false and no account, whether or not the variable is
// set.
type Login struct {
	// RequiresOpenAIAuth says the server's model provider authenticates
	// with the server's login.
	RequiresOpenAIAuth bool `json:"requiresOpenaiAuth"`
	// Account is the login, or nil.
	Account *struct {
		// Type is apiKey, chatgpt, amazonBedrock or gcp.
		Type string `json:"type"`
	} `json:"account"`
}

// LoggedOut reports whether the server's model requests would carry no
// credential: its provider needs the login and there is none.
func (l Login) LoggedOut() bool { return l.RequiresOpenAIAuth && l.Account == nil }

// ReadLogin asks the server for its login state.
func (c *Client) ReadLogin(ctx context.Context) (Login, error) {
	var l Login
	err := c.Call(ctx, MethodAccountRead, map[string]any{}, &l)
	return l, err
}
