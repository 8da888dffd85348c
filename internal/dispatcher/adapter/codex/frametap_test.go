package codex

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// frameTap is a connection's transport as a test sees it, so a test can act
// at exact frames instead of at moments: it records the frames the server
// sent, runs a hook on the test's goroutine before a request of a given
// method is written (a hook that blocks holds the request back), and can
// end the connection in place of a frame, which the client then never
// receives.
type frameTap struct {
	appserver.Transport

	mu      sync.Mutex
	frames  []tapFrame
	arrived chan struct{}       // closed and replaced when a frame arrives
	cutAt   func(tapFrame) bool // nil: no cut planned
	before  map[string]func()   // request method → hook, run once
}

// tapFrame is what the tests match in a server frame.
type tapFrame struct {
	Method string `json:"method"`
	Params struct {
		Delta string `json:"delta"`
		Item  struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"item"`
	} `json:"params"`
}

func newFrameTap() *frameTap {
	return &frameTap{arrived: make(chan struct{}), before: map[string]func(){}}
}

// wrap is the rig.connectVia wrapper that puts the tap on a transport.
func (f *frameTap) wrap(tr appserver.Transport) appserver.Transport {
	f.Transport = tr
	return f
}

// cutOn ends the connection in place of the first frame cut matches.
func (f *frameTap) cutOn(cut func(tapFrame) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.cutAt = cut
}

// beforeRequest runs hook before the next request of method is written.
func (f *frameTap) beforeRequest(method string, hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before[method] = hook
}

func (f *frameTap) ReadMessage() ([]byte, error) {
	msg, err := f.Transport.ReadMessage()
	if err != nil {
		return nil, err
	}
	var fr tapFrame
	_ = json.Unmarshal(msg, &fr)
	f.mu.Lock()
	cut := f.cutAt != nil && f.cutAt(fr)
	if cut {
		f.cutAt = nil
	} else {
		f.frames = append(f.frames, fr)
	}
	close(f.arrived)
	f.arrived = make(chan struct{})
	f.mu.Unlock()
	if cut {
		_ = f.Close()
		return nil, errors.New("frameTap: the test cut the connection in place of a frame")
	}
	return msg, nil
}

func (f *frameTap) WriteMessage(ctx context.Context, msg []byte) error {
	var req struct {
		Method string `json:"method"`
	}
	_ = json.Unmarshal(msg, &req)
	f.mu.Lock()
	hook := f.before[req.Method]
	delete(f.before, req.Method)
	f.mu.Unlock()
	if hook != nil {
		hook()
	}
	return f.Transport.WriteMessage(ctx, msg)
}

// waitFrame waits until the client has been handed a frame that match
// accepts.
func (f *frameTap) waitFrame(ctx context.Context, match func(tapFrame) bool) error {
	for seen := 0; ; {
		f.mu.Lock()
		for ; seen < len(f.frames); seen++ {
			if match(f.frames[seen]) {
				f.mu.Unlock()
				return nil
			}
		}
		arrived := f.arrived
		f.mu.Unlock()
		select {
		case <-arrived:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// deltaFrame matches the assistant message delta d.
func deltaFrame(d string) func(tapFrame) bool {
	return func(fr tapFrame) bool {
		return fr.Method == appserver.MethodAgentDelta && fr.Params.Delta == d
	}
}

// completedFrame matches the completion of the assistant message text.
func completedFrame(text string) func(tapFrame) bool {
	return func(fr tapFrame) bool {
		return fr.Method == appserver.MethodItemCompleted && fr.Params.Item.Type == "agentMessage" && fr.Params.Item.Text == text
	}
}
