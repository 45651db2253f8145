package pluginwatcher

import (
	"sort"
	"time"
)

// Plan is what a reconcile pass does: sockets to de-register (gone, or
// created again since they were registered) and sockets to register.
type Plan struct {
	Unregister []string
	Register   []string
}

// Reconcile compares the sockets present (desired: path → when it was last
// created) with the sockets registered (actual: path → the creation time
// that was registered) and returns what to do. A socket created again is
// both de-registered and registered, de-registration first. It is pure.
func Reconcile(desired, actual map[string]time.Time) Plan {
	var p Plan
	for path, registeredAt := range actual {
		if created, ok := desired[path]; !ok || !created.Equal(registeredAt) {
			p.Unregister = append(p.Unregister, path)
		}
	}
	for path, created := range desired {
		if registeredAt, ok := actual[path]; !ok || !created.Equal(registeredAt) {
			p.Register = append(p.Register, path)
		}
	}
	sort.Strings(p.Unregister)
	sort.Strings(p.Register)
	return p
}
