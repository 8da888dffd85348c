package modelgateway

import (
	"encoding/json"
	"testing"
)

// TestBodyModelFastWayAgreesWithTheStrictOne: for valid bodies the walk
// of the top level finds what decoding member by member finds — the
// model, or the same reason — also where a nested object, a string with
// escaped quotes and brackets, or an escaped name could mislead a walk.
func TestBodyModelFastWayAgreesWithTheStrictOne(t *testing.T) {
	for _, body := range []string{
		`{"model":"gpt-5","input":[{"type":"message"}],"stream":true}`,
		` {"input":{"model":"other"},"model":"gpt-5"} `,
		`{"mod\u0065l":"gpt-5"}`,
		`{"input":[]}`,
		`{}`,
		`{"model":"gpt-5","model":"gpt-5-pro"}`,
		`{"model":"gpt-5","Model":"gpt-5-pro"}`,
		`{"MODEL":"gpt-5"}`,
		`{"model":5}`, `{"model":""}`, `{"model":null}`, `{"model":true}`, `{"model":["gpt-5"]}`, `{"model":{"id":"gpt-5"}}`,
		`["model"]`, `"model"`, `5`, `null`,
		`{"text":"a \"model\": \"x\" } ] { [","model":"gpt-5"}`,
		`{"a\"model":"x","model":"gpt-5"}`,
		`{"input":[{"text":"} ] \"model\":\"x\", {"}],"model":"gpt-5"}`,
		`{"input":[{"text":"]}"}],"Model":"gpt-5"}`,
		`{"n":-1.5e3,"t":true,"f":false,"z":null,"model":"gpt-5","after":[1,[2,{"model":"x"}]]}`,
		"{\n\t\"model\"\r\n:\t\"gpt-5\" ,\n\"x\" : {} }\n",
		`{"model":"gpt-\u00e9\n"}`,
		`{"input":"\\","model":"gpt-5"}`,
		`{"mod\u0065L":"gpt-5"}`,
		"{\"model\":\"gpt-5\",\"\xff\":1}",
	} {
		if !json.Valid([]byte(body)) {
			t.Fatalf("%s: not valid JSON; the case is for valid bodies", body)
		}
		fastModel, fastInvalid := validBodyModel([]byte(body))
		model, invalid := bodyModelStrict([]byte(body))
		if fastModel != model || fastInvalid != invalid {
			t.Errorf("%s: the fast way says %q %q, the strict one %q %q", body, fastModel, fastInvalid, model, invalid)
		}
	}
}
