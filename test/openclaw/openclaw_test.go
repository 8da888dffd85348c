//go:build e2e

package openclaw

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

const (
	// pluginID is the plugin's id (clients/openclaw/openclaw.plugin.json)
	// and the one harness id it registers.
	pluginID = "harness-operator"
	// model is the model OpenClaw's turns use and the suite's sessions name;
	// OpenClaw's config pins it to the plugin's harness.
	model = "openai/gpt-5.5"
	// embeddedModel is pinned to OpenClaw's own embedded runtime.
	embeddedModel = "openai/gpt-5.4"
	// turnTimeout bounds one `openclaw agent` run (about 10 s on 2 cores).
	turnTimeout = 3 * time.Minute
)

// openClaw runs the published OpenClaw CLI with the plugin loaded, in a
// HOME of its own.
type openClaw struct {
	tools    string // hack/setup-openclaw.sh's directory
	tarball  string // the plugin's package (packPlugin)
	home     string // HOME and OPENCLAW_HOME
	identity gatewayIdentity
	// config is OPENCLAW_CONFIG_PATH when set; OpenClaw's default
	// ($HOME/.openclaw/openclaw.json) otherwise.
	config string
	// served is the long-lived gateway running OpenClaw's default config
	// (serve): turns go through it. A copy with a config of its own runs
	// its turns with `agent --local`.
	served *servedGateway
}

// packPlugin builds the plugin (clients/openclaw) and packs it into a
// tarball in dir, as a gateway's operator gets it. It builds a copy of the
// plugin's sources (everything but its build output and its link to the
// cached tools), so that `make test-openclaw`, which builds into
// clients/openclaw/dist, can run beside this suite. It needs nothing of the
// cluster: the suite runs it while the cluster starts, so it returns its
// error rather than failing the spec from another goroutine.
func packPlugin(tools, dir string) (string, error) {
	plugin := filepath.Join(dir, "plugin")
	if err := copyPluginSources(filepath.Join(repoRoot, "clients", "openclaw"), plugin); err != nil {
		return "", err
	}
	// What scripts/link-tools.sh does in the repository: the compiler and
	// OpenClaw's SDK types from the cached tools.
	if err := os.Symlink(filepath.Join(tools, "node_modules"), filepath.Join(plugin, "node_modules")); err != nil {
		return "", err
	}
	env := append(os.Environ(), "PATH="+filepath.Join(tools, "bin")+string(os.PathListSeparator)+os.Getenv("PATH"))
	tsc := filepath.Join(tools, "bin", "tsc")
	for _, args := range [][]string{{tsc, "-p", "tsconfig.json"}, {"npm", "pack", "--pack-destination", dir}} {
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir = plugin
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			return "", fmt.Errorf("%s in a copy of clients/openclaw: %w\n%s", strings.Join(append([]string{filepath.Base(args[0])}, args[1:]...), " "), err, out)
		}
	}
	tarballs, err := filepath.Glob(filepath.Join(dir, "*.tgz"))
	if err == nil && len(tarballs) != 1 {
		err = fmt.Errorf("npm pack made %v, want one tarball", tarballs)
	}
	if err != nil {
		return "", err
	}
	return tarballs[0], nil
}

// copyPluginSources copies the plugin's directory from src to dst without
// its build output (dist), its link to the tools (node_modules) and packed
// tarballs: what clients/openclaw/.gitignore leaves out.
func copyPluginSources(src, dst string) error {
	return filepath.WalkDir(src, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if rel == "dist" || rel == "node_modules" || strings.HasSuffix(rel, ".tgz") {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("copy the plugin's sources: %s is not a regular file", path)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
}

// newOpenClaw installs the plugin's tarball (packPlugin) and writes
// OpenClaw's config: the plugin configured against the cluster's
// dispatcher and API server with the gateway's identity (supports() then
// predicts from the cluster's registry), OpenAI's models pinned to its
// harness, and the openai provider (with a dummy key OpenClaw insists on)
// on the stub model, so that a turn OpenClaw ran itself would reach it;
// embeddedModel runs on OpenClaw's own runtime and is the configured
// fallback of model.
func newOpenClaw(tools, tarball, modelURL string, c *devCluster, id gatewayIdentity) *openClaw {
	GinkgoHelper()
	o := &openClaw{tools: tools, tarball: tarball, home: GinkgoT().TempDir(), identity: id}
	testPluginIDs, testPluginPaths := testPlugins()
	config := map[string]any{
		// Debug level: the plugin logs the route facts OpenClaw hands its
		// supports() (routefacts_test.go reads them).
		"logging": map[string]any{"level": "debug", "file": o.logPath()},
		"plugins": map[string]any{
			"allow": append([]string{pluginID}, testPluginIDs...),
			"load":  map[string]any{"paths": testPluginPaths},
			"entries": map[string]any{pluginID: map[string]any{
				"enabled": true,
				"config": map[string]any{
					"dispatcherUrl": c.dispatcher,
					"caFile":        c.caFile,
					"tokenFile":     id.dispatcherToken,
					"namespace":     agentsNS,
					"kubernetes": map[string]any{
						"server": id.apiServer, "caFile": id.apiCA, "tokenFile": id.apiToken,
					},
				},
			}},
		},
		"models": map[string]any{
			// OpenClaw refreshes its model catalog from its own host at a
			// gateway's start, OPENCLAW_OFFLINE=1 or not; in the suite's
			// network namespace that lookup fails. Off, as in any gateway
			// without a way out.
			"catalogRefresh": map[string]any{"enabled": false},
			"providers": map[string]any{"openai": map[string]any{
				"baseUrl": modelURL, "apiKey": "not-a-key", "models": []any{},
			}},
		},
		"agents": map[string]any{"defaults": map[string]any{
			// A fallback on OpenClaw's own runtime: only the plugin's refusal
			// without scope keeps OpenClaw from running the turn there.
			"model": map[string]any{"primary": model, "fallbacks": []string{embeddedModel}},
			// No utility model: a gateway's background tasks (its sessions'
			// activity recaps) would send the stub model requests that
			// carry a turn's prompt, beside the turn's own.
			"utilityModel": "",
			"models": map[string]any{
				model:         map[string]any{"agentRuntime": map[string]any{"id": pluginID}},
				staleModel:    map[string]any{"agentRuntime": map[string]any{"id": pluginID}},
				secondModel:   map[string]any{"agentRuntime": map[string]any{"id": pluginID}},
				embeddedModel: map[string]any{"agentRuntime": map[string]any{"id": "openclaw"}},

				// Outside Codex's catalog: isolated calls run (completion_test.go).
				completionModel: map[string]any{"agentRuntime": map[string]any{"id": pluginID}},
			},
		}},
	}
	for _, id := range testPluginIDs {
		config["plugins"].(map[string]any)["entries"].(map[string]any)[id] = map[string]any{"enabled": true}
	}
	// The completion caller names its completions' model (completion_test.go).
	config["plugins"].(map[string]any)["entries"].(map[string]any)[completionCaller] = completionCallerEntry
	o.install(config)
	return o
}

// testPlugins are the OpenClaw plugins only the suite loads, one directory
// each under test/openclaw/testdata/plugins, named by its plugin id: a
// caller or a middleware a spec needs beside the harness plugin. Each is
// loaded from its path and enabled explicitly (OpenClaw lets only an
// enabled plugin register trusted hooks).
func testPlugins() (ids, paths []string) {
	GinkgoHelper()
	manifests, err := filepath.Glob(filepath.Join(repoRoot, "test", "openclaw", "testdata", "plugins", "*", "openclaw.plugin.json"))
	Expect(err).NotTo(HaveOccurred())
	ids, paths = []string{}, []string{}
	for _, m := range manifests {
		ids = append(ids, filepath.Base(filepath.Dir(m)))
		paths = append(paths, filepath.Dir(m))
	}
	return ids, paths
}

// install writes config as OpenClaw's default config in o's HOME and
// installs the plugin there from its tarball, as a gateway installs it
// (README "Use from OpenClaw"): OpenClaw 2026.9.6 trusts an installed
// plugin with its plugin state store (the transcript marker), not one
// loaded from a config path ("openKeyedStore is only available for trusted
// plugins").
func (o *openClaw) install(config map[string]any) {
	GinkgoHelper()
	b, err := json.MarshalIndent(config, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	Expect(os.MkdirAll(filepath.Join(o.home, ".openclaw"), 0o700)).To(Succeed())
	Expect(os.WriteFile(o.configPath(), b, 0o600)).To(Succeed())
	install := exec.Command(filepath.Join(o.tools, "bin", "openclaw"), "plugins", "install", "--force", "--accept-capabilities", o.tarball)
	install.Dir = o.home
	install.Env = o.environ()
	out, err := install.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "openclaw plugins install:\n%s", out)
}

func (o *openClaw) configPath() string {
	if o.config != "" {
		return o.config
	}
	return filepath.Join(o.home, ".openclaw", "openclaw.json")
}

// withKubernetes is the same gateway (its HOME, the installed plugin) with
// a config of its own whose plugin reads the Kubernetes API at server.
func (o *openClaw) withKubernetes(server, caFile string) *openClaw {
	GinkgoHelper()
	b, err := os.ReadFile(o.configPath())
	Expect(err).NotTo(HaveOccurred())
	var cfg map[string]any
	Expect(json.Unmarshal(b, &cfg)).To(Succeed())
	entry := cfg["plugins"].(map[string]any)["entries"].(map[string]any)[pluginID].(map[string]any)
	kube := entry["config"].(map[string]any)["kubernetes"].(map[string]any)
	kube["server"], kube["caFile"] = server, caFile
	b, err = json.MarshalIndent(cfg, "", "  ")
	Expect(err).NotTo(HaveOccurred())
	other := *o
	other.config = filepath.Join(GinkgoT().TempDir(), "openclaw.json")
	Expect(os.WriteFile(other.config, b, 0o600)).To(Succeed())
	return &other
}

func (o *openClaw) logPath() string { return filepath.Join(o.home, "openclaw.log") }

// agentRun is one finished `openclaw agent` run.
type agentRun struct {
	command        string // as a shell line, for the record
	exit           int
	stdout, stderr string
	// gateway is what the long-lived gateway printed while the run lasted
	// (its console: the agent runner's warnings go there, not to the
	// client); empty for `agent --local`. Concurrent runs share it.
	gateway string
	// served and logged let console read the gateway's output again: it
	// may print a run's lines after the client has its answer.
	served *servedGateway
	logged int64
}

// console is the run's output with everything the gateway printed since
// the run began, read now: a spec polls it (Eventually) for a line the
// gateway prints.
func (r agentRun) console() string {
	if r.served == nil {
		return r.output()
	}
	return r.stdout + r.stderr + r.served.logSince(r.logged)
}

func (r agentRun) String() string {
	s := "$ " + r.command + "\nexit " + strconv.Itoa(r.exit) + "\n--- stdout\n" + r.stdout + "\n--- stderr\n" + r.stderr
	if r.gateway != "" {
		s += "\n--- the gateway meanwhile\n" + r.gateway
	}
	return s
}

// output is everything the run and the gateway serving it printed.
func (r agentRun) output() string { return r.stdout + r.stderr + r.gateway }

// turn runs one agent turn headlessly with the session id and key given (so
// the test knows the AgentSession in advance) and --json (and extra, e.g.
// --model), in the quiet environment OpenClaw documents, with nothing of
// the test's own environment but PATH: through the long-lived gateway with
// OpenClaw's own client (`openclaw agent`) when o is served, else
// `openclaw agent --local`.
func (o *openClaw) turn(ctx context.Context, sessionID, sessionKey, message string, extra ...string) agentRun {
	GinkgoHelper()
	ctx, cancel := context.WithTimeout(ctx, turnTimeout)
	defer cancel()
	args := []string{"agent", "--session-id", sessionID, "--session-key", sessionKey, "--message", message, "--json"}
	dir, env := o.home, o.environ()
	gw := o.served
	if o.config != "" {
		gw = nil // a config of its own: not the one the gateway serves
	}
	var logged int64
	if gw != nil {
		dir, env = gw.client.home, gw.client.environ()
		logged = gw.logSize()
	} else {
		args = slices.Insert(args, 1, "--local")
	}
	args = append(args, extra...)
	cmd := exec.CommandContext(ctx, filepath.Join(o.tools, "bin", "openclaw"), args...)
	cmd.Env = env
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := agentRun{
		command: strings.Join(append(env[3:], "HOME=$TMP OPENCLAW_HOME=$TMP openclaw"), " ") + " " + shellQuote(args),
		stdout:  stdout.String(),
		stderr:  stderr.String(),
	}
	if gw != nil {
		r.gateway, r.served, r.logged = gw.logSince(logged), gw, logged
	}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ctx.Err() == nil:
		r.exit = ee.ExitCode()
	default:
		Fail("openclaw agent did not finish: " + err.Error() + "\n" + r.String())
	}
	reporting.Lock() // specs run turns from goroutines too
	AddReportEntry("openclaw agent", r.String())
	reporting.Unlock()
	return r
}

// reporting serializes report entries added from concurrent turns.
var reporting sync.Mutex

// environ is OpenClaw's quiet environment: its HOME, offline, nothing of
// the test's own environment but PATH (the cached Node first).
func (o *openClaw) environ() []string {
	env := []string{
		"PATH=" + filepath.Join(o.tools, "bin") + string(os.PathListSeparator) + os.Getenv("PATH"),
		"HOME=" + o.home,
		"OPENCLAW_HOME=" + o.home,
		"OPENCLAW_OFFLINE=1",
		"OPENCLAW_NO_AUTO_UPDATE=1",
		"OPENCLAW_DISABLE_BONJOUR=1",
	}
	if o.config != "" {
		env = append(env, "OPENCLAW_CONFIG_PATH="+o.config)
	}
	return env
}

// result is the part of `openclaw agent --json`'s output the specs read:
// the whole output of `--local`, the gateway's answer's `result` otherwise.
type result struct {
	Payloads []struct {
		Text      string   `json:"text"`
		MediaURL  string   `json:"mediaUrl"`
		MediaURLs []string `json:"mediaUrls"`
	} `json:"payloads"`
	Meta struct {
		AgentMeta struct {
			AgentHarnessID string `json:"agentHarnessId"`
		} `json:"agentMeta"`
	} `json:"meta"`
}

func (r agentRun) result() result {
	GinkgoHelper()
	var answer struct {
		Result *result `json:"result"`
	}
	Expect(json.Unmarshal([]byte(r.stdout), &answer)).To(Succeed(), "openclaw's --json output:\n%s", r)
	if answer.Result != nil {
		return *answer.Result
	}
	var res result
	Expect(json.Unmarshal([]byte(r.stdout), &res)).To(Succeed(), "openclaw's --json output:\n%s", r)
	return res
}

func shellQuote(args []string) string {
	out := make([]string, len(args))
	for i, a := range args {
		if a == "" || strings.ContainsAny(a, " \t\"'$\\*?") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		out[i] = a
	}
	return strings.Join(out, " ")
}

// texts are the reply payloads' texts.
func (r result) texts() []string {
	out := make([]string, len(r.Payloads))
	for i, p := range r.Payloads {
		out[i] = p.Text
	}
	return out
}
