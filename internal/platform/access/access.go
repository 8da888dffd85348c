// Package access asks the API server whether a user may do something, by
// creating a SubjectAccessReview in that user's name (username, UID, groups
// and extra, as the API server authenticated them). The operator's
// components act with their own, broader rights on behalf of users: before
// one uses a Secret or creates a workload because a user asked, it checks
// here that the user could have done so themselves.
//
// Every answer other than an explicit "allowed" is a refusal: a review the
// API server cannot answer is an error, which callers treat as a refusal
// (fail closed), never as permission.
package access

import (
	"context"
	"fmt"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Checker creates SubjectAccessReviews. Its client needs `create` on
// `subjectaccessreviews.authorization.k8s.io`.
type Checker struct {
	c client.Client
}

// NewChecker returns a Checker that reviews through c.
func NewChecker(c client.Client) *Checker {
	return &Checker{c: c}
}

// DeniedError is a review the API server answered with "not allowed".
type DeniedError struct {
	// User is the username the review was made for.
	User string
	// Attributes are what the user asked to do.
	Attributes authorizationv1.ResourceAttributes
}

// Error reads like `user "alice" may not get secrets "x" in namespace "team-a"`.
func (e *DeniedError) Error() string {
	a := e.Attributes
	var b strings.Builder
	fmt.Fprintf(&b, "user %q may not %s %s", e.User, a.Verb, resourceName(a))
	if a.Name != "" {
		fmt.Fprintf(&b, " %q", a.Name)
	}
	if a.Namespace != "" {
		fmt.Fprintf(&b, " in namespace %q", a.Namespace)
	}
	return b.String()
}

// resourceName is resource[/subresource][.group], as kubectl names it.
func resourceName(a authorizationv1.ResourceAttributes) string {
	s := a.Resource
	if a.Subresource != "" {
		s += "/" + a.Subresource
	}
	if a.Group != "" {
		s += "." + a.Group
	}
	return s
}

// Check returns nil when user may do what attrs describe, a *DeniedError when
// the API server says no, and another error when the review could not be
// made (callers must refuse then too).
func (c *Checker) Check(ctx context.Context, user authenticationv1.UserInfo, attrs authorizationv1.ResourceAttributes) error {
	extra := make(map[string]authorizationv1.ExtraValue, len(user.Extra))
	for k, v := range user.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		ResourceAttributes: &attrs,
		User:               user.Username,
		UID:                user.UID,
		Groups:             user.Groups,
		Extra:              extra,
	}}
	if err := c.c.Create(ctx, review); err != nil {
		return fmt.Errorf("review whether user %q may %s %s: %w", user.Username, attrs.Verb, resourceName(attrs), err)
	}
	if !review.Status.Allowed || review.Status.Denied {
		return &DeniedError{User: user.Username, Attributes: attrs}
	}
	return nil
}

// CheckGetSecret checks that user may `get` the Secret namespace/name: the
// right a component needs before it reads a Secret a user named.
func (c *Checker) CheckGetSecret(ctx context.Context, user authenticationv1.UserInfo, namespace, name string) error {
	return c.Check(ctx, user, authorizationv1.ResourceAttributes{Namespace: namespace, Verb: "get", Resource: "secrets", Name: name})
}
