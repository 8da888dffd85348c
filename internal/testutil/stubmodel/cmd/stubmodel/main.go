// Command stubmodel serves the project's scriptless stub model (package
// internal/testutil/stubmodel) on a TCP address, so that an app-server running in a Pod can
// reach it over the network in the end-to-end suite. Every request gets the
// stub's default replies (DefaultText, the shell tool call for a message that
// starts with stubmodel.ShellDirective, a call of any tool for one that
// starts with stubmodel.ToolDirective, or the echo of a tool's output).
//
// The package's own constructors listen on loopback only; this command is the
// one place it listens on another address, and only inside a container.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/openclaw/harness-operator/internal/testutil/stubmodel"
)

func main() {
	listen := flag.String("listen", "0.0.0.0:8080", "TCP address to serve POST /v1/responses on.")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *listen, func(addr string) { fmt.Fprintln(os.Stderr, "stubmodel: listening on", addr) }); err != nil {
		fmt.Fprintln(os.Stderr, "stubmodel:", err)
		os.Exit(1)
	}
}

// run serves until ctx ends; ready is told the bound address (the port when
// listen asks for port 0).
func run(ctx context.Context, listen string, ready func(addr string)) error {
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", listen, err)
	}
	s := stubmodel.Serve(l)
	ready(s.Addr())
	<-ctx.Done()
	s.Close()
	return nil
}
