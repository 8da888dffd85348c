package testutil

import (
	"io"
	"net/http"
	"strings"
)

// Reply is a whole answer of the dispatcher's API.
type Reply struct {
	Status int
	Header http.Header
	Body   []byte
}

// Call sends one request to the dispatcher with o.HTTP: token goes in
// Authorization unless empty, a body is sent as application/json, and hdr
// sets headers (an empty value removes one, e.g. Content-Type).
func (o *Operator) Call(method, url, token, body string, hdr map[string]string) (Reply, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return Reply{}, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		if v == "" {
			req.Header.Del(k)
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := o.HTTP.Do(req)
	if err != nil {
		return Reply{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	return Reply{Status: resp.StatusCode, Header: resp.Header, Body: b}, err
}
