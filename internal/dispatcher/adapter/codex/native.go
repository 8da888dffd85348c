package codex

import (
	"context"
	"errors"
	"fmt"
	"path"

	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// A session's native state on a Codex app-server is its threads and its
// working directory; the threads record their working directory (cwd), so
// the directory names the session's threads too. ForgetSession removes both
// when the session is deleted; ListDirectories lets garbage collection find
// the directories of sessions that no longer exist.

// threadListPage bounds one thread/list page.
const threadListPage = 100

// ForgetSession archives every thread of the app-server whose working
// directory is dir (thread/list filtered by cwd, thread/archive) and then
// removes dir recursively (fs/remove). It returns the archived thread ids.
// It is idempotent: archived threads are not listed again and a missing
// directory is not an error. The directory goes last, so a failure leaves it
// for the next attempt to find.
func ForgetSession(ctx context.Context, c *appserver.Client, dir string) ([]string, error) {
	if !path.IsAbs(dir) || path.Clean(dir) != dir || dir == "/" {
		return nil, fmt.Errorf("codex: forget session: %q is not a clean absolute directory", dir)
	}
	threads, err := threadsIn(ctx, c, dir)
	if err != nil {
		return nil, err
	}
	var archived []string
	for _, id := range threads {
		if err := c.Call(ctx, "thread/archive", map[string]any{"threadId": id}, nil); err != nil {
			return archived, fmt.Errorf("codex: thread/archive %s: %w", id, err)
		}
		archived = append(archived, id)
	}
	if err := c.Call(ctx, "fs/remove", map[string]any{"path": dir, "recursive": true, "force": true}, nil); err != nil {
		return archived, fmt.Errorf("codex: fs/remove %s: %w", dir, err)
	}
	return archived, nil
}

// threadsIn lists the ids of the unarchived threads whose cwd is dir.
func threadsIn(ctx context.Context, c *appserver.Client, dir string) ([]string, error) {
	var ids []string
	// An empty modelProviders lists the threads of every provider; without
	// it Codex lists only its default provider's, and a thread of an auth
	// profile (harness-auth-profile) would never be archived.
	params := map[string]any{"cwd": dir, "archived": false, "limit": threadListPage, "modelProviders": []string{}}
	for {
		var res struct {
			Data []struct {
				ID  string `json:"id"`
				Cwd string `json:"cwd"`
			} `json:"data"`
			NextCursor *string `json:"nextCursor"`
		}
		if err := c.Call(ctx, "thread/list", params, &res); err != nil {
			return nil, fmt.Errorf("codex: thread/list cwd %s: %w", dir, err)
		}
		for _, t := range res.Data {
			if path.Clean(t.Cwd) == dir { // the filter is the server's; check it
				ids = append(ids, t.ID)
			}
		}
		if res.NextCursor == nil || *res.NextCursor == "" || len(res.Data) == 0 {
			return ids, nil
		}
		params["cursor"] = *res.NextCursor
	}
}

// ListDirectories returns the names of the directories directly inside dir
// (fs/readDirectory); a missing dir has none.
func ListDirectories(ctx context.Context, c *appserver.Client, dir string) ([]string, error) {
	var meta struct {
		IsDirectory bool `json:"isDirectory"`
	}
	err := c.Call(ctx, "fs/getMetadata", map[string]any{"path": dir}, &meta)
	var rpcErr *appserver.RPCError
	if errors.As(err, &rpcErr) || err == nil && !meta.IsDirectory {
		return nil, nil // the server answered: no such directory
	}
	if err != nil {
		return nil, fmt.Errorf("codex: fs/getMetadata %s: %w", dir, err)
	}
	var res struct {
		Entries []struct {
			FileName    string `json:"fileName"`
			IsDirectory bool   `json:"isDirectory"`
		} `json:"entries"`
	}
	if err := c.Call(ctx, "fs/readDirectory", map[string]any{"path": dir}, &res); err != nil {
		return nil, fmt.Errorf("codex: fs/readDirectory %s: %w", dir, err)
	}
	var names []string
	for _, e := range res.Entries {
		if e.IsDirectory {
			names = append(names, e.FileName)
		}
	}
	return names, nil
}
