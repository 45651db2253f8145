// Command kubelet is the node agent: it reads pod specs from its sources
// and keeps those pods running on a CRI container runtime.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/klog/v2"

	"github.com/seed-kubelet/kubelet/internal/app"
	"github.com/seed-kubelet/kubelet/internal/app/options"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	o, err := options.Parse(args)
	switch {
	case errors.Is(err, options.ErrHelp):
		fmt.Fprint(os.Stdout, options.Usage())
		return 0
	case errors.Is(err, options.ErrVersion):
		fmt.Fprintln(os.Stdout, o.VersionText())
		return 0
	case err != nil:
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		return 1
	}
	if err := options.ApplyLogging(o.Config); err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		return 1
	}
	for _, w := range o.Warnings {
		klog.InfoS("Warning: " + w)
	}
	if err := options.Validate(o); err != nil {
		fmt.Fprintf(os.Stderr, "kubelet: %v\n", err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if err := app.Run(ctx, o); err != nil {
		klog.ErrorS(err, "Kubelet stopped")
		klog.Flush()
		return 1
	}
	klog.Flush()
	return 0
}
