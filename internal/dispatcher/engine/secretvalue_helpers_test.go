package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Helpers of the specs whose turns name Secrets (MCP headers, auth
// profiles): the Secrets, the requester's grant, and the proof that the
// value stayed out of everything the dispatcher writes.

// createSecrets creates, in ns, one Secret per name holding value at key.
func createSecrets(ns, key, value string, names ...string) {
	for _, name := range names {
		Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Data: map[string][]byte{key: []byte(value)}})).To(Succeed())
	}
}

// grantSecretGet lets user get the Secret secret in ns (a Role and its
// RoleBinding, both named role), and nothing else.
func grantSecretGet(ns, role, user, secret string) {
	Expect(k8sClient.Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"secrets"}, ResourceNames: []string{secret}, Verbs: []string{"get"}}},
	})).To(Succeed())
	Expect(k8sClient.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: role},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
		Subjects: []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}},
	})).To(Succeed())
}

// expectSecretValueNowhere asserts that value is in none of the turn's
// events, the session ns/name's status, the dispatcher's logs, the
// journal's files and the files under the suite's app-server's directory
// (its Codex home and the sessions' working directories): the value lives
// only in the app-server's memory.
func expectSecretValueNowhere(value string, evs []event, ns, name string) {
	for _, e := range evs {
		Expect(string(e.Payload)).NotTo(ContainSubstring(value), "event %s", e.Type)
	}
	status, err := json.Marshal(getSession(ns, name).Status)
	Expect(err).NotTo(HaveOccurred())
	Expect(string(status)).NotTo(ContainSubstring(value))
	Expect(logs.all()).NotTo(ContainSubstring(value))
	Expect(filesHolding(jrnlDir, value)).To(BeEmpty(), "journal files hold the secret value")
	Expect(codexSrv.Home).To(HavePrefix(codexSrv.Dir))
	Expect(filesHolding(codexSrv.Dir, value)).To(BeEmpty(), "files of the app-server hold the secret value")
}

// filesHolding lists the files under dir whose content contains value.
func filesHolding(dir, value string) []string {
	GinkgoHelper()
	var found []string
	Expect(filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Contains(string(b), value) {
			found = append(found, p)
		}
		return nil
	})).To(Succeed())
	return found
}
