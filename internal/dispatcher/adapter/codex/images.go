package codex

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/openclaw/harness-operator/internal/contract/wire"
	"github.com/openclaw/harness-operator/internal/harness/appserver"
)

// confineImages refuses an images[].path that is not a file inside the
// session's working directory: Codex reads a localImage with the
// app-server's own rights, so without this check a turn could make it read
// any file of the pod (the native home, mounted credentials) and send it to
// the model. The check is lexical after cleaning (`..` cannot climb out),
// then, component by component below the working directory, Codex's own
// fs/getMetadata: a symbolic link anywhere on the way is refused, since the
// adapter cannot resolve it on the app-server's filesystem itself. The
// refusal is a BadRequest naming the field; it never names the working
// directory (a server path).
func confineImages(ctx context.Context, c *appserver.Client, cwd string, images []wire.Image) error {
	root := path.Clean(cwd)
	for i, img := range images {
		if img.Path == "" {
			continue
		}
		refuse := func(why string) error {
			return wire.Errorf(wire.CodeBadRequest, "", "images[%d].path %q %s", i, img.Path, why)
		}
		rel, ok := strings.CutPrefix(path.Clean(img.Path), strings.TrimSuffix(root, "/")+"/")
		if !ok || rel == "" {
			return refuse("must name a file inside the session's working directory")
		}
		cur := root
		for part := range strings.SplitSeq(rel, "/") {
			cur = path.Join(cur, part)
			var md struct {
				IsSymlink bool `json:"isSymlink"`
			}
			err := c.Call(ctx, "fs/getMetadata", map[string]any{"path": cur}, &md)
			var rpc *appserver.RPCError
			switch {
			case errors.As(err, &rpc):
				return refuse("does not name a readable file inside the session's working directory")
			case err != nil:
				return fmt.Errorf("codex: check images[%d].path: %w", i, err)
			case md.IsSymlink:
				return refuse("passes through a symbolic link; it must name a file inside the session's working directory")
			}
		}
	}
	return nil
}
