package codex

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/codexconfig"
	"github.com/openclaw/harness-operator/internal/testutil/codextest"
	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

// imageTool is Codex 0.169.0's image tool as the model sees it: the
// function imagegen in the namespace image_gen, which Codex runs itself
// against its provider's Images API (POST …/images/generations).
const imageTool = "image_gen.imagegen"

// drawCall is the model calling Codex's image tool.
func drawCall(prompt string) stubmodel.Reply {
	return stubmodel.Call(stubmodel.FunctionCall{Namespace: "image_gen", Name: "imagegen", Arguments: `{"prompt":"` + prompt + `"}`})
}

// imageRig is a server whose provider authenticates with the server's
// login, logged in by login (codextest.WriteChatGPTLogin: what Codex needs,
// with image generation on, to offer its image tool), with args.
func imageRig(t *testing.T, login func(dir string) error, args []string) *rig {
	t.Helper()
	codextest.Bin(t)
	dir := t.TempDir()
	if err := login(dir); err != nil {
		t.Fatal(err)
	}
	stub := stubmodel.Start(t)
	r := &rig{stub: stub, srv: codextest.Start(t, codextest.Options{Dir: dir, ProviderURL: stub.BaseURL(),
		ExtraArgs: append(codextest.LoginProviderArgs(stub.BaseURL()), args...)})}
	r.c = r.connect(t)
	return r
}

// The image Codex's tool generated reaches the client as one media event
// with the bytes the Images API returned, named in the result as
// host-owned tool media; a restricted turn on the same server is not
// offered the tool.
func TestGeneratedImageIsDeliveredAsMedia(t *testing.T) {
	t.Parallel()
	r := imageRig(t, codextest.WriteChatGPTLogin, codexconfig.ImageGenerationArgs())
	r.stub.Image("a black dot", onePixelPNG)
	r.stub.When("DRAW-A-DOT", drawCall("a black dot"), stubmodel.Text("Here is the dot."))
	rec := &recorder{}

	res := run(t, r, r.input("DRAW-A-DOT"), rec)

	if got := r.stub.RequestsContaining("DRAW-A-DOT")[0].ToolNames(); !slices.Contains(got, imageTool) {
		t.Fatalf("Codex offered %v, without its image tool", got)
	}
	if got := r.stub.ImageRequests(); len(got) != 1 || got[0].Prompt != "a black dot" {
		t.Fatalf("image requests %+v, want the model's one", got)
	}
	var media []*wire.NativeMedia
	for _, ev := range rec.all() {
		if ev.Type == wire.EventMedia {
			media = append(media, ev.Media)
		}
	}
	if len(media) != 1 || media[0].Data != onePixelPNG || media[0].MimeType != "image/png" || media[0].Tool != "image_generate" {
		t.Fatalf("media events %+v, want the generated image once", media)
	}
	url := media[0].URL
	if !strings.HasPrefix(url, wire.NativeMediaScheme) || !slices.Equal(res.ToolMediaURLs, []string{url}) ||
		!slices.Equal(res.HostOwnedToolMediaURLs, []string{url}) {
		t.Fatalf("toolMediaUrls %v, hostOwnedToolMediaUrls %v; want both [%s]", res.ToolMediaURLs, res.HostOwnedToolMediaURLs, url)
	}
	if terms := rec.terminals(); len(terms) != 1 || terms[0].Tool != "image_generate" || terms[0].CallID != media[0].CallID ||
		terms[0].Outcome != wire.OutcomeSuccess || !terms[0].Native {
		t.Fatalf("terminals %+v", terms)
	}
	for _, a := range rec.agent(wire.StreamTool) {
		if strings.Contains(string(a.Data), onePixelPNG) {
			t.Fatalf("a tool event's data carries the image again: %s", a.Data)
		}
	}
	if !slices.Equal(res.AssistantTexts, []string{"Here is the dot."}) {
		t.Fatalf("assistant texts %q", res.AssistantTexts)
	}

	in := r.input("RESTRICTED-DRAW")
	in.Restricted = true
	r.stub.When("RESTRICTED-DRAW", stubmodel.Text("words only"))
	run(t, r, in, &recorder{})
	if got := r.stub.RequestsContaining("RESTRICTED-DRAW")[0].ToolNames(); slices.Contains(got, imageTool) {
		t.Fatalf("a restricted turn was offered %v", got)
	}
}

// Codex offers its image tool only with the feature on and a ChatGPT login:
// the project's config (feature off) offers none, nor does a server logged
// in with an API key.
func TestImageToolNeedsTheFeatureAndAChatGPTLogin(t *testing.T) {
	t.Parallel()
	t.Run("ChatGPT login, feature off", func(t *testing.T) {
		t.Parallel()
		offersNoImageTool(t, imageRig(t, codextest.WriteChatGPTLogin, nil))
	})
	t.Run("API-key login, feature on", func(t *testing.T) {
		t.Parallel()
		apiKey := func(dir string) error {
			if err := os.MkdirAll(filepath.Join(dir, "codex-home"), 0o700); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "codex-home", "auth.json"), []byte(`{"OPENAI_API_KEY":"sk-from-auth-json"}`), 0o600)
		}
		offersNoImageTool(t, imageRig(t, apiKey, codexconfig.ImageGenerationArgs()))
	})
}

func offersNoImageTool(t *testing.T, r *rig) {
	t.Helper()
	r.stub.When("NO-IMAGES", stubmodel.Text("words only"))
	run(t, r, r.input("NO-IMAGES"), &recorder{})
	if got := r.stub.RequestsContaining("NO-IMAGES")[0].ToolNames(); slices.Contains(got, imageTool) {
		t.Fatalf("Codex offered its image tool: %v", got)
	}
}
