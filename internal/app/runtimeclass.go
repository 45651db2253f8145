package app

import (
	"context"

	"github.com/seed-kubelet/kubelet/internal/runtime/kuberuntime"
	"github.com/seed-kubelet/kubelet/internal/runtime/runtimeclass"
)

// runtimeClasses starts the RuntimeClass cache in cluster mode. Standalone
// it returns nil: upstream has no RuntimeClass manager without an API
// server, and runs every pod with the runtime's default handler.
func runtimeClasses(ctx context.Context, b *base) kuberuntime.RuntimeHandlerResolver {
	client := b.apiClient()
	if client == nil {
		return nil
	}
	m := runtimeclass.New(runtimeclass.Config{Client: client.NodeV1()})
	go m.Run(ctx)
	return m
}
