package agentharness

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/openclaw/harness-operator/api/v1alpha1"
)

// loginVerdict judges the login state the handshakes found (nil results:
// none yet), as the LoggedIn condition: any server that would send model
// requests without a credential wins, then an account, then a provider
// with its own key. Codex 0.169.0 ignores OPENAI_API_KEY in the
// environment for a provider that needs the server's login
// (appserver.Login), which is why the message names auth.json.
func loginVerdict(results []*handshakeResult) verdict {
	var account, provider string
	for _, res := range results {
		if res == nil || res.err != nil || res.login == nil {
			continue
		}
		switch l := res.login; {
		case l.LoggedOut():
			return verdict{metav1.ConditionFalse, v1alpha1.HarnessReasonNotLoggedIn, fmt.Sprintf(
				"the app-server %s is not logged in: its model provider authenticates with the server's login (auth.json "+
					"in the native home) and there is none, so model requests would carry no credential. Add a HomeFile "+
					"credential holding auth.json (Codex ignores OPENAI_API_KEY in the environment for this provider); "+
					"until then turns without an authProfile are refused AuthFailed", res.server)}
		case l.Account != nil:
			account = l.Account.Type
		default:
			provider = res.server
		}
	}
	switch {
	case account != "":
		return verdict{metav1.ConditionTrue, v1alpha1.HarnessReasonAccountPresent,
			fmt.Sprintf("the app-server is logged in (account type %s)", account)}
	case provider != "":
		return verdict{metav1.ConditionTrue, v1alpha1.HarnessReasonProviderCredentials,
			"the app-server's model provider authenticates with its own key (env_key); whether it is set shows only in the model's answer (AuthFailed)"}
	}
	return verdict{metav1.ConditionUnknown, v1alpha1.HarnessReasonLoginUnknown,
		"no handshake has read the app-server's login state yet (account/read)"}
}
