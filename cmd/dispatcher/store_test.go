package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/openclaw/harness-operator/internal/testutil"
)

func TestStoreFlagsRefuseEveryBadCombinationNamingTheFlag(t *testing.T) {
	cases := []struct {
		name string
		o    storeOptions
		want string // substring of the error; "" for none
	}{
		{"files, the default", storeOptions{kind: storeFiles, secretKey: defaultPostgresSecretKey}, ""},
		{"postgres with its Secret", storeOptions{kind: storePostgres, secretName: "db-app", secretKey: "uri"}, ""},
		{"postgres without a Secret", storeOptions{kind: storePostgres, secretKey: "uri"}, "--store=postgres needs --postgres-secret-name"},
		{"postgres with an empty key", storeOptions{kind: storePostgres, secretName: "db-app"}, "--postgres-secret-key must not be empty"},
		{"a Secret with the file store", storeOptions{kind: storeFiles, secretName: "db-app", secretKey: "uri"}, `--postgres-secret-name "db-app" is set, but --store is files`},
		{"an unknown store", storeOptions{kind: "sqlite"}, `--store must be files or postgres, got "sqlite"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.o.validate()
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("validate: %v, want nil", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("validate: %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestPostgresOwnerIsThePodName(t *testing.T) {
	env := map[string]string{podNameEnv: "harness-operator-dispatcher-7c9f-abcde"}
	if got, err := podOwner(func(k string) string { return env[k] }); err != nil || got != env[podNameEnv] {
		t.Fatalf("podOwner = %q, %v; want the pod name", got, err)
	}
	if _, err := podOwner(func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "$POD_NAME") {
		t.Fatalf("podOwner without POD_NAME: %v, want an error naming $POD_NAME", err)
	}
}

// secretPassword is the password of the connection strings below: no error
// may carry it.
const secretPassword = "s3cret-Pa55word"

func TestPostgresConnectionStringComesFromItsSecret(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "harness-system")
	c := fake.NewClientBuilder().WithObjects(&corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "harness-system", Name: "db-app"},
		Data:       map[string][]byte{"uri": []byte("postgres://app:" + secretPassword + "@db:5432/app"), "username": []byte("app"), "empty": nil},
	}).Build()
	cases := []struct {
		name, secret, key string
		want              string // substring of the error; "" for none
	}{
		{"the Secret's key", "db-app", "uri", ""},
		{"a Secret that does not exist", "db-other", "uri", `Secret harness-system/db-other (--postgres-secret-name)`},
		{"a key the Secret lacks", "db-app", "url", `has no key "url" (--postgres-secret-key); its keys: [empty uri username]`},
		{"an empty key", "db-app", "empty", `the key "empty" (--postgres-secret-key) of Secret harness-system/db-app (--postgres-secret-name) is empty`},
	}
	for _, c2 := range cases {
		t.Run(c2.name, func(t *testing.T) {
			got, _, err := storeOptions{kind: storePostgres, secretName: c2.secret, secretKey: c2.key}.connString(context.Background(), c, "")
			if c2.want == "" {
				if err != nil || !strings.Contains(got, secretPassword) {
					t.Fatalf("connString = %v, want the Secret's value", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c2.want) {
				t.Fatalf("connString: %v, want an error containing %q", err, c2.want)
			}
			if strings.Contains(err.Error(), secretPassword) {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// TestPostgresStartErrorsNeverShowThePassword opens the store from a Secret
// whose connection string does not parse, and from one whose server does
// not answer: each start fails naming the Secret (and the server, when
// known), and no error carries the password.
func TestPostgresStartErrorsNeverShowThePassword(t *testing.T) {
	t.Setenv("POD_NAMESPACE", "harness-system")
	t.Setenv(podNameEnv, "dispatcher-0")
	// Nobody listens on a leased free port: connecting is refused at once.
	closed, err := testutil.FreePort()
	must(t, err)
	cases := []struct {
		name, uri string
		want      []string
	}{
		// pgx quotes a key=value string it cannot parse, redacting only
		// "password=<value>" without spaces around "=".
		{"key=value that does not parse", "host=db password = " + secretPassword + " port=not-a-port",
			[]string{`key "uri" of Secret harness-system/db-app`, "does not parse"}},
		{"URI that does not parse", "postgres://app:" + secretPassword + "@db:not-a-port/app",
			[]string{"does not parse"}},
		{"unreachable server", fmt.Sprintf("postgres://app:%s@127.0.0.1:%d/app?sslmode=disable&connect_timeout=5", secretPassword, closed),
			[]string{fmt.Sprintf("open the PostgreSQL store at 127.0.0.1:%d (Secret harness-system/db-app", closed)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k8s := fake.NewClientBuilder().WithObjects(&corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: "harness-system", Name: "db-app"},
				Data:       map[string][]byte{"uri": []byte(c.uri)},
			}).Build()
			opts := options{store: storeOptions{kind: storePostgres, secretName: "db-app", secretKey: "uri"}}
			st, err := openStore(context.Background(), k8s, opts, logr.Discard())
			if err == nil {
				st.close()
				t.Fatal("the store opened")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secretPassword) {
				t.Errorf("the error shows the password: %v", err)
			}
		})
	}
}
