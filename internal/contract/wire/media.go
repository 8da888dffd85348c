package wire

// EventMedia carries the bytes of an artifact the native runtime created
// and persisted itself (NativeMedia), e.g. an image its image tool
// generated. It comes before the turn's result, whose ToolMediaURLs and
// HostOwnedToolMediaURLs name it by its URL.
const EventMedia = "media"

// NativeMediaMaxBytes bounds one native artifact's decoded bytes. A larger
// artifact is not delivered: the turn reports it on the warning stream
// (phase refused) and in its tool result, and no media URL names it.
const NativeMediaMaxBytes = 8 << 20

// NativeMediaScheme prefixes the URL of a native artifact in the result's
// media lists. It names a `media` event of the same turn, not a location:
// a client delivers the event's bytes and never fetches the URL.
const NativeMediaScheme = "native-media:"

// NativeMedia is one native artifact delivered with the stream.
type NativeMedia struct {
	// URL is the name the result's toolMediaUrls and hostOwnedToolMediaUrls
	// give the artifact: NativeMediaScheme followed by CallID.
	URL string `json:"url"`
	// CallID is the native tool call that produced it (its tool_terminal's
	// callId).
	CallID string `json:"callId"`
	// Tool is the canonical tool name, e.g. image_generate.
	Tool string `json:"tool"`
	// MimeType is the type the bytes were recognised as (image/png,
	// image/jpeg, image/webp or image/gif).
	MimeType string `json:"mimeType"`
	// FileName is a file name for the artifact: the call id (letters,
	// digits, '.', '_' and '-' kept) with the type's extension.
	FileName string `json:"fileName"`
	// Size is the number of decoded bytes, at most NativeMediaMaxBytes.
	Size int `json:"size"`
	// Data is the bytes, standard base64.
	Data string `json:"data"`
}
