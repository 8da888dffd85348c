package codextest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// WriteChatGPTLogin writes codex-home/auth.json under dir (an Options.Dir)
// with a ChatGPT login Codex takes at face value: unsigned tokens for a
// made-up account that expire in a year, refreshed just now, so Codex never
// tries to refresh them. With LoginProviderArgs, Codex then offers what
// only a ChatGPT login gets (its image tool, image_gen.imagegen) and sends
// the stub the made-up access token.
func WriteChatGPTLogin(dir string) error {
	home := filepath.Join(dir, "codex-home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("codextest: %w", err)
	}
	claims := map[string]any{
		"email": "stub@example.invalid",
		"exp":   time.Now().Add(365 * 24 * time.Hour).Unix(),
		"https://api.openai.com/auth": map[string]any{
			"chatgpt_plan_type": "pro", "chatgpt_account_id": "acct-stub", "chatgpt_user_id": "user-stub",
		},
	}
	jwt := unsignedJWT(claims)
	auth := map[string]any{
		"auth_mode":      "chatgpt",
		"OPENAI_API_KEY": nil,
		"tokens":         map[string]any{"id_token": jwt, "access_token": jwt, "refresh_token": "rt-stub", "account_id": "acct-stub"},
		"last_refresh":   time.Now().UTC().Format(time.RFC3339),
	}
	b, err := json.Marshal(auth)
	if err != nil {
		return fmt.Errorf("codextest: %w", err)
	}
	if err := os.WriteFile(filepath.Join(home, "auth.json"), b, 0o600); err != nil {
		return fmt.Errorf("codextest: write auth.json: %w", err)
	}
	return nil
}

func unsignedJWT(claims map[string]any) string {
	b, _ := json.Marshal(claims) // plain values: cannot fail
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"none","typ":"JWT"}`)) + "." + enc(b) + ".unsigned"
}

// LoginProviderArgs are `codex app-server` options that make the stub at
// providerURL a provider that authenticates with the server's login
// (requires_openai_auth, as Codex's built-in openai provider) instead of the
// stub's key: Codex decides what a login allows from the provider's login.
func LoginProviderArgs(providerURL string) []string {
	return []string{"-c", `model_provider="login"`, "-c", fmt.Sprintf(`model_providers.login={name="login",base_url=%q,`+
		`wire_api="responses",requires_openai_auth=true,request_max_retries=0,stream_max_retries=0}`, providerURL)}
}
