package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/dispatcher/store"
	"github.com/openclaw/harness-operator/internal/platform/access"
)

// secretValue reads the Secret key ref names in namespace ns for a turn of
// the requester by, after a SubjectAccessReview says by may get that
// Secret: the dispatcher's own right to read Secrets is never lent to a
// requester that lacks it. The value goes into an HTTP header the harness
// sends (an MCP server's header, a model request's bearer token), so a
// line break or NUL is refused. A refusal is its code and message (the
// caller names the field); the value is never logged.
func (e *Engine) secretValue(ctx context.Context, ns string, ref *wire.SecretKeyRef, by store.Requester) (string, wire.ErrorCode, string) {
	user := authenticationv1.UserInfo{Username: by.User, UID: by.UID, Groups: by.Groups}
	if err := access.NewChecker(e.writer).CheckGetSecret(ctx, user, ns, ref.Name); err != nil {
		var denied *access.DeniedError
		if errors.As(err, &denied) {
			return "", wire.CodeForbidden, "the requester may not read this Secret: " + denied.Error()
		}
		e.log.Error(err, "review whether a requester may read a Secret a turn names", "namespace", ns, "secret", ref.Name, "requester", by.User)
		return "", wire.CodeAuthUnavailable, "the dispatcher could not check with the Kubernetes API server whether the requester may read the Secret; retry"
	}
	var secret corev1.Secret
	if err := e.reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref.Name}, &secret); err != nil {
		if apierrors.IsNotFound(err) {
			return "", wire.CodeBadRequest, fmt.Sprintf("Secret %q does not exist in namespace %q", ref.Name, ns)
		}
		if apierrors.IsForbidden(err) {
			// The platform grants the dispatcher Secrets only in its harness
			// namespaces (a Role per entry of the chart's harnessNamespaces):
			// asking again changes nothing until the platform team does.
			return "", wire.CodeForbidden, fmt.Sprintf("the dispatcher may not read Secrets in namespace %q: it reads Secrets "+
				"only in the harness namespaces the platform granted it (the chart's harnessNamespaces), so Secret %q cannot be used here",
				ns, ref.Name)
		}
		e.log.Error(err, "read a Secret a turn names", "namespace", ns, "secret", ref.Name)
		return "", wire.CodeHarnessUnavailable, fmt.Sprintf("Secret %q could not be read; retry", ref.Name)
	}
	v, ok := secret.Data[ref.Key]
	if !ok {
		return "", wire.CodeBadRequest, fmt.Sprintf("Secret %q has no key %q", ref.Name, ref.Key)
	}
	if strings.ContainsAny(string(v), "\r\n\x00") {
		return "", wire.CodeBadRequest, fmt.Sprintf("the value of key %q of Secret %q is not a valid header value (a line break or NUL)", ref.Key, ref.Name)
	}
	return string(v), "", ""
}
