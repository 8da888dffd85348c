package codex

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// What a generated image becomes: the media event that delivers it, or the
// reason it is not delivered — decided from the bytes, within the limit.
func TestNativeImage(t *testing.T) {
	png, _ := base64.StdEncoding.DecodeString(onePixelPNG)
	jpeg := base64.StdEncoding.EncodeToString([]byte("\xff\xd8\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"))
	for _, tc := range []struct {
		name, callID, b64 string
		limit             int
		want              *wire.NativeMedia
		err               string
	}{
		{name: "png", callID: "ig_1", b64: onePixelPNG, limit: wire.NativeMediaMaxBytes, want: &wire.NativeMedia{
			URL: "native-media:ig_1", CallID: "ig_1", Tool: "image_generate", MimeType: "image/png",
			FileName: "ig_1.png", Size: len(png), Data: onePixelPNG}},
		{name: "jpeg", callID: "ig_2", b64: jpeg, limit: 100, want: &wire.NativeMedia{
			URL: "native-media:ig_2", CallID: "ig_2", Tool: "image_generate", MimeType: "image/jpeg",
			FileName: "ig_2.jpg", Size: 20, Data: jpeg}},
		{name: "exactly the limit", callID: "ig_3", b64: onePixelPNG, limit: len(png), want: &wire.NativeMedia{
			URL: "native-media:ig_3", CallID: "ig_3", Tool: "image_generate", MimeType: "image/png",
			FileName: "ig_3.png", Size: len(png), Data: onePixelPNG}},
		{name: "a call id that is no file name", callID: "../ig 4/x", b64: onePixelPNG, limit: 1 << 20, want: &wire.NativeMedia{
			URL: "native-media:..%2Fig%204%2Fx", CallID: "../ig 4/x", Tool: "image_generate", MimeType: "image/png",
			FileName: "_ig_4_x.png", Size: len(png), Data: onePixelPNG}},
		{name: "a call id of dots", callID: "..", b64: onePixelPNG, limit: 1 << 20, want: &wire.NativeMedia{
			URL: "native-media:..", CallID: "..", Tool: "image_generate", MimeType: "image/png",
			FileName: "image.png", Size: len(png), Data: onePixelPNG}},
		{name: "one byte over the limit", callID: "ig", b64: onePixelPNG, limit: len(png) - 1,
			err: "the image is 70 bytes, over the 69-byte limit for delivery"},
		{name: "far over the limit, refused before decoding", callID: "ig", b64: strings.Repeat("A", 4000), limit: 100,
			err: "the image is 3000 bytes, over the 100-byte limit for delivery"},
		{name: "no image", callID: "ig", b64: "", limit: 100, err: "the item carries no image"},
		{name: "not base64", callID: "ig", b64: "iVBOR w0K", limit: 100, err: "the image is not standard base64"},
		{name: "not an image", callID: "ig", b64: base64.StdEncoding.EncodeToString([]byte("plain text, no image")), limit: 100,
			err: "the bytes are text/plain; charset=utf-8, not a PNG, JPEG, WebP or GIF image"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := nativeImage(tc.callID, "image_generate", tc.b64, tc.limit)
			if tc.err != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tc.err) || got != nil {
					t.Fatalf("nativeImage = %+v, %v; want the error %q", got, err, tc.err)
				}
				return
			}
			if err != nil || got == nil || *got != *tc.want {
				t.Fatalf("nativeImage = %+v, %v; want %+v", got, err, tc.want)
			}
		})
	}
}

// The image's bytes leave the tool agent_events' raw item: they travel
// once, in the media event.
func TestWithoutImageBytes(t *testing.T) {
	for _, tc := range []struct {
		name, typ, raw, want string
	}{
		{"image", "imageGeneration", `{"id":"ig_1","status":"completed","result":"iVBOR","savedPath":"/x.png"}`,
			`{"id":"ig_1","status":"completed","savedPath":"/x.png"}`},
		{"image without result", "imageGeneration", `{"id":"ig_1","status":"in_progress"}`, `{"id":"ig_1","status":"in_progress"}`},
		{"other item", "webSearch", `{"id":"ws","result":"kept"}`, `{"id":"ws","result":"kept"}`},
		{"not an object", "imageGeneration", `"odd"`, `"odd"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := withoutImageBytes(tc.typ, json.RawMessage(tc.raw)); !sameJSON(got, json.RawMessage(tc.want)) {
				t.Fatalf("withoutImageBytes = %s, want %s", got, tc.want)
			}
		})
	}
}

// How an imageGeneration item is relayed, decided from the item alone: a
// deliverable image is one media event, named in the result's media lists
// and described in the tool result; one that cannot be delivered is a
// warning with the reason instead; neither path (savedPath, a file on the
// app-server) is ever reported as media.
func TestGeneratedImageRelay(t *testing.T) {
	for _, tc := range []struct {
		name, item   string
		media        bool
		warning      string
		resultText   string
		outcome      wire.ToolOutcome
		hostOwnedLen int
	}{
		{name: "an image", item: `{"type":"imageGeneration","id":"ig_1","status":"completed","revisedPrompt":"a dot",
			"result":"` + onePixelPNG + `","savedPath":"/codex-home/generated_images/ig_1.png"}`,
			media: true, resultText: "generated image ig_1.png (image/png, 70 bytes)", outcome: wire.OutcomeSuccess, hostOwnedLen: 1},
		{name: "bytes that are no image", item: `{"type":"imageGeneration","id":"ig_1","status":"completed",
			"result":"` + base64.StdEncoding.EncodeToString([]byte("plain text")) + `","savedPath":"/codex-home/generated_images/ig_1.png"}`,
			warning:    "the generated image is not delivered: the bytes are text/plain; charset=utf-8, not a PNG, JPEG, WebP or GIF image",
			resultText: "generated an image that was not delivered: the bytes are text/plain; charset=utf-8, not a PNG, JPEG, WebP or GIF image",
			outcome:    wire.OutcomeSuccess},
		{name: "no result, only a saved path", item: `{"type":"imageGeneration","id":"ig_1","status":"completed",
			"result":"","savedPath":"/codex-home/generated_images/ig_1.png"}`,
			warning:    "the generated image is not delivered: the item carries no image",
			resultText: "generated an image that was not delivered: the item carries no image", outcome: wire.OutcomeSuccess},
		{name: "a failed generation", item: `{"type":"imageGeneration","id":"ig_1","status":"failed","result":""}`,
			resultText: "", outcome: wire.OutcomeFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			tu := &Turn{items: map[string]*itemState{}, terminals: map[string]bool{}, hooks: rec.hooks()}
			var it appserver.Item
			if err := json.Unmarshal([]byte(tc.item), &it); err != nil {
				t.Fatal(err)
			}
			tu.itemCompleted(it)

			var media []*wire.NativeMedia
			for _, ev := range rec.all() {
				if ev.Type == wire.EventMedia {
					media = append(media, ev.Media)
				}
			}
			if tc.media {
				if len(media) != 1 || media[0].Data != onePixelPNG || media[0].URL != "native-media:ig_1" || media[0].Tool != "image_generate" {
					t.Fatalf("media events %+v, want one with the image", media)
				}
				if !slices.Equal(tu.media, []string{"native-media:ig_1"}) || !slices.Equal(tu.hostMedia, tu.media) {
					t.Fatalf("tool media %v, host-owned %v", tu.media, tu.hostMedia)
				}
			} else if len(media) != 0 || len(tu.media) != 0 || len(tu.hostMedia) != 0 {
				t.Fatalf("media events %+v, tool media %v, host-owned %v: nothing is delivered", media, tu.media, tu.hostMedia)
			}
			var warnings []string
			for _, a := range rec.agent(wire.StreamWarning) {
				warnings = append(warnings, a.Text)
			}
			if tc.warning == "" && len(warnings) != 0 || tc.warning != "" && !slices.Equal(warnings, []string{tc.warning}) {
				t.Fatalf("warnings %q, want %q", warnings, tc.warning)
			}
			for _, a := range rec.agent(wire.StreamTool) {
				if strings.Contains(string(a.Data), `"result"`) {
					t.Fatalf("the tool event's data carries the image: %s", a.Data)
				}
			}
			tr := rec.transcript()
			if len(tr) != 2 || tr[1].Type != wire.RecordToolResult || tr[1].Text != tc.resultText {
				t.Fatalf("transcript %+v, want the tool result %q", tr, tc.resultText)
			}
			if terms := rec.terminals(); len(terms) != 1 || terms[0].Tool != "image_generate" || terms[0].Outcome != tc.outcome ||
				terms[0].NativeMutation == nil || terms[0].NativeMutation.MutatingAction {
				t.Fatalf("terminals %+v", terms)
			}
		})
	}
}
