package codex

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
)

// imageTypes are the image types a generated image may be delivered as,
// with their file extensions: what OpenClaw's channels send as images.
var imageTypes = map[string]string{
	"image/png":  ".png",
	"image/jpeg": ".jpg",
	"image/webp": ".webp",
	"image/gif":  ".gif",
}

// nativeImage is the media event of the image an imageGeneration item
// carries in its `result` (base64, as the Images API returned it to
// Codex), or why it cannot be delivered: no image, not base64, over limit
// decoded bytes, or not an image type of imageTypes (recognised from the
// bytes, not from a claim).
func nativeImage(callID, tool, b64 string, limit int) (*wire.NativeMedia, error) {
	if b64 == "" {
		return nil, fmt.Errorf("the item carries no image")
	}
	// The decoded size is known before decoding: an oversized image is
	// refused without allocating it.
	if n := decodedLen(b64); n > limit {
		return nil, fmt.Errorf("the image is %d bytes, over the %d-byte limit for delivery", n, limit)
	}
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return nil, fmt.Errorf("the image is not standard base64: %w", err)
	}
	mime := http.DetectContentType(data)
	ext, ok := imageTypes[mime]
	if !ok {
		return nil, fmt.Errorf("the bytes are %s, not a PNG, JPEG, WebP or GIF image", mime)
	}
	return &wire.NativeMedia{
		URL:      wire.NativeMediaScheme + url.PathEscape(callID),
		CallID:   callID,
		Tool:     tool,
		MimeType: mime,
		FileName: fileStem(callID) + ext,
		Size:     len(data),
		Data:     b64,
	}, nil
}

// decodedLen is the number of bytes padded standard base64 decodes to;
// for text that is not, an upper bound (the decoder refuses it anyway).
func decodedLen(b64 string) int {
	n := base64.StdEncoding.DecodedLen(len(b64))
	if len(b64)%4 == 0 {
		switch {
		case strings.HasSuffix(b64, "=="):
			n -= 2
		case strings.HasSuffix(b64, "="):
			n--
		}
	}
	return n
}

// fileStem is id with only letters, digits, '.', '_' and '-' (others
// become '_'), at most 64 characters, never empty or a dot name.
func fileStem(id string) string {
	var b strings.Builder
	for _, r := range id {
		if b.Len() >= 64 {
			break
		}
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-', r == '.':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	s := strings.TrimLeft(b.String(), ".")
	if s == "" {
		return "image"
	}
	return s
}

// withoutImageBytes is an imageGeneration item's raw JSON without its
// `result`: the bytes travel once, in the media event, and not again in
// the tool agent_events' data. Other items, and JSON that is not an
// object, are returned as they are.
func withoutImageBytes(typ string, raw json.RawMessage) json.RawMessage {
	if typ != "imageGeneration" {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m["result"]; !ok {
		return raw
	}
	delete(m, "result")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}
