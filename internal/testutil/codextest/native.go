package codextest

import (
	"context"
	"errors"
	"fmt"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// NativeState is what an app-server's own API says about a session's thread
// (listed among the archived or the unarchived threads of its working
// directory) and about that directory.
type NativeState struct {
	Archived, Unarchived, DirExists bool
}

// Native asks the app-server of c about threadID and its working directory
// dir: thread/list of dir's archived and unarchived threads, and
// fs/getMetadata of dir.
func Native(ctx context.Context, c *appserver.Client, dir, threadID string) (NativeState, error) {
	var st NativeState
	for _, archived := range []bool{true, false} {
		ids, err := ThreadsIn(ctx, c, dir, archived)
		if err != nil {
			return st, err
		}
		for _, id := range ids {
			if id == threadID {
				st.Archived = st.Archived || archived
				st.Unarchived = st.Unarchived || !archived
			}
		}
	}
	// The server answers a missing path with an error of its own; anything
	// else (a lost connection) is no answer.
	err := c.Call(ctx, "fs/getMetadata", map[string]any{"path": dir}, nil)
	var rpcErr *appserver.RPCError
	if err != nil && !errors.As(err, &rpcErr) {
		return st, fmt.Errorf("fs/getMetadata %s: %w", dir, err)
	}
	st.DirExists = err == nil
	return st, nil
}

// ThreadsIn lists the ids of the threads whose working directory is cwd,
// the archived or the unarchived ones (thread/list).
func ThreadsIn(ctx context.Context, c *appserver.Client, cwd string, archived bool) ([]string, error) {
	var res struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	// Every provider's threads (an empty modelProviders), not only the default's.
	if err := c.Call(ctx, "thread/list", map[string]any{"cwd": cwd, "archived": archived, "modelProviders": []string{}}, &res); err != nil {
		return nil, fmt.Errorf("thread/list %s: %w", cwd, err)
	}
	ids := make([]string, 0, len(res.Data))
	for _, d := range res.Data {
		ids = append(ids, d.ID)
	}
	return ids, nil
}

// ThreadCwd is the working directory the app-server records for a thread
// (thread/read).
func ThreadCwd(ctx context.Context, c *appserver.Client, threadID string) (string, error) {
	var res struct {
		Thread struct {
			Cwd string `json:"cwd"`
		} `json:"thread"`
	}
	if err := c.Call(ctx, "thread/read", map[string]any{"threadId": threadID}, &res); err != nil {
		return "", fmt.Errorf("thread/read %s: %w", threadID, err)
	}
	if res.Thread.Cwd == "" {
		return "", fmt.Errorf("thread/read %s: no cwd", threadID)
	}
	return res.Thread.Cwd, nil
}
